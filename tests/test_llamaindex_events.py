"""Audit through LlamaIndex instrumentation: one RecallGateAuditEvent per gate run, no memory text (R9)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from invariants import assert_no_text
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llamaindex_support import (
    CORPUS,
    QUERY,
    SCOPE,
    EventCollector,
    HashLlamaEmbedding,
    collect_events,
    make_gate,
    make_nodes,
)

from llamaindex_recall_gate import GatedRetriever, RecallGateAuditEvent, RecallGatePostprocessor
from shared_core import capture_audit
from shared_core.testing import HashEmbedding

TEXTS = [text for text, _ in CORPUS.values()]


@pytest.fixture
def collector() -> Iterator[EventCollector]:
    with collect_events() as handler:
        yield handler


def _retriever() -> GatedRetriever:
    index = VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding())
    return GatedRetriever(
        index.as_retriever(similarity_top_k=4), scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding()
    )


def test_retrieve_dispatches_one_audit_event_with_the_decisions(collector: EventCollector) -> None:
    """A retrieve() yields one event with accepted ids, reasons, counts, config hash and dry_run, tied to its span."""
    retriever = _retriever()
    with capture_audit() as records:
        retriever.retrieve(QUERY)
    [event] = collector.audits()
    [record] = records
    assert event.record == record and event.component == "GatedRetriever"
    audit = event.record
    assert audit.event == "recall" and audit.accepted_ids == ("right",)
    assert {r.id: r.reason for r in audit.rejected} == {
        "superseded": "superseded",
        "draft": "not_approved",
        "foreign": "scope_mismatch",
    }
    assert audit.counts == {"not_approved": 1, "scope_mismatch": 1, "superseded": 1}
    assert audit.input_count == 4 and audit.dry_run is False
    assert audit.config_hash == make_gate().config_for(retriever.scope).config_hash()  # type: ignore[arg-type]
    assert audit.query is None and audit.scope == {**SCOPE, "route_id": None}
    assert event.span_id is not None and event.span_id.startswith("GatedRetriever")
    assert event.class_name() == "RecallGateAuditEvent"
    assert event.model_dump()["class_name"] == "RecallGateAuditEvent"


def test_audit_event_holds_no_memory_text(collector: EventCollector) -> None:
    """Neither the event nor its JSON contains any memory title or body (nor the query text)."""
    _retriever().retrieve(QUERY)
    [event] = collector.audits()
    dumped = json.dumps(event.model_dump(mode="json"), ensure_ascii=False)
    assert_no_text(dumped, [*TEXTS, QUERY])


def test_preview_event_is_marked_dry_run(collector: EventCollector) -> None:
    """preview() dispatches an event with dry_run=True (R10)."""
    _retriever().preview(QUERY)
    assert [e.record.dry_run for e in collector.audits()] == [True]


def test_query_engine_event_belongs_to_the_query_trace(collector: EventCollector) -> None:
    """In a query engine the audit event sits inside the gated retrieval; the wrapped one emits no events."""
    engine = RetrieverQueryEngine.from_args(_retriever(), llm=MockLLM())
    engine.query(QUERY)
    names = [type(e).__name__ for e in collector.events]
    audit_at = names.index("RecallGateAuditEvent")
    starts = [i for i, n in enumerate(names) if n == "RetrievalStartEvent"]
    ends = [i for i, n in enumerate(names) if n == "RetrievalEndEvent"]
    assert len(starts) == len(ends) == 1  # the gated retriever's only: the wrapped one runs outside
    assert starts[0] < audit_at < ends[0]
    assert names.index("QueryStartEvent") < audit_at < names.index("QueryEndEvent")
    [end] = [e for e in collector.events if type(e).__name__ == "RetrievalEndEvent"]
    assert [n.node.node_id for n in end.nodes] == ["right"]  # type: ignore[attr-defined]


def test_postprocessor_dispatches_its_event(collector: EventCollector) -> None:
    """The postprocessor dispatches an audit event named after it, inside its own span."""
    from llama_index.core.schema import NodeWithScore

    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding())
    post.postprocess_nodes([NodeWithScore(node=n, score=0.1) for n in make_nodes()], query_str=QUERY)
    [event] = collector.audits()
    assert event.component == "RecallGatePostprocessor" and event.record.accepted_ids == ("right",)
    assert event.span_id is not None and "RecallGatePostprocessor" in event.span_id


def test_event_wraps_the_audit_record() -> None:
    """RecallGateAuditEvent holds the AuditRecord itself: every field, including ones added later, survives."""
    result = _retriever().preview(QUERY)
    record = result.audit.model_copy(update={"extra": {**result.audit.extra, "new_field": 1}})
    event = RecallGateAuditEvent(record=record, component="x")
    assert event.record is record and event.record.extra["new_field"] == 1
    assert RecallGateAuditEvent.model_validate(event.model_dump()).record == record
