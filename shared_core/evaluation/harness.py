"""Evaluation harness over labeled cases (E1): retrieval quality *and* gate safety.

A case file is JSON lines, one case per line::

    {"id": "posting-time",                      # optional case id (default: the line number)
     "query": "When do official posts go out?",
     "scope": {"user_id": "aiko", "agent_id": "writer", "memory_space_id": "brand",
               "route_id": "official"},         # route_id optional
     "expected_memory_ids": ["mem-posting-v3"], # what a perfect gate returns (may be empty)
     "must_not_return": ["mem-posting-v2"],     # stale, superseded, drafts, other users' notes ...
     "sensitive_ids": ["mem-hr-note"],          # optional: memories that must never surface
     "deleted_ids": ["mem-legacy-export"],      # optional: memories deleted before the run
     "relevance": {"mem-posting-v3": 2},        # optional: graded gains for nDCG (default 1 each)
     "note": "free text for people"}            # optional, ignored

Each case runs :meth:`MemoryStore.query <shared_core.store.MemoryStore.query>` as a dry run
(``k`` = K, so at most K memories are accepted) and is scored on the **accepted** memories, in
order. Metrics (``None`` when no case can define them):

``recall@K``
    ``|accepted ∩ expected| / |expected|``, averaged over cases with expected ids.
``precision@K``
    ``|accepted ∩ expected| / |accepted|`` (the share of what reached the model that was right),
    averaged over cases that accepted at least one memory. A gate that declines does not lose
    precision (it loses recall); a case with no expected ids that accepts anything scores 0.
``mrr``
    ``1 / rank`` of the first expected memory among the accepted ones (0 if none), averaged over
    cases with expected ids.
``ndcg@K``
    ``DCG / IDCG`` with gains 1 for expected ids (or the graded ``relevance`` of BEIR qrels) and
    ``log2(rank + 1)`` discounts; IDCG orders the expected ids ideally. Averaged over cases with
    expected ids.
``retrieval_recall@K`` / ``retrieval_ndcg@K``
    the same on the top K fused candidates *before* the gate, to show what the gate costs.
``stale_rate``
    share of all accepted memories (pooled over cases) that are out of date at the evaluation
    instant, judged from the stored records independently of the gate's rules. A memory is out
    of date when (a) ``updated_at`` is more than the scope's ``max_age_days`` before now and it
    carries none of ``freshness_exempt_tags``; or (b) it is superseded: ``superseded_by`` is set,
    another memory of its memory space lists it in ``supersedes``, or its validity window
    (``valid_from`` / ``valid_to``) does not cover now; or (c) its retention ``expires_at`` is
    past. Should be 0.
``leakage_rate``
    share of accepted memories that the query's scope may not see: another memory space or
    route, or private to another user/agent. Should be 0.
``sensitive_exposure_rate``
    share of accepted memories listed in the case's ``must_not_return`` or ``sensitive_ids``.
    Should be 0.
``deletion_propagation``
    share of the ``deleted_ids`` (of all cases) absent from Chroma, from the BM25 partitions and
    from every case's results (accepted or rejected). Should be 1.

Rates are pooled over accepted memories (micro averages) so each accepted memory counts once;
the report keeps the counts behind every rate.

BEIR: :func:`load_beir` reads ``corpus.jsonl``, ``queries.<split>.jsonl`` (or ``queries.jsonl``)
and ``qrels/<split>.tsv``; :func:`beir_store` builds an in-memory store in one scope and
:func:`beir_cases` turns the judged queries into cases (expected = qrels ids). Public benchmark
documents are loaded with the gated bulk import (``MemoryStore.import_records``) opting out of
two steps, which the audit records: ``screens`` (they are not agent memories; screening 5,000
abstracts would only measure the screens) and ``dedup`` (it would merge near-identical abstracts
that BEIR counts separately). Embeddings use the store's embedding (default: the offline MiniLM) and are cached in
a temporary folder keyed by the embedding and the exact texts, so re-runs skip the model.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import NDArray

from ..config import ConfigBook, GateConfig
from ..errors import InputError
from ..model import Hit, MemoryRecord, Scope, Visibility, coerce_scope
from ..timeutil import Clock, system_clock, to_utc

if TYPE_CHECKING:
    from ..recall.gate import GateResult
    from ..store import MemoryStore

__all__ = [
    "BEIR_SCOPE",
    "BeirData",
    "CaseResult",
    "EvalCase",
    "EvalReport",
    "beir_cases",
    "beir_store",
    "beir_texts",
    "build_example_store",
    "embedding_cache_path",
    "evaluate_cases",
    "example_cases_path",
    "example_memories_path",
    "is_out_of_date",
    "load_beir",
    "load_cases",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "run_eval_command",
    "visible_to",
]

BEIR_SCOPE = Scope(user_id="beir", agent_id="eval", memory_space_id="beir")
"""The one scope every BEIR document and query lives in."""

_CASE_KEYS = {
    "id",
    "query",
    "scope",
    "expected_memory_ids",
    "must_not_return",
    "sensitive_ids",
    "deleted_ids",
    "relevance",
    "note",
}
_COMMIT_BATCH = 1000


# -- cases ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvalCase:
    """One labeled query: who asks, what a perfect gate returns, and what must never surface."""

    query: str
    scope: Scope
    expected_memory_ids: tuple[str, ...] = ()
    must_not_return: tuple[str, ...] = ()
    sensitive_ids: tuple[str, ...] = ()
    deleted_ids: tuple[str, ...] = ()
    relevance: Mapping[str, float] | None = None
    id: str = ""

    def gains(self) -> dict[str, float]:
        """Gain per relevant id for nDCG: the graded ``relevance`` if given, else 1 per expected id."""
        if self.relevance:
            return {k: float(v) for k, v in self.relevance.items() if v > 0}
        return dict.fromkeys(self.expected_memory_ids, 1.0)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, where: str = "case") -> EvalCase:
        """Validate one case.

        Raises:
            InputError: naming ``where`` and the offending field (never memory text).
        """
        unknown = sorted(set(data) - _CASE_KEYS)
        if unknown:
            raise InputError(f"{where}: unknown field(s) {', '.join(unknown)}")
        query = data.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InputError(f"{where}: 'query' must be a non-empty string")
        try:
            scope = coerce_scope(data.get("scope"))
        except Exception as exc:
            raise InputError(f"{where}: {exc}") from None

        def ids(name: str) -> tuple[str, ...]:
            value = data.get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise InputError(f"{where}: {name!r} must be a list of ids")
            return tuple(dict.fromkeys(value))

        relevance = data.get("relevance")
        if relevance is not None and (
            not isinstance(relevance, Mapping)
            or not all(
                isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
                for k, v in relevance.items()
            )
        ):
            raise InputError(f"{where}: 'relevance' must map ids to numbers")
        case_id = data.get("id", "")
        return cls(
            query=query,
            scope=scope,
            expected_memory_ids=ids("expected_memory_ids"),
            must_not_return=ids("must_not_return"),
            sensitive_ids=ids("sensitive_ids"),
            deleted_ids=ids("deleted_ids"),
            relevance=dict(relevance) if relevance else None,
            id=str(case_id),
        )


def load_cases(path: str | Path) -> list[EvalCase]:
    """Read a case file (JSON lines; blank lines skipped).

    Raises:
        InputError: if the file cannot be read, or naming the first invalid line and field.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"case file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read case file {p}: {type(exc).__name__}") from None
    cases: list[EvalCase] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{p} line {number}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{p} line {number}: expected a JSON object")
        case = EvalCase.from_mapping(obj, where=f"{p} line {number}")
        cases.append(case if case.id else _with_id(case, f"line-{number}"))
    if not cases:
        raise InputError(f"case file {p} holds no cases")
    return cases


def _with_id(case: EvalCase, case_id: str) -> EvalCase:
    return EvalCase(
        query=case.query,
        scope=case.scope,
        expected_memory_ids=case.expected_memory_ids,
        must_not_return=case.must_not_return,
        sensitive_ids=case.sensitive_ids,
        deleted_ids=case.deleted_ids,
        relevance=case.relevance,
        id=case_id,
    )


# -- ranking metrics (pure) -----------------------------------------------------------------------


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Share of relevant ids among the first ``k`` ranked ids (``None`` if nothing is relevant)."""
    rel = set(relevant)
    if not rel:
        return None
    return len(rel.intersection(ranked[:k])) / len(rel)


def precision_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Share of the first ``k`` ranked ids that are relevant (``None`` if nothing was ranked)."""
    top = list(ranked[:k])
    if not top:
        return None
    rel = set(relevant)
    return sum(1 for i in top if i in rel) / len(top)


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """``1 / rank`` of the first relevant id in the first ``k`` (0 if none; ``None`` if none relevant)."""
    rel = set(relevant)
    if not rel:
        return None
    for rank, mid in enumerate(ranked[:k], start=1):
        if mid in rel:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float | None:
    """Normalised discounted cumulative gain at ``k`` (``None`` if no id has a positive gain)."""
    positive = sorted((g for g in gains.values() if g > 0), reverse=True)
    if not positive:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for rank, mid in enumerate(ranked[:k], start=1):
        if mid in seen:
            continue
        seen.add(mid)
        dcg += gains.get(mid, 0.0) / math.log2(rank + 1)
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(positive[:k], start=1))
    return dcg / idcg


# -- independent oracles --------------------------------------------------------------------------


def visible_to(record: MemoryRecord, scope: Scope) -> bool:
    """Reference scope check (R1, R2), written apart from the gate's rule on purpose.

    Same memory space, same route (no route matches no route), and either shared or owned by the
    scope's user and agent.
    """
    if record.memory_space_id != scope.memory_space_id:
        return False
    if (record.route_id or "") != (scope.route_id or ""):
        return False
    if record.visibility == Visibility.SHARED:
        return True
    return record.user_id == scope.user_id and record.agent_id == scope.agent_id


def is_out_of_date(
    record: MemoryRecord,
    *,
    now: datetime,
    config: GateConfig,
    superseded_ids: Iterable[str] = (),
) -> bool:
    """Whether a memory is out of date at ``now`` (the ``stale_rate`` definition above).

    Args:
        record: the stored memory.
        now: the evaluation instant (aware).
        config: the settings of the memory's space (``max_age_days``, ``freshness_exempt_tags``).
        superseded_ids: ids that some memory of the space lists in its ``supersedes``.
    """
    now = to_utc(now)
    exempt = not set(record.tags).isdisjoint(config.freshness_exempt_tags)
    if not exempt and now - to_utc(record.updated_at) > timedelta(days=config.max_age_days):
        return True
    if record.superseded_by is not None or record.id in set(superseded_ids):
        return True
    if record.valid_from is not None and to_utc(record.valid_from) > now:
        return True
    if record.valid_to is not None and to_utc(record.valid_to) <= now:
        return True
    return record.expires_at is not None and to_utc(record.expires_at) <= now


# -- results --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CaseResult:
    """The outcome of one case: ids only (no memory text), per-case metrics, and findings."""

    case: EvalCase
    accepted_ids: tuple[str, ...]
    candidate_ids: tuple[str, ...]
    recall: float | None
    precision: float | None
    rr: float | None
    ndcg: float | None
    retrieval_recall: float | None
    retrieval_ndcg: float | None
    stale_ids: tuple[str, ...] = ()
    leaked_ids: tuple[str, ...] = ()
    exposed_ids: tuple[str, ...] = ()
    reasons: dict[str, int] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    def to_json_dict(self) -> dict[str, Any]:
        """Ids, metrics and findings of this case (JSON-ready)."""
        return {
            "id": self.case.id,
            "accepted": list(self.accepted_ids),
            "expected": list(self.case.expected_memory_ids),
            "recall": self.recall,
            "precision": self.precision,
            "rr": self.rr,
            "ndcg": self.ndcg,
            "retrieval_recall": self.retrieval_recall,
            "retrieval_ndcg": self.retrieval_ndcg,
            "stale": list(self.stale_ids),
            "leaked": list(self.leaked_ids),
            "exposed": list(self.exposed_ids),
            "rejected_reasons": dict(self.reasons),
            "elapsed_ms": round(self.elapsed_ms, 3),
        }

    @property
    def problems(self) -> list[str]:
        """Short descriptions of what went wrong in this case (empty when it is perfect)."""
        out = []
        missed = [i for i in self.case.expected_memory_ids if i not in self.accepted_ids]
        if missed:
            out.append(f"missed {', '.join(missed)}")
        extra = [i for i in self.accepted_ids if i not in self.case.gains()]
        if extra:
            out.append(f"also accepted {', '.join(extra)}")
        for label, ids in (
            ("stale", self.stale_ids),
            ("LEAKED", self.leaked_ids),
            ("EXPOSED", self.exposed_ids),
        ):
            if ids:
                out.append(f"{label} {', '.join(ids)}")
        return out


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _rate(num: int, den: int) -> float | None:
    return num / den if den else None


def _share(num: int, accepted: int) -> float:
    # Nothing accepted means nothing bad reached the model: the rate is 0, not undefined.
    return num / accepted if accepted else 0.0


@dataclass(frozen=True)
class EvalReport:
    """Metrics over all cases, the counts behind them, and every case's result."""

    k: int
    source: str
    cases: tuple[CaseResult, ...]
    deletion: dict[str, dict[str, bool]] = field(default_factory=dict)
    elapsed_s: float = 0.0

    @property
    def accepted_total(self) -> int:
        """Accepted memories over all cases (the denominator of the rates)."""
        return sum(len(c.accepted_ids) for c in self.cases)

    @property
    def metrics(self) -> dict[str, float | None]:
        """Every metric by name (see the module docstring for definitions)."""
        k = self.k
        acc = self.accepted_total
        propagated = sum(1 for d in self.deletion.values() if not any(d.values()))
        return {
            f"recall@{k}": _mean(c.recall for c in self.cases),
            f"precision@{k}": _mean(c.precision for c in self.cases),
            "mrr": _mean(c.rr for c in self.cases),
            f"ndcg@{k}": _mean(c.ndcg for c in self.cases),
            f"retrieval_recall@{k}": _mean(c.retrieval_recall for c in self.cases),
            f"retrieval_ndcg@{k}": _mean(c.retrieval_ndcg for c in self.cases),
            "stale_rate": _share(sum(len(c.stale_ids) for c in self.cases), acc),
            "leakage_rate": _share(sum(len(c.leaked_ids) for c in self.cases), acc),
            "sensitive_exposure_rate": _share(sum(len(c.exposed_ids) for c in self.cases), acc),
            "deletion_propagation": _rate(propagated, len(self.deletion)),
        }

    @property
    def counts(self) -> dict[str, int]:
        """The counts behind the metrics."""
        reasons: Counter[str] = Counter()
        for c in self.cases:
            reasons.update(c.reasons)
        return {
            "cases": len(self.cases),
            "cases_with_expected": sum(1 for c in self.cases if c.case.gains()),
            "cases_with_accepted": sum(1 for c in self.cases if c.accepted_ids),
            "accepted": self.accepted_total,
            "stale": sum(len(c.stale_ids) for c in self.cases),
            "leaked": sum(len(c.leaked_ids) for c in self.cases),
            "exposed": sum(len(c.exposed_ids) for c in self.cases),
            "deleted_ids": len(self.deletion),
            "deleted_propagated": sum(1 for d in self.deletion.values() if not any(d.values())),
            **{f"rejected_{r}": n for r, n in sorted(reasons.items())},
        }

    def to_json_dict(self, *, per_case: bool = True) -> dict[str, Any]:
        """Metrics, counts, deletion checks and (optionally) per-case results, JSON-ready."""
        out: dict[str, Any] = {
            "source": self.source,
            "k": self.k,
            "metrics": {k: (None if v is None else round(v, 6)) for k, v in self.metrics.items()},
            "counts": self.counts,
            "deletion": self.deletion,
            "elapsed_s": round(self.elapsed_s, 3),
        }
        if per_case:
            out["cases"] = [c.to_json_dict() for c in self.cases]
        return out

    def format_table(self, *, max_problems: int = 10) -> str:
        """A readable table of the metrics, then the cases that were not perfect."""
        m, c, k = self.metrics, self.counts, self.k
        acc = c["accepted"]

        def fmt(v: float | None) -> str:
            return "  n/a" if v is None else f"{v:.3f}"

        rows = [
            (f"Recall@{k}", m[f"recall@{k}"], f"{c['cases_with_expected']} case(s) with expected ids"),
            (
                f"Precision@{k}",
                m[f"precision@{k}"],
                f"{c['cases_with_accepted']} case(s) that accepted something",
            ),
            ("MRR", m["mrr"], f"{c['cases_with_expected']} case(s)"),
            (f"nDCG@{k}", m[f"ndcg@{k}"], f"{c['cases_with_expected']} case(s)"),
            (f"Recall@{k} before gate", m[f"retrieval_recall@{k}"], "top K fused candidates"),
            (f"nDCG@{k} before gate", m[f"retrieval_ndcg@{k}"], "top K fused candidates"),
            ("stale-memory rate", m["stale_rate"], f"{c['stale']} of {acc} accepted"),
            ("cross-scope leakage", m["leakage_rate"], f"{c['leaked']} of {acc} accepted"),
            ("sensitive exposure", m["sensitive_exposure_rate"], f"{c['exposed']} of {acc} accepted"),
            (
                "deletion propagation",
                m["deletion_propagation"],
                f"{c['deleted_propagated']} of {c['deleted_ids']} deleted id(s) gone from Chroma, BM25, results",
            ),
        ]
        lines = [
            f"recall-gate eval: {c['cases']} case(s), K={k}, {self.source} ({self.elapsed_s:.1f} s)",
            f"  {'metric':<24} {'value':>6}  over",
        ]
        lines += [f"  {name:<24} {fmt(v):>6}  {note}" for name, v, note in rows]
        rejected = {key[len("rejected_") :]: n for key, n in c.items() if key.startswith("rejected_")}
        if rejected:
            lines.append("  rejected by reason: " + ", ".join(f"{r} {n}" for r, n in rejected.items()))
        for name, where in sorted(self.deletion.items()):
            still = [w for w, present in where.items() if present]
            if still:
                lines.append(f"  deleted id {name} still present in: {', '.join(still)}")
        imperfect = [r for r in self.cases if r.problems]
        if imperfect:
            lines.append(f"  cases that were not perfect ({len(imperfect)}):")
            for r in imperfect[:max_problems]:
                lines.append(f"    {r.case.id}: {'; '.join(r.problems)}")
            if len(imperfect) > max_problems:
                lines.append(f"    ... and {len(imperfect) - max_problems} more (--json lists every case)")
        return "\n".join(lines)


# -- running cases --------------------------------------------------------------------------------


def _ranked_candidates(result: GateResult) -> list[str]:
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
            for start in range(0, len(ids), _COMMIT_BATCH):
                for rec in self.store.get(ids[start : start + _COMMIT_BATCH], memory_space_id=space):
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
        ranked = _ranked_candidates(result)
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


# -- BEIR -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BeirData:
    """A BEIR data set: documents, the judged queries (in file order) and their judgements."""

    name: str
    doc_ids: list[str]
    titles: list[str]
    texts: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    try:
        fh = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"BEIR file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {type(exc).__name__}") from None
    with fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path} line {number}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or "_id" not in obj:
                raise InputError(f"{path} line {number}: expected an object with '_id'")
            yield number, obj


def load_beir(folder: str | Path, *, split: str = "test", limit: int | None = None) -> BeirData:
    """Load a BEIR folder: ``corpus.jsonl``, ``queries.<split>.jsonl`` or ``queries.jsonl``, ``qrels/<split>.tsv``.

    Only queries with at least one positive judgement are kept, in file order; ``limit`` keeps the
    first ``limit`` of them. The whole corpus is always loaded (retrieval runs over all of it).

    Raises:
        InputError: if a file is missing or malformed (naming the file and line).
    """
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"BEIR folder not found: {root}")
    if limit is not None and limit < 1:
        raise InputError("limit must be a positive integer")
    doc_ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    seen: set[str] = set()
    for number, row in _read_jsonl(root / "corpus.jsonl"):
        did = str(row["_id"])
        if did in seen:
            raise InputError(f"{root / 'corpus.jsonl'} line {number}: duplicate _id")
        seen.add(did)
        doc_ids.append(did)
        titles.append(str(row.get("title") or ""))
        texts.append(str(row.get("text") or ""))
    qrels_path = root / "qrels" / f"{split}.tsv"
    qrels: dict[str, dict[str, int]] = {}
    try:
        with qrels_path.open(encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            for number, cols in enumerate(reader, start=1):
                if not cols or (number == 1 and cols[0] == "query-id"):
                    continue
                if len(cols) < 3:
                    raise InputError(f"{qrels_path} line {number}: expected query-id, corpus-id, score")
                try:
                    score = int(float(cols[2]))
                except ValueError:
                    raise InputError(f"{qrels_path} line {number}: score is not a number") from None
                if score > 0 and cols[1] in seen:
                    qrels.setdefault(cols[0], {})[cols[1]] = score
    except FileNotFoundError:
        raise InputError(f"BEIR qrels not found: {qrels_path}") from None
    queries_path = root / f"queries.{split}.jsonl"
    if not queries_path.exists():
        queries_path = root / "queries.jsonl"
    query_ids: list[str] = []
    queries: list[str] = []
    for _, row in _read_jsonl(queries_path):
        qid = str(row["_id"])
        if qid in qrels and str(row.get("text") or "").strip():
            query_ids.append(qid)
            queries.append(str(row["text"]))
            if limit is not None and len(query_ids) >= limit:
                break
    kept = set(query_ids)
    return BeirData(
        name=root.name,
        doc_ids=doc_ids,
        titles=titles,
        texts=texts,
        query_ids=query_ids,
        queries=queries,
        qrels={q: r for q, r in qrels.items() if q in kept},
    )


def beir_cases(data: BeirData, *, scope: Scope = BEIR_SCOPE) -> list[EvalCase]:
    """One case per judged query: expected = the qrels ids, graded by their qrels scores."""
    return [
        EvalCase(
            query=text,
            scope=scope,
            expected_memory_ids=tuple(data.qrels[qid]),
            relevance={k: float(v) for k, v in data.qrels[qid].items()},
            id=qid,
        )
        for qid, text in zip(data.query_ids, data.queries, strict=True)
    ]


def _cache_dir(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("RECALL_GATE_EVAL_CACHE")
    return Path(env) if env else Path(tempfile.gettempdir()) / "recall-gate-eval-cache"


def _texts_key(texts: Sequence[str], extra: str) -> str:
    h = hashlib.sha256(extra.encode("utf-8"))
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def embedding_cache_path(embedder: Any, texts: Sequence[str], cache_dir: str | Path | None = None) -> Path:
    """Where the vectors of ``texts`` under ``embedder`` are cached (keyed by model and exact texts)."""
    extra = f"{embedder.name}|{embedder.dimension}|{getattr(embedder, 'max_length', '')}"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(embedder.name))
    return _cache_dir(cache_dir) / f"{safe}-{_texts_key(texts, extra)}.npy"


def beir_texts(data: BeirData) -> list[str]:
    """The text embedded and indexed per BEIR document (the store's ``title + newline + text``)."""
    return [f"{t}\n{b}" if t else b for t, b in zip(data.titles, data.texts, strict=True)]


def _cached_vectors(
    store: MemoryStore, texts: Sequence[str], *, cache_dir: str | Path | None, progress: bool
) -> NDArray[np.float32]:
    from tqdm import tqdm

    path = embedding_cache_path(store.embedder, texts, cache_dir)
    dim = int(store.embedder.dimension)
    if path.exists():
        try:
            arr: NDArray[np.float32] = np.load(path)
            if arr.shape == (len(texts), dim) and np.isfinite(arr).all():
                return arr.astype(np.float32, copy=False)
        except (OSError, ValueError):
            pass  # a damaged cache file is recomputed
    out = np.empty((len(texts), dim), dtype=np.float32)
    step = 256
    with tqdm(total=len(texts), desc="embed", unit="doc", disable=not progress, file=sys.stderr) as bar:
        for start in range(0, len(texts), step):
            chunk = list(texts[start : start + step])
            out[start : start + len(chunk)] = store.embedder.embed_documents(chunk)
            bar.update(len(chunk))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(tmp, out)
        os.replace(tmp, path)
    except OSError:
        pass  # caching is an optimisation only
    return out


def beir_store(
    data: BeirData,
    *,
    scope: Scope = BEIR_SCOPE,
    embedding: Any = None,
    config: GateConfig | ConfigBook | None = None,
    clock: Clock = system_clock,
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> MemoryStore:
    """An in-memory store holding every BEIR document as an approved, confirmed memory of ``scope``.

    Documents are bulk-loaded with ``MemoryStore.import_records`` without screens and dedup (see
    the module docstring); vectors are cached by corpus hash.

    Args:
        data: the loaded BEIR data.
        scope: the scope every document belongs to (private to its user).
        embedding: the embedding (default: the offline MiniLM).
        config: gate settings (default: the store's, i.e. the embedding's calibrated threshold).
        clock: the store's clock; documents are stamped with its current time (all fresh).
        cache_dir: embedding cache folder (default: ``$RECALL_GATE_EVAL_CACHE`` or a temp folder).
        progress: show tqdm progress bars on stderr.

    Raises:
        InputError: if a document id is not a valid memory id.
    """
    from ..store import MemoryStore

    store = MemoryStore.in_memory(embedding=embedding, config=config, clock=clock)
    items = [
        {
            "id": did,
            "title": title,
            "body": text,
            **scope.model_dump(),
            "status": "approved",
            "tier": "confirmed",
            "origin": "external_verified",
            "cited": True,
            "source": f"beir:{data.name}",
            "verification_status": "benchmark",
        }
        for did, title, text in zip(data.doc_ids, data.titles, data.texts, strict=True)
    ]
    vectors = _cached_vectors(
        store,
        [f"{t}\n{b}" if t else b for t, b in zip(data.titles, data.texts, strict=True)],
        cache_dir=cache_dir,
        progress=progress,
    )
    for start in range(0, len(items), _COMMIT_BATCH):
        decisions = store.import_records(
            items[start : start + _COMMIT_BATCH],
            vectors=vectors[start : start + _COMMIT_BATCH],
            skip=("screens", "dedup"),
        )
        refused = [d for d in decisions if not d.stored]
        if refused:
            store.close()
            raise InputError(
                f"BEIR document #{start + refused[0].index} was refused: {', '.join(refused[0].detail) or refused[0].action.value}"
            )
    return store


# -- the shipped example --------------------------------------------------------------------------


def _data_path(name: str) -> Path:
    from importlib.resources import files

    return Path(str(files("shared_core") / "data" / name))


def example_cases_path() -> Path:
    """The shipped case file (``shared_core/data/eval_cases.jsonl``)."""
    return _data_path("eval_cases.jsonl")


def example_memories_path() -> Path:
    """The memories the shipped cases refer to (``shared_core/data/example_memories.jsonl``)."""
    return _data_path("example_memories.jsonl")


EXAMPLE_FORGET = ("ticket-legacy-export",)
"""Source records the example forgets after loading (their memories are the cases' deleted ids)."""


def build_example_store(path: str | Path | None = None, **kwargs: Any) -> MemoryStore:
    """Build the store the shipped cases refer to: add the example memories, then forget a source.

    The command-line equivalent::

        recall-gate add --store DIR --input shared_core/data/example_memories.jsonl
        recall-gate forget --store DIR --source ticket-legacy-export
        recall-gate eval shared_core/data/eval_cases.jsonl --store DIR

    Args:
        path: a folder for a persistent store, or ``None`` for an in-memory one.
        **kwargs: passed to :class:`~shared_core.store.MemoryStore` (e.g. ``embedding``).

    Returns:
        The open store (close it, or use it as a context manager).
    """
    from ..apps.cli import read_hits_jsonl
    from ..store import MemoryStore

    store = MemoryStore(path, **kwargs)
    store.add(read_hits_jsonl(example_memories_path()))
    for source in EXAMPLE_FORGET:
        store.forget(source)
    return store


# -- the command ----------------------------------------------------------------------------------


def run_eval_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate eval``: a case file against a store, or a BEIR folder; returns the exit status.

    Raises:
        InputError: on missing or conflicting arguments and unreadable inputs.
    """
    k = args.k
    if not isinstance(k, int) or k < 1:
        raise InputError("-k must be a positive integer")
    if args.beir and args.cases:
        raise InputError("give either a cases file or --beir, not both")
    if args.beir:
        data = load_beir(args.beir, split=args.split, limit=args.limit)
        if not data.query_ids:
            raise InputError(f"no judged queries in {args.beir} for split {args.split!r}")
        with beir_store(data, progress=args.progress) as store:
            report = evaluate_cases(
                store,
                beir_cases(data),
                k=k,
                progress=args.progress,
                source=f"BEIR {data.name}/{args.split} ({len(data.doc_ids)} documents)",
            )
    else:
        if not args.cases:
            raise InputError("give a cases file (with --store) or --beir FOLDER")
        if not args.store:
            raise InputError("a cases file needs --store DIR (the store its ids refer to)")
        if not Path(args.store).is_dir():
            raise InputError(f"store folder not found: {args.store}")
        cases = load_cases(args.cases)
        if args.limit is not None:
            cases = cases[: max(0, args.limit)]
        from ..store import MemoryStore

        with MemoryStore(args.store, read_only=True) as store:
            report = evaluate_cases(store, cases, k=k, progress=args.progress, source=str(args.store))
    if args.json:
        print(json.dumps(report.to_json_dict(), ensure_ascii=False), file=out)
    else:
        print(report.format_table(), file=out)
    return 0
