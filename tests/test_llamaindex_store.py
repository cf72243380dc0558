"""GatedRetriever.from_store: a recall-gate MemoryStore as a LlamaIndex retriever (A2, R1, R12)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from llamaindex_support import EventCollector, collect_events
from stores import SCOPE, make_store, mem

from llamaindex_recall_gate import GatedRetriever
from shared_core import ConfigError, ScopeError
from shared_core.store import MemoryStore

QUERY = "when is the weekly newsletter published"


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = make_store()
    s.add(
        [
            mem("The weekly newsletter is published on Tuesday", title="Newsletter day"),
            mem("The weekly newsletter is published on Monday", title="Old newsletter day (superseded)"),
            mem("The weekly newsletter is published on Friday", title="Draft newsletter day", status="draft"),
            {**mem("The weekly newsletter is published on Sunday", title="Theirs"), "user_id": "u2"},
        ]
    )
    yield s
    s.close()


@pytest.fixture
def collector() -> Iterator[EventCollector]:
    with collect_events() as handler:
        yield handler


def test_from_store_returns_only_accepted_memories(store: MemoryStore) -> None:
    """Only the current, approved, in-scope memory comes back, as a node with the memory id and provenance."""
    [node] = GatedRetriever.from_store(store, scope=SCOPE).retrieve(QUERY)
    assert node.node.get_content() == "The weekly newsletter is published on Tuesday"
    prov = node.node.metadata["recall_gate"]
    assert prov["id"] == node.node.node_id and set(prov["channels"]) <= {"keyword", "vector"}
    assert node.score == pytest.approx(prov["semantic_score"])
    llm_text = node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "Newsletter day" in llm_text and "user_id" not in llm_text and "recall_gate" not in llm_text


async def test_from_store_async(store: MemoryStore) -> None:
    """aretrieve runs the store query off the event loop and gives the same result."""
    retriever = GatedRetriever.from_store(store, scope=SCOPE)
    assert [n.node.node_id for n in await retriever.aretrieve(QUERY)] == [
        n.node.node_id for n in retriever.retrieve(QUERY)
    ]


def test_from_store_in_a_query_engine(store: MemoryStore) -> None:
    """In RetrieverQueryEngine with MockLLM only the accepted memory reaches the prompt."""
    response = RetrieverQueryEngine.from_args(
        GatedRetriever.from_store(store, scope=SCOPE), llm=MockLLM()
    ).query(QUERY)
    assert len(response.source_nodes) == 1
    assert "Tuesday" in str(response) and not any(
        day in str(response) for day in ("Monday", "Friday", "Sunday")
    )


def test_from_store_scope_per_call_and_missing(store: MemoryStore) -> None:
    """The per-call scope selects the other user's memory; no scope raises ScopeError."""
    retriever = GatedRetriever.from_store(store)
    [theirs] = retriever.retrieve_scoped(QUERY, scope={**SCOPE, "user_id": "u2"})
    assert "Sunday" in theirs.node.get_content()
    with pytest.raises(ScopeError):
        retriever.retrieve(QUERY)


def test_from_store_audit_event_and_preview(store: MemoryStore, collector: EventCollector) -> None:
    """The store's gate run is dispatched as an audit event; preview marks it dry-run."""
    retriever = GatedRetriever.from_store(store, scope=SCOPE, k=1)
    retriever.retrieve(QUERY)
    result = retriever.preview(QUERY)
    events = collector.audits()
    assert [e.record.dry_run for e in events] == [False, True]
    assert list(events[0].record.accepted_ids) == result.accepted_ids and len(result.accepted_ids) == 1
    assert {r.reason for r in events[0].record.rejected} >= {"superseded", "not_approved"}


def test_store_options_are_exclusive(store: MemoryStore) -> None:
    """Wrapped-retriever options are refused together with a store."""
    with pytest.raises(ConfigError):
        GatedRetriever(store=store, score_key="score")
