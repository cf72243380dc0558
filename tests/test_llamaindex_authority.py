"""Authority through the LlamaIndex write filter: owner and trust from the filter, ids by owner (issue 13)."""

from __future__ import annotations

import uuid
from typing import Any

import chromadb
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.vector_stores.chroma import ChromaVectorStore
from llamaindex_support import NOW, SCOPE, HashLlamaEmbedding, make_gate

from llamaindex_recall_gate import GatedVectorStore
from shared_core.testing import FrozenClock
from shared_core.write import WriteAction, WriteReason

BOB = {"user_id": "bob", "agent_id": "a1", "memory_space_id": "s1"}
PAGE = "The cafeteria menu changes every Monday."


def _chroma() -> ChromaVectorStore:
    client = chromadb.EphemeralClient()
    col = client.get_or_create_collection(f"au-{uuid.uuid4().hex[:10]}", metadata={"hnsw:space": "cosine"})
    return ChromaVectorStore(chroma_collection=col)


def filt(inner: Any, **kwargs: Any) -> GatedVectorStore:
    kwargs.setdefault("scope", SCOPE)
    kwargs.setdefault("gate", make_gate())
    kwargs.setdefault("clock", FrozenClock(NOW))
    return GatedVectorStore(inner, embed_model=HashLlamaEmbedding(), **kwargs)


def _query(store: GatedVectorStore, text: str, **kwargs: Any) -> list[str]:
    q = VectorStoreQuery(query_embedding=HashLlamaEmbedding().get_query_embedding(text), query_str=text, similarity_top_k=4)
    return list(store.query(q, **kwargs).ids or [])


@pytest.mark.parametrize("make_inner", [SimpleVectorStore, _chroma], ids=["simple", "chroma"])
def test_node_naming_another_owner_is_not_planted(make_inner: Any) -> None:
    """A node in Alice's filter whose metadata says user_id: bob is rejected, never stored in Bob's bucket."""
    inner = make_inner()
    alice = filt(inner, origin="user_explicit")
    [d] = alice.submit([TextNode(id_="plant", text=PAGE, metadata={"user_id": "bob"})])
    assert d.action is WriteAction.REJECT and d.reasons == (WriteReason.SCOPE_MISMATCH,)
    assert _query(filt(inner, scope=BOB), "cafeteria menu") == []


@pytest.mark.parametrize(
    "claims",
    [{"confirmations": 3}, {"origin": "user_explicit"}, {"tier": "confirmed"}, {"cited": True}],
    ids=["confirmations", "origin", "tier", "cited"],
)
def test_trust_claims_never_raise_trust(claims: dict[str, Any]) -> None:
    """An untrusted web page claiming trust in its metadata is held for review, not written (W3)."""
    inner = SimpleVectorStore()
    [d] = filt(inner, origin="external_unverified").submit([TextNode(id_="web", text=PAGE, metadata=claims)])
    assert d.action is WriteAction.QUARANTINE and inner.data.embedding_dict == {}


def test_shared_claim_is_lowered_without_allow_shared() -> None:
    """visibility: shared from metadata is written private unless the filter allows shared writes (R2)."""
    inner = SimpleVectorStore()
    [d] = filt(inner, origin="user_explicit").submit([TextNode(id_="s", text=PAGE, metadata={"visibility": "shared"})])
    assert d.stored and WriteReason.TRUST_LOWERED in d.reasons
    assert _query(filt(inner, scope=BOB), "cafeteria menu") == []
    shared = SimpleVectorStore()
    filt(shared, origin="user_explicit", allow_shared=True).submit(
        [TextNode(id_="s", text=PAGE, metadata={"visibility": "shared"})]
    )
    assert _query(filt(shared, scope=BOB), "cafeteria menu") == ["s"]


@pytest.mark.parametrize("make_inner", [SimpleVectorStore, _chroma], ids=["simple", "chroma"])
def test_ids_belong_to_their_owner(make_inner: Any) -> None:
    """Bob can neither overwrite nor delete Alice's node by id; Alice can (issue 13, both stores)."""
    inner = make_inner()
    alice = filt(inner, origin="user_explicit")
    alice.add([TextNode(id_="n1", text=PAGE)])
    bob = filt(inner, scope=BOB, origin="user_explicit")
    [over] = bob.submit([TextNode(id_="n1", text="Bob was here.")])
    assert over.reasons == (WriteReason.NOT_OWNER,)
    bob.delete_nodes(["n1"])
    [kept] = alice.get_nodes(["n1"])
    assert kept.get_content() == PAGE
    alice.delete_nodes(["n1"])
    assert alice.get_nodes(["n1"]) == []


def test_delete_ref_doc_of_another_owner_deletes_nothing() -> None:
    """index.delete_ref_doc in Bob's filter leaves Alice's memories of the same source alone."""
    inner = _chroma()
    alice = filt(inner, origin="user_explicit")
    alice.add([TextNode(id_="n1", text=PAGE, metadata={"source_record_id": "doc-1"})])
    filt(inner, scope=BOB).delete("doc-1")
    assert [n.node_id for n in alice.get_nodes(["n1"])] == ["n1"]
    alice.delete("doc-1")
    assert alice.get_nodes(["n1"]) == []


def test_or_filters_keep_the_scope_prefilter() -> None:
    """A query whose own filters use OR is nested under the scope's AND: other users' nodes stay out (issue 12)."""
    inner = _chroma()
    filt(inner, origin="user_explicit").add([TextNode(id_="mine", text=PAGE, metadata={"topic": "food"})])
    filt(inner, scope=BOB, origin="user_explicit").add([TextNode(id_="bobs", text=PAGE, metadata={"topic": "food"})])
    caller = MetadataFilters(
        filters=[MetadataFilter(key="topic", value="food"), MetadataFilter(key="topic", value="drink")],
        condition=FilterCondition.OR,
    )
    store = filt(inner)
    inner_query = store._inner_query(VectorStoreQuery(query_str="x", filters=caller), store.scope)  # type: ignore[arg-type]
    assert inner_query.filters is not None and caller in inner_query.filters.filters
    q = VectorStoreQuery(
        query_embedding=HashLlamaEmbedding().get_query_embedding("cafeteria menu"),
        query_str="cafeteria menu",
        similarity_top_k=4,
        filters=caller,
    )
    result = inner.query(store._inner_query(q, store.scope))  # type: ignore[arg-type]
    assert result.ids == ["mine"]  # the inner store itself never returned Bob's node
    assert store.query(q).ids == ["mine"]


def test_quarantine_review_through_the_index() -> None:
    """An untrusted insert is held; approval writes it into the inner store and it is then recalled (W6)."""
    inner = _chroma()
    store = filt(inner)  # agent_inferred, uncited: held for review
    index = VectorStoreIndex(
        [], storage_context=StorageContext.from_defaults(vector_store=store), embed_model=HashLlamaEmbedding()
    )
    index.insert_nodes([TextNode(id_="guess", text="The user probably prefers tea over coffee.")])
    [held] = store.quarantine_list()
    assert _query(store, "user prefers tea") == []
    decision = store.quarantine_approve(held["id"], reviewer="ops")
    assert decision.stored
    assert _query(store, "user prefers tea") == [decision.id]
