"""RecallGatePostprocessor: the recall gate as a node postprocessor in a LlamaIndex query engine (A2)."""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle
from llamaindex_support import CORPUS, OTHER_SCOPE, QUERY, SCOPE, HashLlamaEmbedding, make_gate, make_nodes

from llamaindex_recall_gate import RecallGatePostprocessor, recall_scope
from shared_core import ConfigError, ScopeError
from shared_core.testing import HashEmbedding

WRONG = ("superseded", "draft", "foreign")


def scored_nodes() -> list[NodeWithScore]:
    return [NodeWithScore(node=n, score=0.5) for n in make_nodes()]


def test_query_engine_over_vector_index_sends_only_the_right_memory() -> None:
    """In index.as_query_engine, superseded, draft and foreign nodes ranking above never reach the LLM."""
    index = VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding())
    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding())
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=4, node_postprocessors=[post])
    response = engine.query(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == ["right"]
    prompt = str(response)  # MockLLM echoes its prompt
    assert CORPUS["right"][0] in prompt
    assert not any(CORPUS[w][0] in prompt for w in WRONG)


async def test_query_engine_async() -> None:
    """The async query engine path applies the postprocessor too."""
    index = VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding())
    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding())
    engine = index.as_query_engine(llm=MockLLM(), similarity_top_k=4, node_postprocessors=[post])
    response = await engine.aquery(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == ["right"]


def test_postprocess_nodes_with_query_str() -> None:
    """postprocess_nodes(query_str=...) gates with lexical and semantic scores."""
    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding())
    out = post.postprocess_nodes(scored_nodes(), query_str=QUERY)
    assert [n.node.node_id for n in out] == ["right"]
    assert out[0].node.metadata["recall_gate"]["channels"] == ["nodes"]


def test_without_query_bundle_only_score_key_can_pass() -> None:
    """With query_bundle=None nothing crashes: without score_key all fail low_score, with it the rules decide."""
    assert (
        RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding()).postprocess_nodes(
            scored_nodes()
        )
        == []
    )
    nodes = scored_nodes()
    for n in nodes:
        n.node.metadata["similarity"] = 0.9
    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), score_key="similarity")
    assert [n.node.node_id for n in post.postprocess_nodes(nodes)] == ["right"]


def test_scope_from_recall_scope_block() -> None:
    """Without a constructor scope the postprocessor uses recall_scope, else raises ScopeError."""
    post = RecallGatePostprocessor(gate=make_gate(), embed_model=HashEmbedding())
    with recall_scope(OTHER_SCOPE):
        assert [n.node.node_id for n in post.postprocess_nodes(scored_nodes(), QueryBundle(QUERY))] == [
            "foreign"
        ]
    with pytest.raises(ScopeError):
        post.postprocess_nodes(scored_nodes(), QueryBundle(QUERY))


def test_k_and_invalid_k() -> None:
    """k caps kept nodes; k < 1 is a ConfigError."""
    nodes = [NodeWithScore(node=n, score=None) for n in make_nodes()]
    for n in nodes:
        n.node.metadata.update(status="approved", superseded_by=None, user_id="u1")
    post = RecallGatePostprocessor(scope=SCOPE, gate=make_gate(), embed_model=HashEmbedding(), k=1)
    assert len(post.postprocess_nodes(nodes, query_str=QUERY)) == 1
    with pytest.raises(ConfigError):
        RecallGatePostprocessor(scope=SCOPE, k=0)


def test_class_name_and_gate_property() -> None:
    """The component follows LlamaIndex conventions (class_name) and exposes its gate."""
    gate = make_gate()
    post = RecallGatePostprocessor(scope=SCOPE, gate=gate)
    assert post.class_name() == "RecallGatePostprocessor" and post.gate is gate
