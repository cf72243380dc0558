"""What a memory asserts, for dedup: two near-identical texts that differ in a fact are not duplicates (W2).

Embeddings put "billing is limited to 16 per minute" and "... 27 per minute" above any dedup
threshold, and "refunds are allowed" close to "refunds are not allowed". Merging either pair would
silently lose the new value. So before a near-duplicate is merged, the write gate compares what the
two texts *assert*: their numbers (amounts, times, dates, versions, ids with digits), month and
weekday names, capitalised names, and negations, in English, Japanese and Korean. Any difference
makes the pair a changed fact, never a merge.

A changed fact is a **correction** (the new memory supersedes the old one) only when the two texts
are one statement with a value changed: :func:`restates`, the same words around what differs.
Otherwise they are two memories that sit close. Conversation turns are the case that needs it:
"Joanna: Later, take care!" and "Joanna: Awesome! Enjoy yourself!" sit above the dedup cosine (the
speaker's name, a short text) and differ in capitalised words, but one does not correct the other;
superseding it would hide a turn from recall (37 of LoCoMo dev's 4,431 turns were, one of them
the evidence of a labelled case).

Hand-written on purpose: a dependency-free, deterministic comparison of surface facts is what is
needed here (an NLI model would be slower, need a download, and still not be exact about digits).
A merge that misses a changed value loses data, and so does a supersede of a memory that was not
the same statement (superseded memories are never recalled): each side has its check.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from ..model import MemoryRecord
from ..text import common_ends, stem
from .records import UNDER_BAR_MARGIN, RecordChangeModel, another_record, many_valued, record_margin

__all__ = ["SAME_STATEMENT", "Assertions", "assertions", "changed_fact", "kinship", "one_change", "reordered", "restates", "same_claim"]

_NUMBER = re.compile(r"(?:(?<![0-9A-Za-z.])[-+\u2212\u00b1<>\u2264\u2265]=?\s?)?\d+(?:[.,:/\-]\d+)*")
# a sign or a comparison before a number is part of it: -18 and 18, > 90 and < 90 differ
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


SAME_STATEMENT = 0.8
"""Similarity (difflib's ratio) at or above which two texts are one statement (:func:`restates`).

Measured on the changed-fact pairs the write gate found in the dev sets (``recall-gate add
--dry-run``): SituatedQA's old and new answers to one question, 0.88 and up; LoCoMo's conversation
turns, 0.78 and down (two at 0.98 and 0.995: the same words said again on another day, a
correction of its date); the unit tests' corrections in English, Japanese and Korean, 0.80 and up
("返金は許可する。" / "返金は許可しない。" is the lowest)."""

_MIDDLE_CHARS = 2_000


def _masked(text: str) -> str:
    """The statement of a text: its asserted values masked, its negations removed.

    Numbers become ``#``, month and weekday names ``@``, capitalised names ``N``.
    """

    def word(m: re.Match[str]) -> str:
        w = m.group(0)
        if w.lower() in _CALENDAR:
            return "@"
        return "N" if w[0].isupper() else w.lower()

    t = _NUMBER.sub("#", _normal(text))
    t = _KANJI_NUMBER.sub("#", t)
    t = _WORD.sub(word, _KATAKANA.sub("N", t))
    t = _NEGATION_KO.sub("", _NEGATION_JA.sub("", _NEGATION_EN.sub("", t)))
    return " ".join(t.split())


def _similarity(a: str, b: str, floor: float = 0.0) -> float:
    """The ratio ``2 * matched / (len(a) + len(b))`` of difflib, the common head and tail matched first.

    Middles over 2,000 characters are matched word by word, so the cost stays bounded on memories
    of any length (difflib is quadratic in the worst case). With ``floor``, a pair whose shared
    characters (as a multiset, difflib's ``quick_ratio``) cannot reach it returns that bound,
    below ``floor``, without matching: most neighbours of a note are other notes.
    """
    total = len(a) + len(b)
    if not total:
        return 1.0
    head, tail = common_ends(a, b)
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    if floor > 0.0:
        bound = 2.0 * (head + tail + min(len(a), len(b))) / total
        if bound >= floor:
            bound = 2.0 * (head + tail + (Counter(a) & Counter(b)).total()) / total
        if bound < floor:
            return bound
    if len(a) > _MIDDLE_CHARS or len(b) > _MIDDLE_CHARS:
        wa, wb = a.split(), b.split()
        blocks = SequenceMatcher(None, wa, wb).get_matching_blocks()
        matched = sum(len(w) for blk in blocks for w in wa[blk.a : blk.a + blk.size])
    else:
        matched = sum(blk.size for blk in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())
    return 2.0 * (head + tail + matched) / total


def restates(old: str, new: str) -> bool:
    """Whether two texts are one statement, differing at most in its values (a correction, W2).

    True when the texts, or the texts with their numbers, dates, names and negations masked
    (:func:`_masked`), are at least :data:`SAME_STATEMENT` alike, compared in Unicode NFD so that a
    Korean syllable and its inflected form share their letters ("됩니다" / "되지 않습니다").
    """

    def nfd(s: str) -> str:
        return unicodedata.normalize("NFD", s)

    if _similarity(nfd(_normal(old).lower()), nfd(_normal(new).lower()), SAME_STATEMENT) >= SAME_STATEMENT:
        return True
    return _similarity(nfd(_masked(old)), nfd(_masked(new)), SAME_STATEMENT) >= SAME_STATEMENT


_CLAIM_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+")
_ARTICLES = frozenset({"a", "an", "the"})


def _claim_words(text: str) -> list[str]:
    """Stemmed lower-case words and single CJK characters, articles left out."""
    return [stem(w) for w in _CLAIM_TOKEN.findall(_normal(text).lower()) if w not in _ARTICLES]


def same_claim(old: str, new: str) -> bool:
    """Whether two texts say the same words, up to case, punctuation, articles and inflection.

    The test of a merge besides the same facts: a word replaced, added or left out, or the same
    words in another order, may be another claim: "Use the small model for drafts" / "Use the large
    model for drafts" (cosine 0.94), "prefers tea over coffee" / "prefers coffee over tea" (0.996),
    "due next week" / "due this week" (0.96), "one tablet a day" / "one tablet twice a day", "is
    refundable" / "is non-refundable" assert no different number, date or name, and a merge would
    lose the new one.
    """
    return _claim_words(old) == _claim_words(new)


_MAX_CHANGE_WORDS = 64


def one_change(old: str, new: str) -> bool:
    """Whether the words of two texts differ in one place: a single run replaced, added or left out.

    A correction changes a value ("27 per minute" / "16 per minute", "October 26, 2002" / "October
    21, 2006"); two records of one template differ in several places ("Invoice 2024-001 ... $1,200
    ... March 3" / "Invoice 2024-002 ... $1,500 ... March 10", "Step 1 ... staging" / "Step 2 ...
    production"). The common head and tail are stripped first, and a difference longer than 64
    words is not one change, so the cost stays bounded on memories of any length.
    """
    a, b = _claim_words(old), _claim_words(new)
    head, tail = common_ends(a, b)
    a, b = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(a) + len(b) > _MAX_CHANGE_WORDS:
        return False
    return not any(blk.size for blk in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())


def reordered(old: str, new: str) -> bool:
    """Whether two texts hold the same words in another order ("tea over coffee" / "coffee over tea")."""
    a, b = _claim_words(old), _claim_words(new)
    return a != b and sorted(a) == sorted(b)


def _names_a_value(old: str, new: str) -> bool:
    """Whether what changed is a value that can name a record: a number, a date or a name.

    Not a negation, not an ordinary word: "not allowed", "the large model", "this week" correct the old.
    """
    a, b = assertions(old), assertions(new)
    return a.negations == b.negations and (a.numbers != b.numbers or a.calendar != b.calendar or a.names != b.names)


def kinship(
    old: MemoryRecord, new: MemoryRecord, *, values_only: bool = False, model: RecordChangeModel | None = None
) -> Literal["same", "correction", "beside", "other"]:
    """What a near-duplicate is to a new memory (W2, L1).

    ``same``: their bodies (and titles, when both have one) assert the same facts in the same
    words (:func:`same_claim`) — a merge. ``correction``: one statement with one thing
    changed (:func:`restates` and :func:`one_change`: a value, a word, words added
    or left out) that is the value of a slot, not the name of another record
    (:func:`~shared_core.write.records.another_record`: "My office is room 318" after "... room
    214"), or the same words in another order (:func:`reordered`) — the new memory supersedes the
    old. ``beside``: one statement with several things changed (two invoices, two steps of a
    list), or with one value that names another record ("Order 1042 shipped" after "Order 1041
    shipped") — written beside it, ``changed_fact``. ``other``: other words altogether (two
    conversation turns that share a speaker, a paraphrase) — neither merged nor replaced; a merge
    would risk the new claim, a supersede the old memory.

    ``values_only`` (a neighbour under the dedup bar, read only for corrections): a correction
    must change a value (a number, a date, a name) of a body the record-change model reads
    (English) and that it judges a correction by :data:`~shared_core.write.records.UNDER_BAR_MARGIN`
    ("My manager is Tom." / "... Sarah."; "I speak French." / "... Spanish." is ``beside``, and so
    is a relation of a person's health, family, pets or cards, :func:`~shared_core.write.
    records.many_valued`: "Allergy: Penicillin." / "Allergy: Codeine."); a word changed ("My
    sister lives in Denver" / "My brother ..."), the same words reordered, another title, another
    language or a record named by its number ("Employee 2231 speaks French.") is ``other``.
    ``model``: the record-change model (default: the shipped one; the trainer passes its folds').
    """
    titled = bool(old.title and new.title)
    if values_only:
        # under the dedup bar only one changed value is read (the cheap tests first), and only when
        # the record-change model reads the pair and is sure the value corrects the old one
        if not (_names_a_value(old.body, new.body) and one_change(old.body, new.body)):
            return "other"
        if not restates(old.body, new.body) or (titled and not same_claim(old.title, new.title)):
            return "other"
        if many_valued(old.body, new.body):
            return "beside"  # an allergy, a medication, a child: both may be true
        margin = record_margin(old.body, new.body, model=model)
        if margin is None or margin == -math.inf:
            return "other"  # not read by the model, or a record named by its number: its own path
        return "correction" if margin <= -UNDER_BAR_MARGIN else "beside"
    changed = changed_fact(old.body, new.body) or (titled and changed_fact(old.title, new.title))
    if not changed and same_claim(old.body, new.body) and (not titled or same_claim(old.title, new.title)):
        return "same"
    if restates(old.body, new.body) and (not titled or restates(old.title, new.title)):
        if one_change(old.body, new.body) and (not titled or one_change(old.title, new.title)):
            if not _names_a_value(old.body, new.body):
                return "correction"  # a negation or a word changed (under the bar, sorted out above)
            return "beside" if another_record(old.body, new.body, model=model) else "correction"
        return "beside"
    if reordered(old.body, new.body) or (titled and reordered(old.title, new.title)):
        return "correction"
    return "other"
