"""The LangChain faces of the memory store: GatedRetriever.from_store and GatedVectorStore.from_store."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_doubles import EventRecorder
from langchain_tests.integration_tests import RetrieversIntegrationTests
from stores import SCOPE, make_store, mem

from langchain_recall_gate import AUDIT_EVENT, PROVENANCE_KEY, GatedRetriever, GatedVectorStore
from shared_core import RecallGate, ScopeError
from shared_core.store import MemoryStore
from shared_core.write import WriteAction, WriteReason

OTHER = {"user_id": "u2", "agent_id": "a1", "memory_space_id": "s1"}
SECRET = "sk-proj-Qw3rTy8uIoP1aSdFgHjKlZxCvBnM0987654321abcd"


@pytest.fixture
def store() -> Iterator[MemoryStore]:
    s = make_store()
    s.add(
        [
            mem("Weekly newsletter is published on Tuesdays.", "Newsletter"),
            mem("Weekly newsletter was published on Mondays.", "Newsletter (superseded)"),
            mem("Draft: newsletter on Fridays.", "Newsletter draft", status="draft"),
            mem("Newsletter for u2 goes out on Sundays.", "Newsletter", user_id="u2"),
        ]
    )
    yield s
    s.close()


def test_from_store_returns_only_accepted_hits_with_provenance(store: MemoryStore) -> None:
    """The store's hybrid query and gate decide; accepted hits come back as documents with provenance."""
    recorder = EventRecorder()
    retriever = GatedRetriever.from_store(store, scope=SCOPE)
    out = retriever.invoke("weekly newsletter published", config={"callbacks": [recorder]})
    assert [d.page_content for d in out] == ["Weekly newsletter is published on Tuesdays."]
    prov = out[0].metadata[PROVENANCE_KEY]
    assert set(prov["channels"]) <= {"keyword", "vector"} and prov["channels"]
    assert out[0].metadata["title"] == "Newsletter" and out[0].metadata["user_id"] == "u1"
    [(name, data)] = recorder.events
    assert name == AUDIT_EVENT and "superseded" in data["counts"] and "not_approved" in data["counts"]


async def test_from_store_async_and_per_call_scope(store: MemoryStore) -> None:
    """ainvoke runs the store query in a thread; the per-call scope wins; no scope raises."""
    retriever = GatedRetriever.from_store(store)
    with pytest.raises(ScopeError):
        await retriever.ainvoke("newsletter")
    out = await retriever.ainvoke("newsletter sundays", scope=OTHER)
    assert [d.page_content for d in out] == ["Newsletter for u2 goes out on Sundays."]
    events = [
        e
        async for e in retriever.astream_events(
            "newsletter", version="v2", config={"configurable": {"scope": SCOPE}}
        )
    ]
    assert [e["name"] for e in events if e["event"] == "on_custom_event"] == [AUDIT_EVENT]


def test_from_store_k_and_dry_run(store: MemoryStore) -> None:
    """k caps the result; a dry run is flagged in the audit and changes nothing."""
    store.add([mem(f"Newsletter fact number {i}.", "Newsletter") for i in range(4)])
    recorder = EventRecorder()
    retriever = GatedRetriever.from_store(store, scope=SCOPE, k=2, dry_run=True)
    assert len(retriever.invoke("newsletter", config={"callbacks": [recorder]})) == 2
    assert recorder.events[0][1]["dry_run"] is True


def test_store_retriever_refuses_a_second_gate(store: MemoryStore) -> None:
    """A store applies its own gate: passing another one is a misuse."""
    with pytest.raises(ValueError):
        GatedRetriever(store=store, gate=RecallGate(), scope=SCOPE)


def test_gated_vectorstore_over_the_store_writes_through_the_write_gate(store: MemoryStore) -> None:
    """add_documents goes through the store's write gate; a secret is rejected, PII masked (W1, W4)."""
    vs = GatedVectorStore.from_store(store, scope=SCOPE, origin="user_explicit", cited=True)
    secret, pii = vs.add_documents_with_decisions(
        [
            Document(page_content=f"deploy key {SECRET}"),
            Document(
                page_content="Invoices go to jane.doe@example.com monthly.", metadata={"title": "Billing"}
            ),
        ]
    )
    ids = [pii.id]
    assert secret.action is WriteAction.REJECT and pii.stored and WriteReason.PII_MASKED in pii.reasons
    assert ids == [pii.id]
    [doc] = vs.get_by_ids(ids)
    assert "jane.doe@example.com" not in doc.page_content and doc.metadata["title"] == "Billing"
    found = vs.similarity_search("invoices monthly", k=2)
    assert [d.id for d in found] == ids


def test_gated_vectorstore_over_the_store_deletes_with_tombstones(store: MemoryStore) -> None:
    """delete(ids) over a memory store tombstones the ids: the same memory cannot come back (L2)."""
    vs = GatedVectorStore.from_store(store, scope=SCOPE, origin="user_explicit", cited=True)
    ids = vs.add_documents([Document(id="m-forget", page_content="Temporary door code policy.")])
    assert ids == ["m-forget"]
    vs.delete(ids)
    assert vs.similarity_search("door code policy", k=2) == []
    [again] = vs.add_documents_with_decisions([Document(id="m-forget", page_content="Temporary door code policy.")])
    assert again.action is WriteAction.REJECT and again.reasons[-1] is WriteReason.TOMBSTONED
    with pytest.raises(ValueError):
        vs.delete(None)


async def test_gated_vectorstore_over_the_store_async(store: MemoryStore) -> None:
    """The async paths over a memory store run the store in a worker thread."""
    vs = GatedVectorStore.from_store(store, scope=SCOPE, origin="user_explicit", cited=True)
    ids = await vs.aadd_documents([Document(page_content="Standup is at 9:30 every day.")])
    found = await vs.asimilarity_search_with_score("standup every day", k=1)
    assert [d.id for d, _ in found] == ids and -1.0 <= found[0][1] <= 1.0
    assert [d.id for d in await vs.aget_by_ids(ids)] == ids
    await vs.adelete(ids)
    assert await vs.asimilarity_search("standup every day", k=1) == []


class TestStoreRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' retriever suite over GatedRetriever.from_store (every stored memory acceptable)."""

    @pytest.fixture(autouse=True)
    def _store(self) -> Iterator[None]:
        self._memory = make_store()
        self._memory.add([mem(f"Posting rule {i}: posts go out at {8 + i}:00.", "Posting") for i in range(6)])
        yield
        self._memory.close()

    @property
    def retriever_constructor(self) -> type[GatedRetriever]:
        return GatedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"store": self._memory, "scope": SCOPE, "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "posting rule posts"
