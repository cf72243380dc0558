"""Findings, reports and the one signature every write-side screen has (W4, W5).

A screen is anything with ``scan(text) -> list[Finding]``. A :class:`Finding` says *what* was
found and *where* (character offsets into the scanned text), never the matched text itself:
findings end up in audit records, and the text they point at may be a credential or personal
data. Decisions are data: a screen reports findings, the write policy decides what to do with
them; a screen raises only when it is misused (see :func:`check_text`).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Iterator
from enum import Enum
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import InputError

__all__ = [
    "DEFAULT_MAX_CHARS",
    "Finding",
    "FindingKind",
    "Screen",
    "ScreenReport",
    "Severity",
    "blocks",
    "check_text",
]

DEFAULT_MAX_CHARS = 100_000
"""Longest text a screen accepts by default; longer input raises :class:`InputError`."""

_BLOCK = re.compile(r"(?:(?!\n[^\S\n]*\n)[\s\S])+")


def blocks(text: str) -> Iterator[re.Match[str]]:
    """The runs of ``text`` between blank lines, as matches (``.start()`` is the offset).

    ``screen_fields`` joins a record's fields with a blank line, so each field is a block; the
    PII screen runs Presidio's digit recognizers per block and the semantic screen windows a lone
    Japanese or Korean block on its own.
    """
    return _BLOCK.finditer(text)

FindingKind = Literal["secret", "pii", "injection", "hidden_text"]
"""The closed set of finding kinds."""


class Severity(str, Enum):
    """How bad a finding is; the write policy maps severities to write / quarantine / reject."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @property
    def rank(self) -> int:
        """Order of the severity: ``LOW`` 1, ``MEDIUM`` 2, ``HIGH`` 3."""
        return _RANK[self]


_RANK = {Severity.LOW: 1, Severity.MEDIUM: 2, Severity.HIGH: 3}


class Finding(BaseModel):
    """One thing a screen found: kind, rule, span, severity and confidence; never the text.

    Attributes:
        kind: ``secret``, ``pii``, ``injection`` or ``hidden_text``.
        rule: stable id of the rule or entity that matched (``openai_api_key``,
            ``EMAIL_ADDRESS``, ``instruction_override_ja``, ...).
        start: offset of the first character of the span in the scanned text.
        end: offset one past the last character (``start < end``).
        severity: how bad it is.
        score: confidence in ``[0, 1]``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: FindingKind
    rule: str = Field(min_length=1, max_length=128)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    severity: Severity
    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _ordered(self) -> Finding:
        if self.end <= self.start:
            raise ValueError("end must be after start (a span covers at least one character)")
        return self


class ScreenReport(BaseModel):
    """All findings of the screens run on one text, sorted by position.

    Serialise it (``model_dump_json()``) into audit records freely: it holds no matched text.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    findings: tuple[Finding, ...] = ()

    def of_kind(self, kind: FindingKind) -> tuple[Finding, ...]:
        """Findings of one kind, in order."""
        return tuple(f for f in self.findings if f.kind == kind)

    @property
    def has_secret(self) -> bool:
        """Whether a credential (key, token, password, private key, card number) was found."""
        return any(f.kind == "secret" for f in self.findings)

    @property
    def has_pii(self) -> bool:
        """Whether personal data was found."""
        return any(f.kind == "pii" for f in self.findings)

    @property
    def has_injection(self) -> bool:
        """Whether instructions aimed at the agent, or hidden text, were found."""
        return any(f.kind in ("injection", "hidden_text") for f in self.findings)

    @property
    def has_hidden_text(self) -> bool:
        """Whether invisible characters that can hide instructions were found."""
        return any(f.kind == "hidden_text" for f in self.findings)

    @property
    def max_severity(self) -> Severity | None:
        """The highest severity of any finding, or ``None`` when there is none."""
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=lambda s: s.rank)

    @property
    def rules(self) -> tuple[str, ...]:
        """The distinct rule ids that matched, sorted."""
        return tuple(sorted({f.rule for f in self.findings}))

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> ScreenReport:
        """Build a report from findings in any order (sorted, exact duplicates removed)."""
        return cls(findings=tuple(sorted(set(findings), key=_sort_key)))


def _sort_key(f: Finding) -> tuple[int, int, str, str]:
    return (f.start, f.end, f.kind, f.rule)


@runtime_checkable
class Screen(Protocol):
    """What every screen is: one method from text to findings.

    A user adds a screen of their own by writing a class with this method; ``screen()`` accepts
    any sequence of them.
    """

    def scan(self, text: str) -> list[Finding]:
        """Return the findings in ``text`` (offsets into ``text``)."""
        ...


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: str, *, max_chars: int) -> str:
    """Validate a text for scanning and make it safe for the libraries underneath.

    Lone surrogates (which cannot be encoded as UTF-8) are replaced by U+FFFD one for one, so
    offsets in the returned text are offsets in the input.

    Raises:
        InputError: if ``text`` is not a string or is longer than ``max_chars``.
    """
    if not isinstance(text, str):
        raise InputError(f"text to screen must be a str, not {type(text).__name__}")
    if len(text) > max_chars:
        raise InputError(f"text to screen has {len(text)} characters; the limit is {max_chars}")
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)
    return text


def check_max_chars(max_chars: int) -> int:
    """Validate a ``max_chars`` option.

    Raises:
        InputError: if it is not a positive int.
    """
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars <= 0:
        raise InputError("max_chars must be a positive int")
    return max_chars


def resolve_overlaps(
    findings: Iterable[Finding], *, apart: Callable[[Finding], Hashable] | None = None
) -> list[Finding]:
    """Keep the best of overlapping findings of the same kind.

    Best is highest severity, then highest score, then longest span; a finding that overlaps
    one already kept is dropped. Findings of different kinds never suppress each other, nor do
    findings that ``apart`` puts in different groups (within a kind; e.g. generic order findings
    kept beside specific ones, :class:`~shared_core.screening.injection.InjectionScreen`).
    Kept spans of a group do not overlap, so a new span is checked against its two neighbours
    only (O(n log n)).
    """
    ranked = sorted(findings, key=lambda f: (-f.severity.rank, -f.score, -(f.end - f.start), f.start, f.rule))
    starts: dict[tuple[str, Hashable], list[int]] = {}
    ends: dict[tuple[str, Hashable], list[int]] = {}
    kept: list[Finding] = []
    for f in ranked:
        group = (f.kind, None if apart is None else apart(f))
        ks, ke = starts.setdefault(group, []), ends.setdefault(group, [])
        i = bisect_left(ks, f.start)
        if i > 0 and ke[i - 1] > f.start and f.end > ks[i - 1]:
            continue  # overlaps the kept span starting before it
        if i < len(ks) and ks[i] < f.end and f.start < ke[i]:
            continue  # overlaps the kept span starting at or after it
        ks.insert(i, f.start)
        ke.insert(i, f.end)
        kept.append(f)
    kept.sort(key=_sort_key)
    return kept
