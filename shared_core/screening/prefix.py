r"""A first-character guard for rule patterns: the same matches, fewer positions tried (W8).

Python's ``re`` tries a pattern at every position of a text. When the pattern starts with a
literal or a character class it first skips to a position where that character occurs; when it
starts with ``\b``, a lookaround or an alternation whose branches do not all start with a
literal, it runs the pattern's first steps at every position instead. Most injection rules
start that way (``\b(?!my assistant, ...)(?:ai|assistant|bot|...)``), and on 300-600
characters of prose that is about half of their time.

:func:`guarded` prepends a lookahead ``(?=[...])`` holding every character a match can start
with, which the engine tests in one step per position. A match of the original pattern starts
with one of those characters, so the guarded pattern finds exactly the same matches (same spans,
same groups): it is a shortcut, never a filter.

The characters come from the pattern's parse tree as the standard library's own parser builds
it (``sre_parse``, as :mod:`~shared_core.screening.scripts` reads it for the script gates): no
public API gives a pattern's first characters, and a regex parser of our own could disagree
with the dialect it must follow.
Anything the analysis does not know for certain (a category such as ``\w``, a negated class,
a part made case-insensitive inline, inline global flags, a pattern that can match the empty
string, an unknown node) leaves the pattern as it is, and :func:`guarded` checks the parser
against known answers once before it trusts it; if the private module is missing or has
changed shape, every pattern runs unguarded and nothing else changes.
"""

from __future__ import annotations

import re
from functools import lru_cache
from re import Pattern
from typing import Any

from . import scripts as _scripts

__all__ = ["first_chars", "guarded"]

_P: Any = getattr(_scripts, "_sre_parse", None)  # None on a Python without it: no pattern is guarded
_C: Any = getattr(_scripts, "_sre_constants", None)

_Ranges = set[tuple[int, int]]


class _Unknown(Exception):
    """The analysis cannot say which characters start a match."""


def _seq(items: Any) -> tuple[_Ranges, bool]:
    """First characters of a sequence of nodes, and whether it can match the empty string."""
    out: _Ranges = set()
    for op, av in items:
        chars, empty = _node(op, av)
        out |= chars
        if not empty:
            return out, False
    return out, True


def _node(op: Any, av: Any) -> tuple[_Ranges, bool]:
    if op is _C.LITERAL:
        return {(av, av)}, False
    if op is _C.IN:
        out: _Ranges = set()
        for kind, value in av:
            if kind is _C.LITERAL:
                out.add((value, value))
            elif kind is _C.RANGE:
                out.add((value[0], value[1]))
            else:  # NEGATE, CATEGORY (\w, \s, \d), anything else
                raise _Unknown
        return out, False
    if op is _C.AT or op is _C.ASSERT or op is _C.ASSERT_NOT:
        return set(), True  # zero-width: the next node consumes the first character
    if op is _C.SUBPATTERN:
        _group, add_flags, _del_flags, sub = av
        if add_flags & (re.IGNORECASE | re.LOCALE | re.ASCII | re.UNICODE):
            raise _Unknown  # the part folds case (or classes) otherwise than the guard would
        return _seq(sub)
    if op is _C.BRANCH:
        chars: _Ranges = set()
        empty = False
        for alternative in av[1]:
            c, e = _seq(alternative)
            chars |= c
            empty = empty or e
        return chars, empty
    if op is _C.MAX_REPEAT or op is _C.MIN_REPEAT or op is getattr(_C, "POSSESSIVE_REPEAT", _C.MAX_REPEAT):
        low, high, sub = av
        if high == 0:
            return set(), True
        c, e = _seq(sub)
        return c, e or low == 0
    if op is getattr(_C, "ATOMIC_GROUP", None):
        return _seq(av)
    raise _Unknown  # ANY, NOT_LITERAL, GROUPREF, GROUPREF_EXISTS, CATEGORY, ...


def _fast_start(items: Any) -> bool:
    """Whether ``re`` already skips ahead to a first character.

    That is when the pattern starts with a literal, a character class, or an alternation whose
    branches all start with a literal (what ``re._compiler`` turns into a prefix or a charset).
    """
    while items:
        op, av = items[0]
        if op is _C.SUBPATTERN and av[0] is None and not av[1] and not av[2]:
            items = av[3]
            continue
        if op is _C.LITERAL or op is _C.IN:
            return True
        if op is _C.BRANCH:
            return all(alt and alt[0][0] is _C.LITERAL for alt in av[1])
        return False
    return False


def first_chars(pattern: Pattern[str]) -> str | None:
    """The characters every match of ``pattern`` starts with, as a class such as ``"[a-c]"``.

    ``None`` when that is not known for certain (see the module's docstring).
    """
    return _analyse(pattern)[0]


def _analyse(pattern: Pattern[str]) -> tuple[str | None, bool]:
    """``(first_chars, whether re already skips ahead for the pattern)``, from one parse."""
    if _P is None or pattern.flags & re.LOCALE or not isinstance(pattern.pattern, str):
        return None, False
    try:
        if _P.parse(pattern.pattern, 0).state.flags & ~re.UNICODE:  # inline global flags: (?i), (?x)
            return None, False
        tree = _P.parse(pattern.pattern, pattern.flags)
        chars, empty = _seq(tree.data)
        fast = _fast_start(tree.data)
    except (_Unknown, re.error, AttributeError, TypeError, ValueError, IndexError):
        return None, False
    if empty or not chars:
        return None, fast
    if pattern.flags & re.IGNORECASE and any(hi > 0xFFFF for _, hi in chars):
        return None, fast  # re folds an upper-case letter above U+FFFF alone, not inside a class of several
    # The class is compiled with the pattern's own flags, so under IGNORECASE each item matches
    # what the literal or range it came from matches; items are merged only without it (a range
    # made of adjacent literals folds case by its ends, not item by item).
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(chars):
        if merged and lo <= merged[-1][1] + 1 and not pattern.flags & re.IGNORECASE:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    parts = []
    for lo, hi in merged:
        a = re.escape(chr(lo))
        parts.append(a if lo == hi else f"{a}-{re.escape(chr(hi))}")
    return "[" + "".join(parts) + "]", fast


@lru_cache(maxsize=1)
def _parser_agrees() -> bool:
    """The analysis gives the known answers on this Python (a changed parser turns guards off)."""
    known = {
        r"\b(?:ai|bot)s?\b": "[a-b]",
        r"(?!x)(?:[c-e]|f)\s*": "[c-f]",
        r"(?<=\s)(?:a{0,2}b|)c": "[a-c]",
        r"\w+": None,
        r"(?:x|)": None,
    }
    try:
        return all(first_chars(re.compile(p)) == want for p, want in known.items())
    except Exception:  # any surprise from a private module turns the shortcut off
        return False


def guarded(pattern: Pattern[str]) -> Pattern[str]:
    """``pattern`` with a first-character lookahead in front, when that saves work.

    A pattern ``re`` already skips ahead for is returned as it is; the matches are the same.
    Answers are cached by pattern and flags (as :func:`~shared_core.screening.scripts.script_gate`
    caches its own): every screen built in a process asks for the same rules, and analysing all
    421 shipped ones took ~1.1 s (a parse and a compile each).
    """
    return _guarded(pattern)


@lru_cache(maxsize=4096)
def _guarded(pattern: Pattern[str]) -> Pattern[str]:
    if not _parser_agrees():
        return pattern
    chars, fast = _analyse(pattern)
    if chars is None or fast:
        return pattern
    try:
        return re.compile(f"(?={chars})(?:{pattern.pattern})", pattern.flags)
    except re.error:  # a trailing comment of a VERBOSE pattern, say: run it as it is
        return pattern
