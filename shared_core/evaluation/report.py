"""Per-case results and the report over all cases (metrics, counts, table, JSON)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .cases import EvalCase

__all__ = ["CaseResult", "EvalReport"]


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
