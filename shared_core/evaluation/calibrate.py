"""Per-space calibration of the relevance decision from labelled cases (``recall-gate calibrate``).

The recall gate's relative rule (:func:`shared_core.recall.rules.rule_score`) has three thresholds
that belong to the embedding model (DESIGN "Scores"): ``anchor_score``, ``relative_margin`` and
``relative_floor``. Each shipped embedding carries values measured on public data; a memory space
whose memories look different (dialogue turns, tickets, code) can measure its own on cases it
labelled (the case-file contract of ``recall-gate eval``: expected ids, and ``must_not_return``
ids that are only vaguely similar).

How: every case is searched once (the fused candidates before the gate); then each operating
point of a grid re-runs only the gate on the same candidates (microseconds per hit) and is scored:

* ``recall`` / ``pre_recall``: recall@K of the accepted hits, and of the top K candidates before
  the gate; ``ratio`` = recall / pre_recall (what the gate keeps of what retrieval found);
* ``ndcg`` / ``pre_ndcg``: the same for nDCG@K;
* ``forbidden``: accepted memories listed in a case's ``must_not_return`` (vaguely similar
  distractors, another version, ...);
* ``empty_accepting``: cases with no expected id that accepted anything (nothing was on topic);
* ``leaked``: accepted memories the case's scope may not see (always 0: the scope rule).

:func:`choose` picks the point with the fewest ``forbidden + empty_accepting`` among those keeping
at least ``min_ratio`` (0.95) of the pre-gate recall, ties broken by higher recall. The command
prints the whole table (the precision/recall trade-off) and a TOML snippet for the space.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..config import GateConfig
from ..errors import InputError
from ..model import Hit
from ..timeutil import to_utc
from .cases import EvalCase, load_cases
from .metrics import ndcg_at_k, recall_at_k, visible_to

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = [
    "OperatingPoint",
    "SearchedCase",
    "add_calibrate_parser",
    "choose",
    "operating_point",
    "run_calibrate_command",
    "search_cases",
    "sweep",
]

ANCHORS = (0.45, 0.5, 0.52, 0.55, 0.58, 0.6, 0.65)
MARGINS = (0.1, 0.15, 0.2, 0.25, 0.3)
FLOORS = (0.2, 0.25, 0.3)


@dataclass(frozen=True)
class SearchedCase:
    """A case and its fused candidates before the gate (searched once, gated many times)."""

    case: EvalCase
    hits: tuple[Hit, ...]

    @property
    def ranked(self) -> list[str]:
        """Candidate ids in fused order."""
        return [h.record.id for h in self.hits]


def search_cases(store: MemoryStore, cases: Iterable[EvalCase], *, candidates: int = 50) -> list[SearchedCase]:
    """Search every case once in its scope (no gate): the candidates every operating point gates."""
    return [
        SearchedCase(c, tuple(store.search(c.query, scope=c.scope, candidates=candidates)[0])) for c in cases
    ]


@dataclass(frozen=True)
class OperatingPoint:
    """What one gate configuration does on the searched cases (see the module docstring)."""

    config: GateConfig
    recall: float | None
    pre_recall: float | None
    ndcg: float | None
    pre_ndcg: float | None
    forbidden: int
    empty_cases: int
    empty_accepting: int
    accepted: int
    leaked: int

    @property
    def ratio(self) -> float | None:
        """Accepted recall over pre-gate recall (``None`` when undefined)."""
        if self.recall is None or not self.pre_recall:
            return None
        return self.recall / self.pre_recall

    @property
    def label(self) -> str:
        """The relevance settings of the point, short."""
        c = self.config
        if c.relative_rule() is None:
            return f"absolute min_score={c.min_score:g} lexical={c.min_lexical_score}"
        return (
            f"relative anchor={c.anchor_score:g} margin={c.relative_margin:g} floor={c.relative_floor:g} "
            f"(min_score={c.min_score:g})"
        )

    def to_json_dict(self) -> dict[str, Any]:
        """The point's settings and figures, JSON-ready."""
        return {
            "relevance": self.config.relevance,
            "min_score": self.config.min_score,
            "anchor_score": self.config.anchor_score,
            "relative_margin": self.config.relative_margin,
            "relative_floor": self.config.relative_floor,
            "recall": self.recall,
            "pre_recall": self.pre_recall,
            "ratio": self.ratio,
            "ndcg": self.ndcg,
            "pre_ndcg": self.pre_ndcg,
            "forbidden": self.forbidden,
            "empty_cases": self.empty_cases,
            "empty_accepting": self.empty_accepting,
            "accepted": self.accepted,
            "leaked": self.leaked,
        }


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def operating_point(
    store: MemoryStore,
    searched: Sequence[SearchedCase],
    config: GateConfig,
    *,
    k: int = 10,
    now: datetime | None = None,
) -> OperatingPoint:
    """Gate every searched case with ``config`` (dry runs, no audit) and score the result."""
    at = to_utc(now) if now is not None else to_utc(store.clock())
    cfg = store.gate.resolve(config).replace(max_hits=k)
    rec, pre_rec, nd, pre_nd = [], [], [], []
    forbidden = empty = empty_acc = accepted = leaked = 0
    for sc in searched:
        case = sc.case
        result = store.gate.evaluate(
            sc.hits, scope=case.scope, query=case.query, dry_run=True, now=at, config=cfg, emit_audit=False
        )
        ids = result.accepted_ids
        gains = case.gains()
        rec.append(recall_at_k(ids, gains, k))
        pre_rec.append(recall_at_k(sc.ranked, gains, k))
        nd.append(ndcg_at_k(ids, gains, k))
        pre_nd.append(ndcg_at_k(sc.ranked, gains, k))
        forbidden += len(set(ids) & set(case.must_not_return))
        if not gains:
            empty += 1
            empty_acc += bool(ids)
        accepted += len(ids)
        leaked += sum(1 for h in result.accepted if not visible_to(h.record, case.scope))
    return OperatingPoint(
        config=cfg,
        recall=_mean(rec),
        pre_recall=_mean(pre_rec),
        ndcg=_mean(nd),
        pre_ndcg=_mean(pre_nd),
        forbidden=forbidden,
        empty_cases=empty,
        empty_accepting=empty_acc,
        accepted=accepted,
        leaked=leaked,
    )


def sweep(
    store: MemoryStore,
    searched: Sequence[SearchedCase],
    base: GateConfig,
    *,
    anchors: Sequence[float] = ANCHORS,
    margins: Sequence[float] = MARGINS,
    floors: Sequence[float] = FLOORS,
    k: int = 10,
    now: datetime | None = None,
) -> list[OperatingPoint]:
    """The absolute-only point, then every relative point of the grid, on the same candidates."""
    points = [operating_point(store, searched, base.replace(relevance="absolute"), k=k, now=now)]
    for a, m, f in itertools.product(anchors, margins, floors):
        cfg = base.replace(relevance="relative", anchor_score=a, relative_margin=m, relative_floor=f)
        points.append(operating_point(store, searched, cfg, k=k, now=now))
    return points


def choose(points: Sequence[OperatingPoint], *, min_ratio: float = 0.95) -> OperatingPoint | None:
    """The point with the fewest wrong acceptances that keeps ``min_ratio`` of the pre-gate recall."""
    ok = [p for p in points if p.ratio is not None and p.ratio >= min_ratio]
    if not ok:
        return None
    return min(ok, key=lambda p: (p.forbidden + p.empty_accepting, -(p.recall or 0.0)))


def _fmt(v: float | None) -> str:
    return "  n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def format_points(points: Sequence[OperatingPoint], chosen: OperatingPoint | None = None) -> str:
    """The trade-off as a table: one row per operating point."""
    lines = [
        f"  {'operating point':<62} {'recall':>6} {'ratio':>6} {'nDCG':>6} {'forbid':>6} {'empty+':>7} {'acc':>6}",
    ]
    for p in points:
        mark = " <" if p is chosen else ""
        lines.append(
            f"  {p.label:<62} {_fmt(p.recall):>6} {_fmt(p.ratio):>6} {_fmt(p.ndcg):>6} {p.forbidden:>6} "
            f"{p.empty_accepting:>3}/{p.empty_cases:<3} {p.accepted:>6}{mark}"
        )
    return "\n".join(lines)


def add_calibrate_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``recall-gate calibrate`` to an ``argparse`` sub-parser collection."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "calibrate",
        help="measure the relevance thresholds of a memory space on labelled cases",
        description=(
            "Search every case once, gate the candidates at each point of a grid of relevance "
            "thresholds, print the recall / wrong-acceptance trade-off and the settings to use."
        ),
    )
    p.add_argument("cases", help="case file (JSON lines, the `recall-gate eval` contract)")
    p.add_argument("--store", required=True, help="the store the cases' ids refer to (opened read-only)")
    p.add_argument("-k", type=int, default=10, help="cut-off K (default 10)")
    p.add_argument("--min-ratio", type=float, default=0.95, help="recall to keep vs before the gate (0.95)")
    p.add_argument("--candidates", type=int, default=50, help="fused candidates per query (50)")
    p.add_argument("--json", action="store_true", help="print every operating point as JSON")
    return p


def run_calibrate_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate calibrate``: returns 0 when a point meets ``--min-ratio``, else 1.

    Raises:
        InputError: on missing or invalid arguments.
    """
    if not isinstance(args.k, int) or args.k < 1:
        raise InputError("-k must be a positive integer")
    if not 0.0 < args.min_ratio <= 1.0:
        raise InputError("--min-ratio must be in (0, 1]")
    if not Path(args.store).is_dir():
        raise InputError(f"store folder not found: {args.store}")
    cases = load_cases(args.cases)
    from ..store import MemoryStore

    with MemoryStore(args.store, read_only=True) as store:
        searched = search_cases(store, cases, candidates=args.candidates)
        spaces = sorted({c.scope.memory_space_id for c in cases})
        base = store.gate.resolve(store.gate.book.for_space(spaces[0]))
        points = sweep(store, searched, base, k=args.k)
    chosen = choose(points, min_ratio=args.min_ratio)
    if args.json:
        payload = {
            "points": [p.to_json_dict() for p in points],
            "chosen": None if chosen is None else chosen.to_json_dict(),
        }
        print(json.dumps(payload), file=out)
    else:
        print(f"recall-gate calibrate: {len(cases)} case(s), K={args.k}, space(s) {', '.join(spaces)}", file=out)
        print(format_points(points, chosen), file=out)
        if chosen is None:
            print(f"no operating point keeps {args.min_ratio:.0%} of the pre-gate recall", file=out)
        else:
            c = chosen.config
            print("settings (add to your config file):", file=out)
            for space in spaces:
                print(f'[spaces."{space}".gate]', file=out)
                if c.relative_rule() is None:
                    print('relevance = "absolute"', file=out)
                else:
                    print(
                        f"anchor_score = {c.anchor_score:g}\nrelative_margin = {c.relative_margin:g}\n"
                        f"relative_floor = {c.relative_floor:g}",
                        file=out,
                    )
    return 0 if chosen is not None else 1
