"""The LangChain and LlamaIndex adapters decide exactly alike, and like the core gate (P1, STYLE 8)."""

from __future__ import annotations

import asyncio
import inspect
import uuid
from typing import Any

import chromadb
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
)
from conftest import GATE_CASES
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_doubles import EventRecorder, HashEmbeddings
from langchain_doubles import StaticRetriever as LangChainStatic
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.vector_stores.chroma import ChromaVectorStore
from llamaindex_support import NOW, SCOPE, HashLlamaEmbedding, collect_events
from llamaindex_support import StaticRetriever as LlamaStatic

import langchain_recall_gate
import llamaindex_recall_gate
from shared_core import AuditRecord, ConfigError, GateConfig, Origin, RecallGate, Tier
from shared_core.store import MemoryStore
from shared_core.store.chroma import collection_name
from shared_core.testing import FrozenClock, HashEmbedding
from shared_core.timeutil import parse_datetime

Outcome = tuple[list[str], list[tuple[str, str, tuple[str, ...]]], list[dict[str, Any]]]


def _outcome(record: AuditRecord, provenance: list[dict[str, Any]]) -> Outcome:
    """Accepted ids in order, (id, primary reason, all reasons) per rejection in order, provenance."""
    return (
        list(record.accepted_ids),
        [(r.id, r.reason, tuple(r.reasons)) for r in record.rejected],
        provenance,
    )


def via_langchain(case: dict[str, Any], *, run_async: bool = False) -> Outcome:
    docs = [Document(id=i, page_content=t, metadata=m) for i, t, m in case_documents(case)]
    retriever = langchain_recall_gate.GatedRetriever(
        retrievers=[LangChainStatic(docs=docs)],
        gate=case_gate(case),
        scope=case_scope(case),
        score_key=SCORE_KEY,
        lexical_key=LEXICAL_KEY,
    )
    recorder = EventRecorder()
    config: Any = {"callbacks": [recorder]}
    if run_async:
        out = asyncio.run(retriever.ainvoke(case_query(case), config=config))
    else:
        out = retriever.invoke(case_query(case), config=config)
    [(_, data)] = recorder.events
    assert [d.id for d in out] == list(AuditRecord.model_validate(data).accepted_ids)
    return _outcome(AuditRecord.model_validate(data), [_comparable(d.metadata["recall_gate"]) for d in out])


def via_llamaindex(case: dict[str, Any], *, run_async: bool = False) -> Outcome:
    nodes = [TextNode(id_=i, text=t, metadata=m) for i, t, m in case_documents(case)]
    retriever = llamaindex_recall_gate.GatedRetriever(
        LlamaStatic(nodes),
        gate=case_gate(case),
        scope=case_scope(case),
        score_key=SCORE_KEY,
        lexical_key=LEXICAL_KEY,
    )
    with collect_events() as collector:
        if run_async:
            out = asyncio.run(retriever.aretrieve(case_query(case)))
        else:
            out = retriever.retrieve(case_query(case))
    [event] = collector.audits()
    record = event.record
    assert [n.node.node_id for n in out] == list(record.accepted_ids)
    return _outcome(record, [_comparable(n.node.metadata["recall_gate"]) for n in out])


def via_core(case: dict[str, Any]) -> Outcome:
    result = case_gate(case).evaluate(
        case["hits"], scope=case["scope"], now=parse_datetime(case["now"]), query=case["query"]
    )
    return _outcome(result.audit, [])


def _comparable(provenance: dict[str, Any]) -> dict[str, Any]:
    """Provenance without the channel names (each adapter names its wrapped retrievers its own way)."""
    return {k: v for k, v in provenance.items() if k != "channels"}


def _params() -> list[Any]:
    """Every case (a gap of LlamaIndex's retrieve() path would be listed in adapter_cases.PATH_GAPS)."""
    out = []
    for case in GATE_CASES:
        gap = adapter_gap(case, path="llama_index.retrieve")
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        out.append(pytest.param(case, id=case_id(case), marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
@pytest.mark.parametrize("run_async", [False, True], ids=["sync", "async"])
def test_adapters_agree(case: dict[str, Any], run_async: bool) -> None:
    """Both adapters accept the same ids in the same order, reject with the same reasons, and give the same provenance."""
    assert via_langchain(case, run_async=run_async) == via_llamaindex(case, run_async=run_async)


@pytest.mark.parametrize("case", _params())
def test_adapters_agree_with_the_core_gate(case: dict[str, Any]) -> None:
    """Through either adapter, accepted ids and rejection reasons equal the core gate's on the table's hits."""
    core_ids, core_rejected, _ = via_core(case)
    for ids, rejected, _ in (via_langchain(case), via_llamaindex(case)):
        assert (ids, rejected) == (core_ids, core_rejected)


# -- one codec: a collection written through one face is read through the others (P1, issue 12) ----


def _space(prefix: str) -> tuple[Any, MemoryStore, str]:
    """A chromadb client, a MemoryStore on it, and the collection name of its space s1."""
    client = chromadb.EphemeralClient()
    store = MemoryStore(
        client=client,
        collection_prefix=f"{prefix}{uuid.uuid4().hex[:8]}",
        embedding=HashEmbedding(),
        config=GateConfig(min_score=0.2),
        clock=FrozenClock(NOW),
    )
    return client, store, collection_name(store.prefix, SCOPE["memory_space_id"])


def _langchain_store(client: Any, name: str) -> langchain_recall_gate.GatedVectorStore:
    chroma = Chroma(
        client=client,
        collection_name=name,
        embedding_function=HashEmbeddings(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    return langchain_recall_gate.GatedVectorStore(
        chroma, scope=SCOPE, origin="user_explicit", gate=_gate(), clock=FrozenClock(NOW)
    )


def _llama_store(client: Any, name: str) -> llamaindex_recall_gate.GatedVectorStore:
    collection = client.get_or_create_collection(name, metadata={"hnsw:space": "cosine"})
    return llamaindex_recall_gate.GatedVectorStore(
        ChromaVectorStore(chroma_collection=collection),
        embed_model=HashLlamaEmbedding(),
        scope=SCOPE,
        origin="user_explicit",
        gate=_gate(),
        clock=FrozenClock(NOW),
    )


def _gate() -> RecallGate:
    return RecallGate(GateConfig(min_score=0.2), clock=FrozenClock(NOW))


def _read_everywhere(client: Any, store: MemoryStore, name: str) -> dict[str, list[str]]:
    """What each face returns for the query, in the writer's scope and in another user's."""
    lc = _langchain_store(client, name)
    li = _llama_store(client, name)
    index = VectorStoreIndex.from_vector_store(li, embed_model=HashLlamaEmbedding())
    store.refresh()
    other = {**SCOPE, "user_id": "u2"}
    return {
        "langchain": [d.id or "" for d in lc.similarity_search(INTEROP_QUERY, k=3)],
        "llamaindex": [n.node.node_id for n in index.as_retriever(similarity_top_k=3).retrieve(INTEROP_QUERY)],
        "memory_store": store.query(INTEROP_QUERY, scope=SCOPE).accepted_ids,
        "other_user": [
            *(d.id or "" for d in lc.similarity_search(INTEROP_QUERY, k=3, scope=other)),
            *store.query(INTEROP_QUERY, scope=other).accepted_ids,
        ],
    }


INTEROP_QUERY = "when does the weekly newsletter go out"
INTEROP_TEXT = "The weekly newsletter goes out on Tuesday mornings"


def test_written_through_langchain_read_through_llamaindex_and_the_memory_store() -> None:
    """A memory written by the LangChain write filter into Chroma is the same memory for LlamaIndex and MemoryStore."""
    client, store, name = _space("lc")
    [mid] = _langchain_store(client, name).add_documents(
        [Document(page_content=INTEROP_TEXT, metadata={"title": "Newsletter", "team": "ops"})]
    )
    assert _read_everywhere(client, store, name) == {
        "langchain": [mid],
        "llamaindex": [mid],
        "memory_store": [mid],
        "other_user": [],
    }
    [record] = store.get([mid], memory_space_id="s1")
    assert (record.title, record.body, record.user_id, record.origin) == ("Newsletter", INTEROP_TEXT, "u1", Origin.USER_EXPLICIT)
    store.close()


def test_written_through_llamaindex_read_through_langchain_and_the_memory_store() -> None:
    """A node written by the LlamaIndex write filter into Chroma is the same memory for LangChain and MemoryStore."""
    client, store, name = _space("li")
    li = _llama_store(client, name)
    index = VectorStoreIndex(
        [], storage_context=StorageContext.from_defaults(vector_store=li), embed_model=HashLlamaEmbedding()
    )
    index.insert_nodes([TextNode(id_="n-news", text=INTEROP_TEXT, metadata={"title": "Newsletter"})])
    assert _read_everywhere(client, store, name) == {
        "langchain": ["n-news"],
        "llamaindex": ["n-news"],
        "memory_store": ["n-news"],
        "other_user": [],
    }
    [record] = store.get(["n-news"], memory_space_id="s1")
    assert (record.title, record.body, record.tier) == ("Newsletter", INTEROP_TEXT, Tier.CONFIRMED)
    store.close()


def test_written_through_the_memory_store_read_through_both_adapters() -> None:
    """What MemoryStore writes, both adapters' write filters read (and dedup against)."""
    client, store, name = _space("ms")
    [decision] = store.add([{**SCOPE, "title": "Newsletter", "body": INTEROP_TEXT, "origin": "user_explicit"}])
    mid = decision.id or ""
    assert _read_everywhere(client, store, name) == {
        "langchain": [mid],
        "llamaindex": [mid],
        "memory_store": [mid],
        "other_user": [],
    }
    [again] = _langchain_store(client, name).add_documents_with_decisions(
        [Document(page_content=INTEROP_TEXT, metadata={"title": "Newsletter"})]
    )
    assert again.action.value == "merge" and again.id == mid  # the same memory, seen by the write gate
    store.close()


# -- the same option names, defaults and errors for the same concept (issue 12) --------------------

SHARED_RETRIEVER_OPTIONS = {
    "store": None,
    "scope": None,
    "gate": None,
    "weights": None,
    "names": None,
    "fusion": None,
    "score_key": None,
    "lexical_key": None,
    "id_key": None,
    "k": None,
    "candidates": None,
    "dry_run": False,
    "provenance": True,
    "plain_documents": "reject",
}
SHARED_WRITE_FILTER_OPTIONS = {
    "store": None,
    "scope": None,
    "origin": Origin.AGENT_INFERRED,
    "tier": None,
    "cited": False,
    "allow_shared": False,
    "write_defaults": None,
    "write_policy": None,
    "ledger": None,
    "sinks": (),
    "clock": None,
    "gate": None,
    "fetch_k": 20,
    "prefilter": True,
    "provenance": True,
    "plain_documents": "reject",
}


def _defaults(cls: Any) -> dict[str, Any]:
    params = inspect.signature(cls.__init__).parameters
    return {n: p.default for n, p in params.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_write_filters_share_option_names_and_defaults() -> None:
    """Both GatedVectorStores take the same options with the same defaults (embedding: each ecosystem's name)."""
    for cls, embedding in (
        (langchain_recall_gate.GatedVectorStore, "embedding"),
        (llamaindex_recall_gate.GatedVectorStore, "embed_model"),
    ):
        params = _defaults(cls)
        assert {k: params[k] for k in SHARED_WRITE_FILTER_OPTIONS} == SHARED_WRITE_FILTER_OPTIONS
        assert embedding in params


def test_retrievers_share_option_names_and_defaults() -> None:
    """Both GatedRetrievers take the same options with the same defaults."""
    li = _defaults(llamaindex_recall_gate.GatedRetriever)
    assert {k: li[k] for k in SHARED_RETRIEVER_OPTIONS} == SHARED_RETRIEVER_OPTIONS
    lc = langchain_recall_gate.GatedRetriever.model_fields
    assert {k: lc[k].default for k in SHARED_RETRIEVER_OPTIONS} == SHARED_RETRIEVER_OPTIONS
    assert "embedding" in lc and "embed_model" in li


@pytest.mark.parametrize(
    ("wrapped", "misuse"),
    [
        (False, {}),
        (True, {"k": 0}),
        (True, {"weights": [1.0, 2.0]}),
        (True, {"candidates": 5}),
        (True, {"plain_documents": "owned"}),
        (True, {"plain_documents": "maybe", "scope": SCOPE}),
    ],
    ids=["neither", "k0", "weights", "candidates", "owned-without-scope", "unknown-plain"],
)
def test_retriever_misuse_is_the_same_config_error(wrapped: bool, misuse: dict[str, Any]) -> None:
    """The same misuse raises ConfigError in both adapters."""
    with pytest.raises(ConfigError):
        if wrapped:
            langchain_recall_gate.GatedRetriever(retrievers=[LangChainStatic(docs=[])], **misuse)
        else:
            langchain_recall_gate.GatedRetriever(**misuse)
    with pytest.raises(ConfigError):
        llamaindex_recall_gate.GatedRetriever(LlamaStatic([]) if wrapped else None, **misuse)


def test_store_with_wrapped_options_is_the_same_config_error() -> None:
    """Wrapped-retriever options next to a MemoryStore raise ConfigError in both adapters (never ignored)."""
    _, store, _ = _space("cfg")
    with pytest.raises(ConfigError, match="score_key"):
        langchain_recall_gate.GatedRetriever(store=store, score_key="s")
    with pytest.raises(ConfigError, match="score_key"):
        llamaindex_recall_gate.GatedRetriever(store=store, score_key="s")
    with pytest.raises(ConfigError, match="embedding"):
        langchain_recall_gate.GatedRetriever(store=store, embedding=HashEmbeddings())
    with pytest.raises(ConfigError, match="embed_model"):
        llamaindex_recall_gate.GatedRetriever(store=store, embed_model=HashLlamaEmbedding())
    store.close()
