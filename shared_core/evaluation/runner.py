"""Running labelled cases against a store: dry-run queries, metrics, oracles (E1)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ..config import GateConfig
from ..errors import InputError
from ..model import Hit
from ..timeutil import to_utc
from .cases import EvalCase
from .metrics import is_out_of_date, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank, visible_to
from .report import CaseResult, EvalReport

if TYPE_CHECKING:
    from ..recall.gate import GateResult
    from ..store import MemoryStore

__all__ = ["evaluate_cases", "ranked_candidates"]

_BATCH = 1000


def ranked_candidates(result: GateResult) -> list[str]:
    """Ids of every hit the gate saw (accepted and rejected), in fused-rank order: the pre-gate ranking."""
    hits: list[Hit] = list(result.accepted) + [r.hit for r in result.rejected if r.hit is not None]
    ranked = sorted(
        (h for h in hits if h.fused_rank is not None),
        key=lambda h: h.fused_rank if h.fused_rank is not None else 0,
    )
    return [h.record.id for h in ranked]


class _SupersededIndex:
    """Ids some memory of a space lists in ``supersedes`` (read from Chroma once per space)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._by_space: dict[str, frozenset[str]] = {}

    def __call__(self, space: str) -> frozenset[str]:
        found = self._by_space.get(space)
        if found is None:
            ids = sorted(self.store.all_ids(space))
            out: set[str] = set()
            for start in range(0, len(ids), _BATCH):
                for rec in self.store.get(ids[start : start + _BATCH], memory_space_id=space):
                    out.update(s for s in rec.supersedes if s != rec.id)
            found = frozenset(out)
            self._by_space[space] = found
        return found


def evaluate_cases(
    store: MemoryStore,
    cases: Sequence[EvalCase],
    *,
    k: int = 10,
    now: datetime | None = None,
    config: GateConfig | None = None,
    progress: bool = False,
    source: str = "store",
) -> EvalReport:
    """Run every case against ``store`` (dry runs) and compute the metrics.

    Args:
        store: the memory store the cases refer to.
        cases: the labeled cases.
        k: the cut-off K (each query accepts at most K memories).
        now: the evaluation instant (default: the store's clock), for the gate and the oracles.
        config: gate settings to evaluate instead of the store's (what-if evaluation).
        progress: show a tqdm progress bar on stderr.
        source: a label for the report (e.g. the store path or the BEIR folder).

    Returns:
        The report.

    Raises:
        InputError: if ``k`` is not a positive integer.
    """
    from tqdm import tqdm

    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError("k must be a positive integer")
    started = time.perf_counter()
    at = to_utc(now) if now is not None else to_utc(store.clock())
    superseded = _SupersededIndex(store)
    results: list[CaseResult] = []
    candidates_seen: set[str] = set()
    for case in tqdm(cases, desc="eval", unit="query", disable=not progress, file=sys.stderr):
        t0 = time.perf_counter()
        result = store.query(case.query, scope=case.scope, k=k, dry_run=True, now=at, config=config)
        elapsed = (time.perf_counter() - t0) * 1e3
        accepted = [h.record.id for h in result.accepted]
        ranked = ranked_candidates(result)
        candidates_seen.update(ranked)
        candidates_seen.update(r.id for r in result.rejected)
        gains = case.gains()
        cfg = config or store.gate.config_for(case.scope)
        forbidden = set(case.must_not_return) | set(case.sensitive_ids)
        stale, leaked, exposed = [], [], []
        for hit in result.accepted:
            rec = hit.record
            if is_out_of_date(rec, now=at, config=cfg, superseded_ids=superseded(rec.memory_space_id)):
                stale.append(rec.id)
            if not visible_to(rec, case.scope):
                leaked.append(rec.id)
            if rec.id in forbidden:
                exposed.append(rec.id)
        results.append(
            CaseResult(
                case=case,
                accepted_ids=tuple(accepted),
                candidate_ids=tuple(ranked),
                recall=recall_at_k(accepted, gains, k),
                precision=precision_at_k(accepted, gains, k),
                rr=reciprocal_rank(accepted, gains, k),
                ndcg=ndcg_at_k(accepted, gains, k),
                retrieval_recall=recall_at_k(ranked, gains, k),
                retrieval_ndcg=ndcg_at_k(ranked, gains, k),
                stale_ids=tuple(stale),
                leaked_ids=tuple(leaked),
                exposed_ids=tuple(exposed),
                reasons=dict(result.audit.counts),
                elapsed_ms=elapsed,
            )
        )
    deletion = _deletion_checks(store, cases, candidates_seen)
    return EvalReport(
        k=k,
        source=source,
        cases=tuple(results),
        deletion=deletion,
        elapsed_s=time.perf_counter() - started,
    )


def _deletion_checks(
    store: MemoryStore, cases: Sequence[EvalCase], seen: set[str]
) -> dict[str, dict[str, bool]]:
    by_space: dict[str, set[str]] = {}
    for case in cases:
        if case.deleted_ids:
            by_space.setdefault(case.scope.memory_space_id, set()).update(case.deleted_ids)
    out: dict[str, dict[str, bool]] = {}
    for space, ids in sorted(by_space.items()):
        in_chroma = store.all_ids(space)
        in_bm25 = store.indexed_ids(space)
        for mid in sorted(ids):
            out[mid] = {"chroma": mid in in_chroma, "bm25": mid in in_bm25, "results": mid in seen}
    return out
