"""What the command line, the demo and the MCP server show people: tables, summaries, hints.

- :func:`cell_width` / :func:`fit`: columns aligned by *display* width, so Japanese or Korean titles
  (two terminal cells per character) line up with Latin ones. Written here with
  :func:`unicodedata.east_asian_width` rather than adding ``wcwidth`` as a dependency: the
  columns only need wide (W/F) characters counted twice and combining or format characters
  counted zero; ambiguous-width characters count one cell, as Western terminals draw them.
- :func:`shown`: memory text made safe for a terminal. Titles and bodies are data, possibly
  written by an attacker: control characters (ANSI escape sequences, carriage returns), bidi
  overrides and lone surrogates are shown as visible escapes instead of being interpreted.
- :func:`recall_summary`: counts by reason, tentative memories held back, and one-line hints
  (``nothing accepted: ...``) for a gate result, shared by ``recall-gate query``, the demo and
  the MCP ``memory_preview`` (ids and counts only, never memory text).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from ..model import Reason
from ..recall.gate import GateResult

__all__ = [
    "RecallSummary",
    "cell_width",
    "fit",
    "json_line",
    "one_line",
    "plural",
    "print_result",
    "recall_summary",
    "shown",
]

# C0 and C1 controls, DEL, bidi embeddings/overrides/isolates, line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SPACES = re.compile(r"\s+")


def shown(text: str) -> str:
    """``text`` safe to print on a terminal: controls and bidi marks shown as backslash escapes."""

    def escape(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _LONE_SURROGATE.sub(escape, _UNSAFE.sub(escape, text))


def one_line(text: str) -> str:
    """Whitespace runs (newlines included) collapsed to one space, then made safe (:func:`shown`)."""
    return shown(_SPACES.sub(" ", text).strip())


def plural(n: int, one: str, many: str) -> str:
    """``"1 memory"`` / ``"3 memories"``."""
    return f"{n} {one if n == 1 else many}"


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """How many terminal cells ``text`` takes (wide East Asian characters count two)."""
    return sum(_char_width(ch) for ch in text)


def fit(text: str, cells: int) -> str:
    """``text`` cut to at most ``cells`` display cells (ending in ``…`` when cut), padded to exactly ``cells``."""
    if cells <= 0:
        return ""
    if cell_width(text) <= cells:
        return text + " " * (cells - cell_width(text))
    out: list[str] = []
    used = 0
    for ch in text:
        w = _char_width(ch)
        if used + w > cells - 1:
            break
        out.append(ch)
        used += w
    cut = "".join(out) + "…"
    return cut + " " * (cells - used - 1)


def json_line(obj: Any) -> str:
    """One line of JSON; if it holds a lone surrogate (not valid UTF-8), it is written escaped."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


def _fmt_score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


@dataclass(frozen=True)
class RecallSummary:
    """What a gate run did, in numbers: for hints on the command line and in the MCP preview.

    Attributes:
        accepted: how many hits were accepted.
        rejected: how many were rejected.
        counts: rejections by primary reason.
        tentative_held_back: tentative memories that passed every other rule and were held back
            only for their tier (``tier_excluded``): agent notes not confirmed yet.
        tentative_also_failed: tentative memories that were rejected for another reason too.
        in_scope: memories the scope's partitions held at search time (``None`` when unknown,
            e.g. for replayed hits).
    """

    accepted: int
    rejected: int
    counts: dict[str, int]
    tentative_held_back: int
    tentative_also_failed: int
    in_scope: int | None

    def hints(self, *, operator: bool = True) -> list[str]:
        """Plain-language lines for the cases a user would otherwise misread (empty when all is well).

        Args:
            operator: add what an operator can do about it (config, review); ``False`` for
                what a model reads (MCP), which is told the facts only, so that it is not
                invited to work around the gate.
        """
        out: list[str] = []
        if self.accepted == 0 and self.rejected > 0:
            by = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(
                f"nothing accepted: all {plural(self.rejected, 'candidate was', 'candidates were')} rejected ({by})"
            )
        elif self.accepted == 0 and self.in_scope == 0:
            out.append(
                "nothing to recall: this scope holds no memories"
                + (
                    " (check the scope: other users', agents' and routes' memories are never searched)"
                    if operator
                    else ""
                )
            )
        elif self.accepted == 0:
            out.append("nothing accepted: no memory in this scope matched the question")
        if self.tentative_held_back:
            held = plural(self.tentative_held_back, "tentative memory", "tentative memories")
            tip = (
                ": agent notes start tentative and are recalled once confirmed (by evidence or an "
                "operator), or when the space's tier_priority includes tentative"
                if operator
                else ": not confirmed yet, so not used"
            )
            out.append(f"{held} held back (tier_excluded){tip}")
        return out

    def to_json(self, *, operator: bool = True) -> dict[str, Any]:
        """The summary as a plain dict (ids and counts only), with the hints as ``notes``."""
        return {
            "accepted": self.accepted,
            "rejected": self.rejected,
            "counts": dict(self.counts),
            "all_rejected": self.accepted == 0 and self.rejected > 0,
            "tentative_held_back": self.tentative_held_back,
            "notes": self.hints(operator=operator),
        }


def recall_summary(result: GateResult) -> RecallSummary:
    """Counts by reason and tentative memories held back for one gate result."""
    primary = Counter(r.reason.value for r in result.rejected)
    held = sum(1 for r in result.rejected if r.reason is Reason.TIER_EXCLUDED)
    also = sum(
        1
        for r in result.rejected
        if r.reason is not Reason.TIER_EXCLUDED and Reason.TIER_EXCLUDED in r.reasons
    )
    extra: Mapping[str, Any] = result.audit.extra or {}
    in_scope = extra.get("in_scope")
    return RecallSummary(
        accepted=len(result.accepted),
        rejected=len(result.rejected),
        counts=dict(sorted(primary.items())),
        tentative_held_back=held,
        tentative_also_failed=also,
        in_scope=in_scope if isinstance(in_scope, int) and not isinstance(in_scope, bool) else None,
    )


TITLE_CELLS = 34


def print_result(result: GateResult, out: TextIO, *, title: str | None = None, hints: bool = True) -> None:
    """Print a gate result as a table: accepted, then rejected, each with id *and* title, then hints.

    Columns are aligned by display width; titles are cut to 34 cells and made safe for the
    terminal (:func:`shown`).
    """
    if title:
        print(title, file=out)
    ids = [h.record.id for h in result.accepted] + [r.id for r in result.rejected]
    id_cells = min(40, max([8, *(cell_width(shown(i)) for i in ids)]))
    print(f"  accepted ({len(result.accepted)}):", file=out)
    for rank, hit in enumerate(result.accepted, start=1):
        p = hit.provenance()
        channels = "+".join(p["channels"]) or "imported"
        print(
            f"    {rank:>2}. {fit(shown(hit.record.id), id_cells)}  {fit(one_line(hit.record.title), TITLE_CELLS)}"
            f"  sem={_fmt_score(hit.score)} lex={_fmt_score(hit.lexical_score)} via={channels}",
            file=out,
        )
    print(f"  rejected ({len(result.rejected)}):", file=out)
    for rej in result.rejected:
        others = [r.value for r in rej.reasons[1:]]
        more = f" (also: {', '.join(others)})" if others else ""
        print(
            f"      - {fit(shown(rej.id), id_cells)}  {fit(one_line(rej.title), TITLE_CELLS)}"
            f"  {rej.reason.value}{more}",
            file=out,
        )
    if hints:
        for line in recall_summary(result).hints():
            print(f"  hint: {line}", file=out)
