"""Authority through the LangChain adapter: owner and trust from the filter, ids by owner, scopes that fail closed (issue 13)."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import chromadb
import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import NOW, SCOPE, HashEmbeddings, StaticRetriever, doc

from langchain_recall_gate import GatedRetriever, GatedVectorStore, RecallGateCompressor
from shared_core import GateConfig, RecallGate, ScopeError
from shared_core.store.ledger import ChromaLedger
from shared_core.testing import FrozenClock
from shared_core.write import WriteAction, WriteReason

BOB = {"user_id": "bob", "agent_id": "a1", "memory_space_id": "s1"}
CAROL = {"user_id": "carol", "agent_id": "a1", "memory_space_id": "s1"}
PAGE = "The cafeteria menu changes every Monday."


def gate() -> RecallGate:
    return RecallGate(GateConfig(min_score=0.1), clock=FrozenClock(NOW))


def filt(inner: InMemoryVectorStore | None = None, **kwargs: Any) -> GatedVectorStore:
    kwargs.setdefault("scope", SCOPE)
    kwargs.setdefault("gate", gate())
    return GatedVectorStore(inner if inner is not None else InMemoryVectorStore(HashEmbeddings()), **kwargs)


@pytest.mark.parametrize(
    "claims",
    [
        {"confirmations": 3},
        {"origin": "user_explicit"},
        {"tier": "confirmed"},
        {"cited": True, "verification_status": "verified"},
        {"evidence_count": 9},
    ],
    ids=["confirmations", "origin", "tier", "cited", "evidence"],
)
def test_trust_claims_in_metadata_never_raise_trust(claims: dict[str, Any]) -> None:
    """An untrusted page claiming trust in its metadata is still held for review, never written (W3)."""
    inner = InMemoryVectorStore(HashEmbeddings())
    [d] = filt(inner, origin="external_unverified").add_documents_with_decisions(
        [Document(page_content=PAGE, metadata=claims)]
    )
    assert d.action is WriteAction.QUARANTINE and inner.store == {}


def test_metadata_may_lower_trust() -> None:
    """A document may claim less than the filter grants: an agent's guess under a user filter stays tentative."""
    inner = InMemoryVectorStore(HashEmbeddings())
    vs = filt(inner, origin="user_explicit", cited=True)
    [d] = vs.add_documents_with_decisions([Document(page_content=PAGE, metadata={"origin": "agent_summary"})])
    assert d.stored and d.record is not None and d.record.origin.value == "agent_summary"
    assert d.record.tier.value == "tentative"


def test_shared_visibility_needs_the_filter_to_allow_it() -> None:
    """visibility: shared in metadata is lowered to private unless the filter allows shared writes (R2)."""
    inner = InMemoryVectorStore(HashEmbeddings())
    [d] = filt(inner, origin="user_explicit").add_documents_with_decisions(
        [Document(page_content=PAGE, metadata={"visibility": "shared"})]
    )
    assert d.stored and WriteReason.TRUST_LOWERED in d.reasons
    assert filt(inner, scope=BOB).similarity_search("cafeteria menu", k=3) == []
    sharing = filt(InMemoryVectorStore(HashEmbeddings()), origin="user_explicit", allow_shared=True)
    sharing.add_documents([Document(page_content=PAGE, metadata={"visibility": "shared"})])
    assert [x.page_content for x in filt(sharing.inner, scope=BOB).similarity_search("cafeteria menu", k=3)] == [PAGE]  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["user_id", "agent_id", "memory_space_id", "route_id"])
def test_metadata_naming_another_owner_is_scope_mismatch(field: str) -> None:
    """Any scope field of another owner in metadata rejects the document; nothing is planted (R1)."""
    inner = InMemoryVectorStore(HashEmbeddings())
    [d] = filt(inner, origin="user_explicit").add_documents_with_decisions(
        [Document(page_content=PAGE, metadata={field: "someone-else"})]
    )
    assert d.reasons == (WriteReason.SCOPE_MISMATCH,) and d.detail == (f"{field}: not the caller's",)
    assert inner.store == {}


def test_ids_belong_to_their_owner() -> None:
    """Bob can neither overwrite nor delete Alice's memory by id, and cannot tell it from a missing id (issue 13)."""
    inner = InMemoryVectorStore(HashEmbeddings())
    alice = filt(inner, origin="user_explicit")
    [mid] = alice.add_documents([Document(id="note-1", page_content=PAGE)])
    bob = filt(inner, scope=BOB, origin="user_explicit")
    [over] = bob.add_documents_with_decisions([Document(id="note-1", page_content="Bob was here.")])
    assert over.action is WriteAction.REJECT and over.reasons == (WriteReason.NOT_OWNER,)
    assert bob.delete([mid]) is False and bob.delete(["no-such-id"]) is False
    assert inner.store[mid]["text"] == PAGE
    assert alice.delete([mid]) is True and inner.store == {}


def test_persistent_ledger_keeps_quarantine_and_tombstones_across_instances() -> None:
    """With a ChromaLedger, a new filter over the same store sees the same quarantine and tombstones (W6, L2)."""
    client = chromadb.EphemeralClient()
    prefix = f"lg{uuid.uuid4().hex[:8]}"
    inner = InMemoryVectorStore(HashEmbeddings())
    first = filt(inner, ledger=ChromaLedger(client, prefix=prefix))
    [held] = first.add_documents_with_decisions([Document(page_content="the user may like tea")])
    trusted = filt(inner, origin="user_explicit", ledger=ChromaLedger(client, prefix=prefix))
    trusted.add_documents([Document(page_content=PAGE, metadata={"source_record_id": "ticket-9"})])
    assert trusted.forget("ticket-9")["memories"] == 1
    second = filt(inner, origin="user_explicit", ledger=ChromaLedger(client, prefix=prefix))
    assert [q["id"] for q in second.quarantine_list()] == [held.id]
    [again] = second.add_documents_with_decisions([Document(page_content=PAGE, metadata={"source_record_id": "ticket-9"})])
    assert again.action is WriteAction.REJECT and again.reasons[-1] is WriteReason.TOMBSTONED


def test_retriever_never_falls_back_to_its_constructor_scope() -> None:
    """Once a config scope was served, a call that lost it (a worker thread) raises ScopeError (issue 13)."""
    retriever = GatedRetriever(
        retrievers=[StaticRetriever(docs=[doc("mine"), doc("bobs", user_id="bob")])],
        scope=SCOPE,
        gate=gate(),
        score_key="score",
    )
    assert [d.id for d in retriever.invoke("note")] == ["mine"]  # a fixed identity: fine
    assert [d.id for d in retriever.invoke("note", config={"configurable": {"scope": BOB}})] == ["bobs"]
    with ThreadPoolExecutor(1) as pool, pytest.raises(ScopeError, match="does not fall back"):
        pool.submit(retriever.invoke, "note").result()
    assert [d.id for d in retriever.invoke("note", scope=SCOPE)] == ["mine"]  # explicit scope: fine


def test_compressor_honours_configurable_scope_inside_a_chain() -> None:
    """RecallGateCompressor uses config["configurable"]["scope"] of the running chain, not its constructor's."""
    compressor = RecallGateCompressor(scope=SCOPE, gate=gate(), score_key="score")
    ccr = ContextualCompressionRetriever(
        base_compressor=compressor,
        base_retriever=StaticRetriever(docs=[doc("mine"), doc("bobs", user_id="bob")]),
    )
    chain = ccr | RunnableLambda(lambda docs: [d.id for d in docs])
    assert chain.invoke("note") == ["mine"]
    assert chain.invoke("note", config={"configurable": {"scope": BOB}}) == ["bobs"]
    assert chain.invoke("note", config={"configurable": {"scope": CAROL}}) == []
    with pytest.raises(ScopeError):
        compressor.compress_documents([doc("mine")], "note")  # no config any more: no fallback


def test_vector_store_retriever_config_scope_and_fail_closed() -> None:
    """as_retriever() takes configurable.scope and then never falls back to the store's constructor scope."""
    inner = InMemoryVectorStore(HashEmbeddings())
    filt(inner, origin="user_explicit").add_documents([Document(page_content=PAGE)])
    filt(inner, scope=BOB, origin="user_explicit").add_documents([Document(page_content="Bob's cafeteria menu.")])
    retriever = filt(inner).as_retriever()
    assert [d.page_content for d in retriever.invoke("cafeteria menu")] == [PAGE]
    cfg: Any = {"configurable": {"scope": BOB}}
    assert [d.page_content for d in retriever.invoke("cafeteria menu", config=cfg)] == ["Bob's cafeteria menu."]
    with pytest.raises(ScopeError):
        retriever.invoke("cafeteria menu")
