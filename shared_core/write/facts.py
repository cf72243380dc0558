"""What a memory asserts, for dedup: two near-identical texts that differ in a fact are not duplicates (W2).

Embeddings put "billing is limited to 16 per minute" and "... 27 per minute" above any dedup
threshold, and "refunds are allowed" close to "refunds are not allowed". Merging either pair would
silently lose the new value. So before a near-duplicate is merged, the write gate compares what the
two texts *assert*: their numbers (amounts, times, dates, versions, ids with digits), month and
weekday names, capitalised names, and negations, in English, Japanese and Korean. Any difference
makes the pair a changed fact (a correction or a new memory), never a merge.

Hand-written on purpose: a dependency-free, deterministic comparison of surface facts is what is
needed here (an NLI model would be slower, need a download, and still not be exact about digits).
Over-sensitivity is cheap (a correction keeps the old memory in history); a miss loses data.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Assertions", "assertions", "changed_fact"]

_NUMBER = re.compile(r"\d+(?:[.,:/\-]\d+)*")
_KANJI_NUMBER = re.compile(r"[〇一二三四五六七八九十百千万億]+")
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
]
_WEEKDAYS = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "fri",
    "sat",
    "sun",
]
_CALENDAR = frozenset(_MONTHS + _WEEKDAYS)
_NEGATION_EN = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|neither|nor|without|cannot|can't|won't|don't|doesn't|didn't|"
    r"isn't|aren't|wasn't|weren't|shouldn't|mustn't|forbidden|prohibited|disallowed|unless)\b|n't\b"
)
_NEGATION_JA = re.compile(r"ない|ません|ず[、。に]|禁止|不可|無効|しないで|できない|なし")
_NEGATION_KO = re.compile(r"않|없|못|안\s|금지|불가|아니")
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_KATAKANA = re.compile(r"[ァ-ヺー]{2,}")


@dataclass(frozen=True, slots=True)
class Assertions:
    """The surface facts of a text: numbers, calendar words, names, and whether it negates."""

    numbers: frozenset[str]
    calendar: frozenset[str]
    names: frozenset[str]
    negations: int


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def assertions(text: str) -> Assertions:
    """Extract the facts :func:`changed_fact` compares."""
    t = _normal(text)
    numbers = {n.replace(",", "") for n in _NUMBER.findall(t)} | set(_KANJI_NUMBER.findall(t))
    words = _WORD.findall(t)
    lower = [w.lower() for w in words]
    calendar = {w for w in lower if w in _CALENDAR}
    names = {w for w in words if w[0].isupper() and w.lower() not in _CALENDAR} | set(_KATAKANA.findall(t))
    low = t.lower()
    negations = len(_NEGATION_EN.findall(low)) + len(_NEGATION_JA.findall(t)) + len(_NEGATION_KO.findall(t))
    return Assertions(frozenset(numbers), frozenset(calendar), frozenset(names), negations)


def changed_fact(old: str, new: str) -> bool:
    """True when two (near-identical) texts assert different numbers, dates, names or negation."""
    a, b = assertions(old), assertions(new)
    return a != b
