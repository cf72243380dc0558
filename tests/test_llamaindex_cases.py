"""The shared gate case table through the LlamaIndex adapter, sync and async (STYLE 8)."""

from __future__ import annotations

from collections.abc import Iterator
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
from llama_index.core.schema import NodeWithScore, TextNode
from llamaindex_support import EventCollector, StaticRetriever, collect_events

from llamaindex_recall_gate import GatedRetriever, RecallGatePostprocessor

RETRIEVE_PATH = "llama_index.retrieve"


def _params(path: str | None = None) -> list[Any]:
    out = []
    for case in GATE_CASES:
        gap = adapter_gap(case, path=path)
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        out.append(pytest.param(case, id=case_id(case), marks=marks))
    return out


def case_nodes(case: dict[str, Any]) -> list[TextNode]:
    """The case's hits as nodes, in rank order (id, text, metadata)."""
    return [TextNode(id_=i, text=t, metadata=m) for i, t, m in case_documents(case)]


def _retriever(case: dict[str, Any]) -> GatedRetriever:
    return GatedRetriever(
        StaticRetriever(case_nodes(case)),
        gate=case_gate(case),
        scope=case_scope(case),
        score_key=SCORE_KEY,
        lexical_key=LEXICAL_KEY,
    )


@pytest.fixture
def collector() -> Iterator[EventCollector]:
    with collect_events() as handler:
        yield handler


def _check(case: dict[str, Any], out: list[NodeWithScore], collector: EventCollector) -> None:
    [event] = collector.audits()
    record = event.record
    assert observed(record, case) == expected(case)
    assert [n.node.node_id for n in out] == expected(case)[0]
    assert record.input_count == len(case["hits"])
    texts = [h.get("body", "") for h in case["hits"]] + [h.get("title", "") for h in case["hits"]]
    assert_no_text(event.model_dump_json(), texts)


@pytest.mark.parametrize("case", _params(RETRIEVE_PATH))
def test_case_table_sync(case: dict[str, Any], collector: EventCollector) -> None:
    """Each case gives the table's accepted ids in order and primary reasons through retrieve()."""
    out = _retriever(case).retrieve(case_query(case))
    _check(case, out, collector)


@pytest.mark.parametrize("case", _params(RETRIEVE_PATH))
async def test_case_table_async(case: dict[str, Any], collector: EventCollector) -> None:
    """Each case gives the table's accepted ids in order and primary reasons through aretrieve()."""
    out = await _retriever(case).aretrieve(case_query(case))
    _check(case, out, collector)


@pytest.mark.parametrize("case", _params())
def test_case_table_postprocessor(case: dict[str, Any], collector: EventCollector) -> None:
    """The postprocessor gives the same answers as the retriever for every case."""
    post = RecallGatePostprocessor(
        scope=case_scope(case), gate=case_gate(case), score_key=SCORE_KEY, lexical_key=LEXICAL_KEY
    )
    nodes = [NodeWithScore(node=n, score=None) for n in case_nodes(case)]
    out = post.postprocess_nodes(nodes, query_str=case_query(case))
    _check(case, out, collector)


def test_every_case_is_run_or_has_a_precise_gap() -> None:
    """No case is skipped silently: each converts, or names its gap."""
    assert not {case_id(c) for c in GATE_CASES if adapter_gap(c)}
    assert {case_id(c) for c in GATE_CASES if adapter_gap(c, path=RETRIEVE_PATH)} == set()
