"""Which script a language rule needs: rules for ja, ko, zh, ru, ... skipped in a text without it (W5 speed).

:class:`~shared_core.screening.engine.RuleSet` asks :func:`script_gate` once per rule; a rule with a
gate is not run on a text where the gate finds nothing. The gate is exact by construction: it is
given only when the rule's own pattern cannot match without a character of the script.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from functools import lru_cache
from re import Pattern
from typing import Any

with warnings.catch_warnings():  # sre_parse: the standard library's regex parser (3.10's name)
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import sre_constants as _sre_constants
        import sre_parse as _sre_parse
    except ImportError:  # pragma: no cover - a Python without it: rules are never skipped
        _sre_parse = None  # type: ignore[assignment]

__all__ = ["script_gate"]

# The script a rule written for one of these languages needs in the text it reads: a Japanese rule
# kana or kanji, a Korean rule Hangul, and so on. Rules for other languages (Latin script) and for
# any language are never skipped.
_SCRIPTS: dict[str, str] = {
    "ja": "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f",
    "ko": "\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uffa0-\uffdc",
    "zh": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff",
    "ru": "\u0400-\u052f",
    "ar": "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff",
    "hi": "\u0900-\u097f",
    "th": "\u0e00-\u0e7f",
}


def script_gate(languages: Sequence[str], pattern: Pattern[str]) -> Pattern[str] | None:
    """A pattern finding a character of the script ``pattern`` cannot match without, or ``None``.

    Only for a rule written for ``languages`` with scripts of their own (:data:`_SCRIPTS`), and only
    when the pattern itself proves it: every way through it reads at least one character of the
    script (:func:`_needs_script`). A Japanese rule with an ASCII way through it (``<!-- ai:``)
    gets no gate. Answers are cached: every screen built in a process asks for the same rules.
    """
    return _script_gate(tuple(languages), pattern)


@lru_cache(maxsize=4096)
def _script_gate(languages: tuple[str, ...], pattern: Pattern[str]) -> Pattern[str] | None:
    if not languages or any(lang not in _SCRIPTS for lang in languages) or _sre_parse is None:
        return None
    gate = re.compile("[" + "".join(_SCRIPTS[lang] for lang in sorted(set(languages))) + "]")
    try:
        tree = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # a pattern the parser of this Python cannot read: no gate
        return None
    return gate if _needs_script(list(tree.data), gate) else None


def _needs_script(items: Sequence[Any], gate: Pattern[str]) -> bool:
    """Whether every match of the parsed regex ``items`` (a sequence) holds a character ``gate`` finds.

    Written here because no library answers it: the standard library's own regex parser gives the
    tree, and a node needs the script when it is a literal of it, a character class wholly inside
    it, a group, a repeat of at least once, or an alternation all of whose branches need it.
    Anything else (lookarounds, anchors, negated or category classes, back references) is taken
    not to need it, so a gate can only be missing, never wrong.
    """
    c = _sre_constants

    def in_script(code: int) -> bool:
        return gate.fullmatch(chr(code)) is not None

    def node(op: Any, av: Any) -> bool:
        if op is c.LITERAL:
            return in_script(av)
        if op is c.IN:
            if any(o is c.NEGATE for o, _ in av):
                return False
            for o, a in av:
                if o is c.LITERAL and in_script(a):
                    continue
                if o is c.RANGE and _range_in(a, gate):
                    continue
                return False
            return True
        if op is c.BRANCH:
            return all(_needs_script(list(alt), gate) for alt in av[1])
        if op is c.SUBPATTERN:
            return _needs_script(list(av[-1]), gate)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT) or op is getattr(c, "POSSESSIVE_REPEAT", None):
            return int(av[0]) >= 1 and _needs_script(list(av[2]), gate)
        if op is getattr(c, "ATOMIC_GROUP", None):
            return _needs_script(list(av), gate)
        return False

    return any(node(op, av) for op, av in items)


def _range_in(bounds: tuple[int, int], gate: Pattern[str]) -> bool:
    """Whether every character from ``bounds[0]`` to ``bounds[1]`` is one ``gate`` finds."""
    lo, hi = bounds
    if hi - lo > 0x3000:  # wider than any one script here: cannot be inside
        return False
    return all(gate.fullmatch(chr(x)) is not None for x in range(lo, hi + 1))
