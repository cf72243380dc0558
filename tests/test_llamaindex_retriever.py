"""GatedRetriever: a drop-in LlamaIndex retriever whose results passed the recall gate (A2, R1, R12)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import MetadataMode, TextNode
from llama_index.retrievers.bm25 import BM25Retriever
from llamaindex_support import (
    CORPUS,
    OTHER_SCOPE,
    QUERY,
    SCOPE,
    HashLlamaEmbedding,
    StaticRetriever,
    make_gate,
    make_nodes,
)

from llamaindex_recall_gate import GatedRetriever, recall_scope
from shared_core import ConfigError, ScopeError
from shared_core.testing import HashEmbedding

WRONG = ("superseded", "draft", "foreign")


@pytest.fixture
def index() -> VectorStoreIndex:
    return VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding())


def gated(inner: BaseRetriever | list[BaseRetriever], **kwargs: Any) -> GatedRetriever:
    kwargs.setdefault("scope", SCOPE)
    kwargs.setdefault("gate", make_gate())
    kwargs.setdefault("embed_model", HashEmbedding())
    return GatedRetriever(inner, **kwargs)


def test_precondition_wrong_memories_rank_above_the_right_one(index: VectorStoreIndex) -> None:
    """Without the gate, the superseded, draft and foreign memories outrank the right one."""
    ids = [n.node.node_id for n in index.as_retriever(similarity_top_k=4).retrieve(QUERY)]
    assert ids.index("right") == 3 and set(ids[:3]) == set(WRONG)


def test_query_engine_gets_only_the_right_memory(index: VectorStoreIndex) -> None:
    """Inside RetrieverQueryEngine only the right memory reaches source_nodes and the LLM prompt."""
    engine = RetrieverQueryEngine.from_args(gated(index.as_retriever(similarity_top_k=4)), llm=MockLLM())
    response = engine.query(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == ["right"]
    prompt = str(response)  # MockLLM echoes the prompt it was given
    assert CORPUS["right"][0] in prompt
    for wrong in WRONG:
        assert CORPUS[wrong][0] not in prompt


async def test_query_engine_async_gets_only_the_right_memory(index: VectorStoreIndex) -> None:
    """The async query engine path gives the same single source node."""
    engine = RetrieverQueryEngine.from_args(gated(index.as_retriever(similarity_top_k=4)), llm=MockLLM())
    response = await engine.aquery(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == ["right"]


def test_as_one_retriever_of_query_fusion(index: VectorStoreIndex) -> None:
    """Gated vector and BM25 retrievers inside QueryFusionRetriever (reciprocal_rerank) return only the right memory."""
    nodes = make_nodes()
    fusion = QueryFusionRetriever(
        [
            gated(index.as_retriever(similarity_top_k=4)),
            gated(BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=4)),
        ],
        mode="reciprocal_rerank",
        num_queries=1,
        llm=MockLLM(),
        use_async=False,
        similarity_top_k=4,
    )
    assert [n.node.node_id for n in fusion.retrieve(QUERY)] == ["right"]


async def test_as_one_retriever_of_query_fusion_async(index: VectorStoreIndex) -> None:
    """The async fusion path (use_async=True) also returns only the right memory."""
    fusion = QueryFusionRetriever(
        [gated(index.as_retriever(similarity_top_k=4))],
        mode="reciprocal_rerank",
        num_queries=1,
        llm=MockLLM(),
        use_async=True,
        similarity_top_k=4,
    )
    assert [n.node.node_id for n in await fusion.aretrieve(QUERY)] == ["right"]


def test_no_scope_raises_before_any_retrieval() -> None:
    """Without a scope, ScopeError is raised and the inner retriever is never called (R1)."""
    inner = StaticRetriever(make_nodes())
    retriever = GatedRetriever(inner, gate=make_gate())
    with pytest.raises(ScopeError):
        retriever.retrieve(QUERY)
    assert inner.calls == 0


async def test_no_scope_raises_async() -> None:
    """aretrieve without a scope raises ScopeError too."""
    retriever = GatedRetriever(StaticRetriever(make_nodes()), gate=make_gate())
    with pytest.raises(ScopeError):
        await retriever.aretrieve(QUERY)


def test_per_call_scope_overrides_the_constructor(index: VectorStoreIndex) -> None:
    """retrieve_scoped and recall_scope use the given scope instead of the constructor's."""
    retriever = gated(index.as_retriever(similarity_top_k=4))
    assert [n.node.node_id for n in retriever.retrieve(QUERY)] == ["right"]
    assert [n.node.node_id for n in retriever.retrieve_scoped(QUERY, scope=OTHER_SCOPE)] == ["foreign"]
    with recall_scope(OTHER_SCOPE):
        assert [n.node.node_id for n in retriever.retrieve(QUERY)] == ["foreign"]


def test_no_fallback_to_the_constructor_scope_once_per_request(index: VectorStoreIndex) -> None:
    """After serving a per-request scope, a call without one raises instead of using the constructor's (issue 13)."""
    retriever = gated(index.as_retriever(similarity_top_k=4))
    with recall_scope(OTHER_SCOPE):
        retriever.retrieve(QUERY)
    with pytest.raises(ScopeError, match="does not fall back"):
        retriever.retrieve(QUERY)


def test_thread_pool_worker_without_the_context_fails_closed(index: VectorStoreIndex) -> None:
    """A ThreadPoolExecutor worker does not inherit recall_scope: it raises, it never answers as the constructor scope."""
    from concurrent.futures import ThreadPoolExecutor

    retriever = gated(index.as_retriever(similarity_top_k=4))  # constructor scope u1: another identity
    with recall_scope(OTHER_SCOPE), ThreadPoolExecutor(1) as pool:
        with pytest.raises(ScopeError):
            pool.submit(retriever.retrieve, QUERY).result()
        import contextvars

        ctx = contextvars.copy_context()
        copied = pool.submit(ctx.run, retriever.retrieve, QUERY).result()
    assert [n.node.node_id for n in copied] == ["foreign"]


def test_scope_only_per_call() -> None:
    """A retriever built without a scope works per call and fails on plain retrieve()."""
    retriever = GatedRetriever(StaticRetriever(make_nodes()), gate=make_gate(), embed_model=HashEmbedding())
    assert [n.node.node_id for n in retriever.retrieve_scoped(QUERY, scope=SCOPE)] == ["right"]
    with pytest.raises(ScopeError):
        retriever.retrieve(QUERY)


async def test_aretrieve_scoped() -> None:
    """aretrieve_scoped applies the per-call scope on the async path."""
    retriever = GatedRetriever(StaticRetriever(make_nodes()), gate=make_gate(), embed_model=HashEmbedding())
    assert [n.node.node_id for n in await retriever.aretrieve_scoped(QUERY, scope=OTHER_SCOPE)] == ["foreign"]


async def test_aretrieve_awaits_inner_retrievers_concurrently() -> None:
    """Two slow async retrievers are awaited concurrently, not one after the other."""
    nodes = make_nodes()
    slow = [StaticRetriever(nodes, delay=1.0), StaticRetriever(nodes, delay=1.0)]
    retriever = gated(slow)  # type: ignore[arg-type]
    started = time.perf_counter()
    result = await retriever.aretrieve(QUERY)
    assert time.perf_counter() - started < 1.6  # sequential would take 2 s; concurrent about 1 s
    assert [n.node.node_id for n in result] == ["right"]


def test_weights_are_really_applied() -> None:
    """The fused order follows the weights of the retrievers."""
    a = TextNode(id_="a", text="newsletter alpha", metadata=dict(make_nodes()[0].metadata))
    b = TextNode(id_="b", text="newsletter beta", metadata=dict(make_nodes()[0].metadata))
    first, second = StaticRetriever([a, b]), StaticRetriever([b, a])
    lean_first = gated([first, second], weights=[1.0, 0.1], score_key="sim", embed_model=None)
    lean_second = gated([first, second], weights=[0.1, 1.0], score_key="sim", embed_model=None)
    for node in (a, b):
        node.metadata["sim"] = 0.9
    assert [n.node.node_id for n in lean_first.retrieve("newsletter")] == ["a", "b"]
    assert [n.node.node_id for n in lean_second.retrieve("newsletter")] == ["b", "a"]


def test_provenance_and_scores(index: VectorStoreIndex) -> None:
    """Accepted nodes carry provenance in metadata['recall_gate'] and the bounded semantic score."""
    [node] = gated(index.as_retriever(similarity_top_k=4), names=["vector"]).retrieve(QUERY)
    prov = node.node.metadata["recall_gate"]
    assert prov["id"] == "right" and prov["channels"] == ["vector"] and prov["fused_rank"] == 4
    assert node.score == pytest.approx(prov["semantic_score"]) and -1.0 <= node.score <= 1.0
    assert "recall_gate" not in node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert "recall_gate" not in index.docstore.get_node("right").metadata  # the stored node is untouched


def test_lexical_score_is_returned_without_semantic() -> None:
    """Without embedding or score_key the returned score is the lexical share that let the node pass."""
    retriever = GatedRetriever(
        StaticRetriever(make_nodes()), scope=SCOPE, gate=make_gate(min_lexical_score=0.5)
    )
    [node] = retriever.retrieve("weekly newsletter tuesday")
    assert node.node.node_id == "right" and node.score == pytest.approx(1.0)


def _id_key_preview() -> Any:
    with_id = TextNode(
        text="newsletter on Tuesday", metadata={**make_nodes()[0].metadata, "memory_id": "m-7"}
    )
    without = TextNode(text="newsletter on Tuesday again", metadata=dict(make_nodes()[0].metadata))
    return gated(StaticRetriever([with_id, without]), id_key="memory_id").preview("newsletter tuesday")


def test_id_key_reads_ids_from_metadata() -> None:
    """With id_key the memory id comes from metadata; a node without one is never accepted."""
    result = _id_key_preview()
    assert result.accepted_ids == ["m-7"]
    assert [(r.id.startswith("#"), r.reason.value) for r in result.rejected] == [(True, "invalid")]


def test_unidentified_node_is_rejected_as_invalid() -> None:
    """A node without an id is rejected as invalid, as shared_core.candidates documents."""
    assert [r.reason.value for r in _id_key_preview().rejected] == ["invalid"]


def test_preview_is_a_dry_run(index: VectorStoreIndex) -> None:
    """preview() returns the gate result with reasons and marks the audit as dry-run (R10)."""
    result = gated(index.as_retriever(similarity_top_k=4)).preview(QUERY)
    assert result.accepted_ids == ["right"]
    assert result.reasons() == {
        "superseded": result.reasons()["superseded"],
        "draft": result.reasons()["draft"],
        "foreign": result.reasons()["foreign"],
    }
    assert {k: v.value for k, v in result.reasons().items()} == {
        "superseded": "superseded",
        "draft": "not_approved",
        "foreign": "scope_mismatch",
    }
    assert result.audit.dry_run is True


def test_k_limits_accepted_nodes() -> None:
    """k caps the accepted nodes; the rest are rejected over_budget."""
    nodes = [
        TextNode(id_=f"n{i}", text=f"weekly newsletter item {i}", metadata=dict(make_nodes()[0].metadata))
        for i in range(5)
    ]
    retriever = gated(StaticRetriever(nodes), k=2)
    assert len(retriever.retrieve("weekly newsletter")) == 2
    assert {r.reason.value for r in retriever.preview("weekly newsletter").rejected} == {"over_budget"}


def test_from_defaults_wraps_an_index(index: VectorStoreIndex) -> None:
    """from_defaults(index=...) gates the index's retriever."""
    retriever = GatedRetriever.from_defaults(
        index=index, similarity_top_k=4, scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding()
    )
    assert [n.node.node_id for n in retriever.retrieve(QUERY)] == ["right"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"retrievers": [StaticRetriever([])], "store": object()},
        {"retrievers": []},
        {"retrievers": [StaticRetriever([])], "weights": [1.0, 2.0]},
        {"retrievers": [StaticRetriever([]), StaticRetriever([])], "names": ["x", "x"]},
        {"retrievers": [StaticRetriever([])], "k": 0},
        {"retrievers": [StaticRetriever([])], "candidates": 5},
    ],
)
def test_misconfiguration_raises_config_error(kwargs: dict[str, Any]) -> None:
    """Contradictory or invalid options raise ConfigError at construction."""
    retrievers = kwargs.pop("retrievers", None)
    with pytest.raises(ConfigError):
        GatedRetriever(retrievers, **kwargs)


def test_invalid_constructor_scope_raises_scope_error() -> None:
    """An incomplete constructor scope is refused at construction."""
    with pytest.raises(ScopeError):
        GatedRetriever(StaticRetriever([]), scope={"user_id": "u1"})


def test_llamaindex_embedding_gives_the_same_scores(index: VectorStoreIndex) -> None:
    """A LlamaIndex BaseEmbedding as `embedding` gives the same cosine as the core's own embedder."""
    inner = index.as_retriever(similarity_top_k=4)
    [core] = gated(inner, embed_model=HashEmbedding()).retrieve(QUERY)
    [llama] = gated(inner, embed_model=HashLlamaEmbedding()).retrieve(QUERY)
    assert llama.node.node_id == core.node.node_id == "right"
    assert llama.score == pytest.approx(core.score, abs=1e-6)


def test_mock_embedding_is_accepted() -> None:
    """LlamaIndex's MockEmbedding works as the gate's embedding (every cosine is 1.0)."""
    from llama_index.core.embeddings import MockEmbedding

    retriever = gated(StaticRetriever(make_nodes()), embed_model=MockEmbedding(embed_dim=8))
    [node] = retriever.retrieve(QUERY)
    assert node.node.node_id == "right" and node.score == pytest.approx(1.0)
