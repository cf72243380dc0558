"""The registry of validators and text features that rule files refer to by name, and TOML loading.

Kept apart from the engine so that the modules registering validators import the registry, not
the engine that loads them (no import cycle).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from re import Match
from typing import Any

from ..errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["FEATURES", "VALIDATORS", "Feature", "Validator", "register_validator", "toml_loads"]

Validator = Callable[[Match[str], "int | str"], bool]
"""A check on one match: ``(match, group) -> keep?``; ``group`` is the rule's ``check_group``."""

Feature = Callable[[str, str], bool]
"""A cheap property of a text: ``(text, lowered) -> bool``; rules that need it skip texts without it."""

VALIDATORS: dict[str, Validator] = {}
"""Named validators rules can refer to (filled by the screens' modules; add your own with
:func:`register_validator`)."""

FEATURES: dict[str, Feature] = {}
"""Named text features rules can ask for with ``needs`` (filled by the screens' modules)."""


def register_validator(name: str, fn: Validator) -> None:
    """Make ``fn`` available to rule files as ``validator = "name"``.

    Raises:
        InputError: if ``name`` is empty or already taken by another function.
    """
    if not name or not isinstance(name, str):
        raise InputError("a validator needs a non-empty name")
    if VALIDATORS.get(name, fn) is not fn:
        raise InputError(f"a validator named {name!r} is already registered")
    VALIDATORS[name] = fn


def toml_loads(text: str) -> dict[str, Any]:
    """Parse TOML (``tomllib``; ``tomli`` on Python 3.10)."""
    doc: dict[str, Any] = tomllib.loads(text)
    return doc
