"""Labelled evaluation cases (E1): the case-file contract of ``recall-gate eval``.

See :mod:`shared_core.evaluation` for the format of a case file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..model import Scope, coerce_scope
from ..model.jsonl import iter_jsonl

__all__ = ["EvalCase", "load_cases"]

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
    cases: list[EvalCase] = []
    for number, obj in iter_jsonl(p, what="case file"):
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
