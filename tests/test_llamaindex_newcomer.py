"""The newcomer's path through the LlamaIndex adapter: defaults that serve, one line when nothing is accepted (issue 16)."""

from __future__ import annotations

import logging
import threading
from typing import Any, ClassVar

import numpy as np
import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llamaindex_support import SCOPE, HashLlamaEmbedding

from llamaindex_recall_gate import GatedRetriever, GatedVectorStore, MiniLMEmbedding, RecallGatePostprocessor
from shared_core import SEED_MIN_SCORE, Scope
from shared_core.embedding import default_embedding

POLICY = "Official posts go out at 10:00 after review."


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "llamaindex_recall_gate" and r.levelno == logging.WARNING]


def _plain_index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=POLICY), Document(text="The office is closed on public holidays.")], embed_model=MiniLMEmbedding()
    )


def test_plain_nodes_give_one_warning_that_says_what_to_add(caplog: pytest.LogCaptureFixture) -> None:
    """A user's plain index through GatedRetriever: an empty result comes with ONE warning naming the metadata to add."""
    retriever = GatedRetriever(_plain_index().as_retriever(similarity_top_k=5), scope=SCOPE, embed_model=MiniLMEmbedding())
    with caplog.at_level(logging.WARNING):
        assert retriever.retrieve("when do official posts go out?") == []
    [line] = _warnings(caplog)
    assert "accepted 0 of 2 candidates (invalid: 2)" in line and "plain_documents='owned'" in line
    assert "Official" not in line


def test_plain_nodes_owned_serve_the_configured_scope() -> None:
    """plain_documents='owned' reads plain nodes as the constructor scope's memories."""
    retriever = GatedRetriever(
        _plain_index().as_retriever(similarity_top_k=5),
        scope=SCOPE,
        embed_model=MiniLMEmbedding(),
        plain_documents="owned",
    )
    assert [n.node.get_content() for n in retriever.retrieve("when do official posts go out?")] == [POLICY]


def test_defaults_use_the_calibrated_threshold_of_the_embedding() -> None:
    """MiniLMEmbedding brings its 0.54 to every component; an uncalibrated embedding keeps the seeds' 0.78."""
    index = _plain_index()
    scope = Scope.model_validate(SCOPE)
    mini = GatedRetriever(index.as_retriever(), scope=SCOPE, embed_model=MiniLMEmbedding())
    assert mini.gate.config_for(scope).min_score == pytest.approx(0.54)
    post = RecallGatePostprocessor(scope=SCOPE, embed_model=MiniLMEmbedding())
    assert post.gate.config_for(scope).min_score == pytest.approx(0.54)
    store = GatedVectorStore(SimpleVectorStore(), embed_model=MiniLMEmbedding(), scope=SCOPE)
    assert store.gate.config_for(scope).min_score == pytest.approx(0.54)
    other = GatedRetriever(index.as_retriever(), scope=SCOPE, embed_model=HashLlamaEmbedding())
    assert other.gate.config_for(scope).min_score == SEED_MIN_SCORE


def test_minilm_embedding_is_the_bundled_model() -> None:
    """MiniLMEmbedding gives the vectors of shared_core's default embedding."""
    emb = MiniLMEmbedding()
    core = default_embedding()
    assert np.allclose(emb.get_text_embedding("cat on a mat"), core.embed_documents(["cat on a mat"])[0])
    assert np.allclose(emb.get_query_embedding("a cat"), core.embed_query("a cat"))


def test_the_obvious_write_and_read_serve(caplog: pytest.LogCaptureFixture) -> None:
    """from_documents through a filter with origin='user_explicit' and MiniLM: the policy comes back, no warning."""
    store = GatedVectorStore(SimpleVectorStore(), embed_model=MiniLMEmbedding(), scope=SCOPE, origin="user_explicit")
    index = VectorStoreIndex.from_documents(
        [Document(text=POLICY, metadata={"title": "Posting policy"})],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=MiniLMEmbedding(),
    )
    with caplog.at_level(logging.WARNING):
        [node] = index.as_retriever().retrieve("when do official posts go out?")
    assert node.node.get_content() == POLICY and _warnings(caplog) == []


def test_a_batch_that_stores_nothing_says_why(caplog: pytest.LogCaptureFixture) -> None:
    """The default agent origin holds notes for review; the insert logs one line with counts and the way out."""
    store = GatedVectorStore(SimpleVectorStore(), embed_model=HashLlamaEmbedding(), scope=SCOPE)
    with caplog.at_level(logging.WARNING):
        assert store.add([TextNode(text="The user may like tea.")]) == []
    [line] = _warnings(caplog)
    assert "stored 0 of 1 documents (quarantine: 1; reasons untrusted: 1)" in line and "tea" not in line


def test_embedding_alias_is_deprecated() -> None:
    """embedding= still works in the LlamaIndex adapter, with a DeprecationWarning pointing to embed_model=."""
    with pytest.warns(DeprecationWarning, match="embed_model"):
        RecallGatePostprocessor(scope=SCOPE, embedding=HashLlamaEmbedding())


class _ThreadRecorder(HashLlamaEmbedding):
    seen: ClassVar[list[int]] = []

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.seen.append(threading.get_ident())
        return super()._get_text_embeddings(texts)


async def test_embedding_never_runs_on_the_event_loop() -> None:
    """aretrieve, apostprocess_nodes and async inserts embed in worker threads (issue 12)."""
    loop_thread = threading.get_ident()
    emb = _ThreadRecorder()
    emb.seen.clear()
    nodes: list[Any] = [TextNode(id_="a", text=POLICY, metadata={**SCOPE, "updated_at": "2026-07-01T00:00:00Z"})]
    post = RecallGatePostprocessor(scope=SCOPE, embed_model=emb)
    await post.apostprocess_nodes([NodeWithScore(node=n, score=1.0) for n in nodes], query_str="posts")
    store = GatedVectorStore(SimpleVectorStore(), embed_model=emb, scope=SCOPE, origin="user_explicit")
    await store.async_add([TextNode(text=POLICY)])
    assert emb.seen and loop_thread not in emb.seen
