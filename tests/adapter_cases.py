"""The shared gate case table, converted for framework adapters (framework-neutral; STYLE 8).

Every adapter (LangChain, LlamaIndex) runs ``tests/cases/gate_cases.json`` through its own
conversion and must give the same accepted ids, in the same order, and the same primary reasons
as the core. This module turns one case into what any adapter needs, without importing a
framework:

* :func:`case_documents` -> ``[(id, text, metadata), ...]`` in rank order: ``id`` = the hit's id,
  ``text`` = its body, ``metadata`` = every other field of the hit, ``score`` and
  ``lexical_score`` included (run the adapter with ``score_key=SCORE_KEY`` and
  ``lexical_key=LEXICAL_KEY``, so the table's scores reach the gate unchanged);
* :func:`case_gate` -> a :class:`~shared_core.RecallGate` with the case's config overrides and a
  clock frozen at the case's ``now``;
* :func:`case_scope`, :func:`case_query` -> the scope and the query text to pass;
* :func:`expected` / :func:`observed` -> ``(accepted ids, {rejected id: primary reason})`` of the
  table and of an audit record, compared exactly as ``tests/test_gate_cases.py`` does;
* :func:`adapter_gap` -> why a case cannot give the table's answer through an adapter (use it as
  a strict ``xfail`` reason), or ``None``; ``path=`` adds the gaps of one framework path
  (:data:`PATH_GAPS`).

Example (any framework)::

    params = [
        pytest.param(c, id=case_id(c), marks=[pytest.mark.xfail(strict=True, reason=adapter_gap(c))])
        if adapter_gap(c) else pytest.param(c, id=case_id(c))
        for c in GATE_CASES
    ]

    @pytest.mark.parametrize("case", params)
    def test_case(case):
        docs = [MyDoc(id=i, text=t, metadata=m) for i, t, m in case_documents(case)]
        ...  # run the adapter: gate=case_gate(case), scope=case_scope(case), query=case_query(case),
        ...  # score_key=SCORE_KEY, lexical_key=LEXICAL_KEY; capture its audit record
        assert observed(audit_record, case) == expected(case)
"""

from __future__ import annotations

from typing import Any

from shared_core import GateConfig, RecallGate, Scope
from shared_core.audit import AuditRecord
from shared_core.testing import FrozenClock

__all__ = [
    "ADAPTER_GAPS",
    "LEXICAL_KEY",
    "PATH_GAPS",
    "SCORE_KEY",
    "CaseNotConvertible",
    "adapter_gap",
    "case_documents",
    "case_gate",
    "case_id",
    "case_query",
    "case_scope",
    "expected",
    "observed",
]

SCORE_KEY = "score"
"""Metadata key of the table's semantic score: pass it as the adapter's ``score_key``."""

LEXICAL_KEY = "lexical_score"
"""Metadata key of the table's lexical score: pass it as the adapter's ``lexical_key``."""

ADAPTER_GAPS: dict[str, str] = {}
"""Cases whose table answer no adapter can give, with the precise reason (none today).

History: ``lexical_score_can_pass`` needed ``gate_candidates(lexical_key=...)`` and
``duplicate_id_keeps_first`` needed ``gate_candidates`` to pass an id repeated by one retriever
to the gate; both are in the core now."""


PATH_GAPS: dict[str, dict[str, str]] = {"llama_index.retrieve": {}}
"""Gaps of one framework path only (the framework itself changes the input), by path label.

History: ``llama_index.retrieve`` lost ``duplicate_id_keeps_first`` while the gated retriever
called the wrapped one's ``retrieve()``, which drops a repeated node id; it now calls the
wrapped retriever's ``_retrieve`` (outside the caller's instrumentation), which keeps it."""


class CaseNotConvertible(ValueError):
    """A hit cannot be represented as (string id, string text, metadata) without changing it."""


def case_id(case: dict[str, Any]) -> str:
    """The case's name (for ``pytest.mark.parametrize(ids=...)``)."""
    return str(case["name"])


def case_documents(case: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(id, text, metadata)`` per hit, in rank order; metadata keeps every other field, ``score`` too.

    Raises:
        CaseNotConvertible: if a hit's id is not a non-empty string or its body not a string
            (a framework document could not carry it unchanged).
    """
    out = []
    for hit in case["hits"]:
        hid, body = hit.get("id"), hit.get("body")
        if not isinstance(hid, str) or not hid.strip():
            raise CaseNotConvertible(f"case {case['name']!r}: a hit id is not a non-empty string")
        if not isinstance(body, str):
            raise CaseNotConvertible(f"case {case['name']!r}: hit {hid!r} has no string body")
        out.append((hid, body, {k: v for k, v in hit.items() if k not in ("id", "body")}))
    return out


def case_gate(case: dict[str, Any]) -> RecallGate:
    """The case's gate: its config overrides, clock frozen at the case's ``now``."""
    return RecallGate(GateConfig(**case["config"]), clock=FrozenClock(case["now"]))


def case_scope(case: dict[str, Any]) -> Scope:
    """The case's scope."""
    return Scope.model_validate(case["scope"])


def case_query(case: dict[str, Any]) -> str:
    """The query text to pass (frameworks need a string; cases without a query use ``""``)."""
    query = case.get("query")
    return query if isinstance(query, str) else ""


def expected(case: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The table's accepted ids (in order) and primary reason per rejected id."""
    return list(case["accepted"]), dict(case["rejected"])


def observed(record: AuditRecord, case: dict[str, Any]) -> tuple[list[str], dict[str, str]]:
    """What an audit record says, filtered like ``tests/test_gate_cases.py`` (duplicate ids count once)."""
    accepted = list(record.accepted_ids)
    rejected = {
        e.id: e.reason for e in record.rejected if e.id not in case["accepted"] or e.reason == "invalid"
    }
    return accepted, rejected


def adapter_gap(case: dict[str, Any], path: str | None = None) -> str | None:
    """Why the case cannot give the table's answer through an adapter, or ``None``.

    Args:
        case: the case.
        path: a label of :data:`PATH_GAPS` (e.g. ``"llama_index.retrieve"`` for results that went
            through LlamaIndex's ``BaseRetriever.retrieve``) to include that path's gaps.
    """
    if case["name"] in ADAPTER_GAPS:
        return ADAPTER_GAPS[case["name"]]
    if path is not None and case["name"] in PATH_GAPS.get(path, {}):
        return PATH_GAPS[path][case["name"]]
    try:
        case_documents(case)
    except CaseNotConvertible as exc:
        return str(exc)
    return None
