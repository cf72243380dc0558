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
        index.as_retriever(similarity_top_k=4), scope=SCOPE, gate=make_gate(), embedding=HashEmbedding()
    )


def test_retrieve_dispatches_one_audit_event_with_the_decisions(collector: EventCollector) -> None:
    """A retrieve() yields one event with accepted ids, reasons, counts, config hash and dry_run, tied to its span."""
    retriever = _retriever()
    with capture_audit() as records:
        retriever.retrieve(QUERY)
    [event] = collector.audits()
    [record] = records
    assert event.event == "recall" and event.component == "GatedRetriever"
    assert event.accepted_ids == ["right"]
    assert {r["id"]: r["reason"] for r in event.rejected} == {
        "superseded": "superseded",
        "draft": "not_approved",
        "foreign": "scope_mismatch",
    }
    assert event.counts == {"not_approved": 1, "scope_mismatch": 1, "superseded": 1}
    assert event.input_count == 4 and event.dry_run is False
    assert event.config_hash == make_gate().config_for(retriever._scope).config_hash()  # type: ignore[arg-type]
    assert event.query_hash == record.query_hash and event.query is None
    assert event.scope == record.scope
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
    assert [e.dry_run for e in collector.audits()] == [True]


def test_query_engine_event_belongs_to_the_query_trace(collector: EventCollector) -> None:
    """In a query engine the audit event comes after the inner retrieval and before the gated retrieval ends."""
    engine = RetrieverQueryEngine.from_args(_retriever(), llm=MockLLM())
    engine.query(QUERY)
    names = [type(e).__name__ for e in collector.events]
    audit_at = names.index("RecallGateAuditEvent")
    starts = [i for i, n in enumerate(names) if n == "RetrievalStartEvent"]
    ends = [i for i, n in enumerate(names) if n == "RetrievalEndEvent"]
    assert len(starts) == len(ends) == 2  # the gated retriever's and the wrapped one's
    assert starts[0] < starts[1] < ends[0] < audit_at < ends[1]
    assert names.index("QueryStartEvent") < audit_at < names.index("QueryEndEvent")


def test_postprocessor_dispatches_its_event(collector: EventCollector) -> None:
    """The postprocessor dispatches an audit event named after it, inside its own span."""
    from llama_index.core.schema import NodeWithScore

    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embedding=HashEmbedding())
    post.postprocess_nodes([NodeWithScore(node=n, score=0.1) for n in make_nodes()], query_str=QUERY)
    [event] = collector.audits()
    assert event.component == "RecallGatePostprocessor" and event.accepted_ids == ["right"]
    assert event.span_id is not None and "RecallGatePostprocessor" in event.span_id


def test_event_from_record_copies_every_field() -> None:
    """RecallGateAuditEvent.from_record keeps ids, reasons, counts, hashes and flags of the audit record."""
    result = _retriever().preview(QUERY)
    event = RecallGateAuditEvent.from_record(result.audit, component="x")
    assert event.accepted_ids == list(result.audit.accepted_ids)
    assert event.rejected == [
        {"id": r.id, "reason": r.reason, "reasons": list(r.reasons)} for r in result.audit.rejected
    ]
    assert (event.counts, event.config_hash, event.dry_run) == (
        result.audit.counts,
        result.audit.config_hash,
        True,
    )
