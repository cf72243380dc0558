"""Running screens: :func:`screen` over one text with the default screens (or yours)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from ..errors import InputError
from .findings import Finding, Screen, ScreenReport
from .injection import InjectionScreen
from .pii import PiiScreen
from .secrets import SecretScreen

__all__ = ["default_screens", "screen"]


@lru_cache(maxsize=1)
def default_screens() -> tuple[Screen, ...]:
    """The screens :func:`screen` runs by default: secrets, PII, injection (created once)."""
    return (SecretScreen(), PiiScreen(), InjectionScreen())


def screen(text: str, *, screens: Sequence[Screen] | None = None) -> ScreenReport:
    """Run screens over ``text`` and collect their findings in one report.

    Args:
        text: the text to screen (a memory's title and body, say).
        screens: the screens to run (default :func:`default_screens`); any object with
            ``scan(text) -> list[Finding]`` is a screen. An empty sequence finds nothing.

    Returns:
        A :class:`ScreenReport` with the findings of all screens, sorted by position.

    Raises:
        InputError: if ``text`` is not a str, is longer than a screen's ``max_chars``, or a
            screen is not a screen.
    """
    if not isinstance(text, str):
        raise InputError(f"text to screen must be a str, not {type(text).__name__}")
    chosen = default_screens() if screens is None else tuple(screens)
    findings: list[Finding] = []
    for s in chosen:
        if not callable(getattr(s, "scan", None)):  # the Screen protocol, without its slow isinstance
            raise InputError(f"{type(s).__name__} is not a screen (it has no scan(text) method)")
        findings.extend(s.scan(text))
    return ScreenReport.of(findings)
