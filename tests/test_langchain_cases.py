"""The shared gate case table through the LangChain adapter, sync and async (STYLE 8)."""

from __future__ import annotations

from typing import Any

import pytest
from adapter_cases import (
    LEXICAL_KEY,
    SCORE_KEY,
    adapter_gap,
    case_documents,
    case_gate,
    case_id,
    case_query,
    case_scope,
    expected,
    observed,
)
from conftest import GATE_CASES
from invariants import assert_no_text
from langchain_core.documents import Document
from langchain_doubles import EventRecorder, StaticRetriever

from langchain_recall_gate import AUDIT_EVENT, GatedRetriever
from shared_core import AuditRecord


def _params() -> list[Any]:
    out = []
    for case in GATE_CASES:
        gap = adapter_gap(case)
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        out.append(pytest.param(case, id=case_id(case), marks=marks))
    return out


def _retriever(case: dict[str, Any]) -> GatedRetriever:
    docs = [Document(id=i, page_content=t, metadata=m) for i, t, m in case_documents(case)]
    return GatedRetriever(
        retrievers=[StaticRetriever(docs=docs)],
        gate=case_gate(case),
        scope=case_scope(case),
        score_key=SCORE_KEY,
        lexical_key=LEXICAL_KEY,
    )


def _check(case: dict[str, Any], out: list[Document], recorder: EventRecorder) -> None:
    [(name, data)] = recorder.events
    assert name == AUDIT_EVENT
    record = AuditRecord.model_validate(data)
    assert observed(record, case) == expected(case)
    assert [d.id for d in out] == expected(case)[0]
    assert record.input_count == len(case["hits"])
    assert_no_text(
        record, [h.get("body", "") for h in case["hits"]] + [h.get("title", "") for h in case["hits"]]
    )


@pytest.mark.parametrize("case", _params())
def test_case_table_sync(case: dict[str, Any]) -> None:
    """Each case gives the table's accepted ids in order and primary reasons through invoke."""
    recorder = EventRecorder()
    out = _retriever(case).invoke(case_query(case), config={"callbacks": [recorder]})
    _check(case, out, recorder)


@pytest.mark.parametrize("case", _params())
async def test_case_table_async(case: dict[str, Any]) -> None:
    """Each case gives the table's accepted ids in order and primary reasons through ainvoke."""
    recorder = EventRecorder()
    out = await _retriever(case).ainvoke(case_query(case), config={"callbacks": [recorder]})
    _check(case, out, recorder)


def test_every_case_is_run() -> None:
    """No case is skipped or expected to fail: every case converts and has no known gap."""
    assert [case_id(c) for c in GATE_CASES if adapter_gap(c)] == []


def test_without_lexical_key_the_core_computes_the_lexical_share() -> None:
    """Without lexical_key a lexical score in metadata is ignored: the core's own share decides."""
    [case] = [c for c in GATE_CASES if case_id(c) == "lexical_score_can_pass"]
    docs = [Document(id=i, page_content=t, metadata=m) for i, t, m in case_documents(case)]
    retriever = GatedRetriever(
        retrievers=[StaticRetriever(docs=docs)],
        gate=case_gate(case),
        scope=case_scope(case),
        score_key=SCORE_KEY,
    )
    assert retriever.invoke(case_query(case)) == []
