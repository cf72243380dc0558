"""The newcomer's path through the LangChain adapter: defaults that serve, and one line when nothing is accepted (issue 16)."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import SCOPE, HashEmbeddings

from langchain_recall_gate import GatedRetriever, GatedVectorStore, MiniLMEmbeddings
from shared_core import SEED_MIN_SCORE, GateResult
from shared_core.embedding import default_embedding

OTHER = {"user_id": "u2", "agent_id": "a1", "memory_space_id": "s1"}
POLICY = "Official posts go out at 10:00 after review."


def _plain_store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_texts([POLICY, "The office is closed on public holidays."])
    return store


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "langchain_recall_gate" and r.levelno == logging.WARNING]


def test_plain_documents_give_one_warning_that_says_what_to_add(caplog: pytest.LogCaptureFixture) -> None:
    """A user's plain InMemoryVectorStore documents: an empty result comes with ONE warning naming the metadata to add."""
    retriever = GatedRetriever(retrievers=[_plain_store().as_retriever()], embedding=MiniLMEmbeddings(), scope=SCOPE)
    with caplog.at_level(logging.WARNING):
        assert retriever.invoke("when do official posts go out?") == []
    [line] = _warnings(caplog)
    assert "accepted 0 of 2 candidates (invalid: 2)" in line
    assert "user_id, agent_id, memory_space_id, updated_at" in line and "plain_documents='owned'" in line
    assert "Official posts" not in line and "\n" not in line


def test_plain_documents_owned_serve_the_configured_scope_only() -> None:
    """plain_documents='owned': plain documents are the constructor scope's memories, never a per-request scope's."""
    retriever = GatedRetriever(
        retrievers=[_plain_store().as_retriever()], embedding=MiniLMEmbeddings(), scope=SCOPE, plain_documents="owned"
    )
    assert [d.page_content for d in retriever.invoke("when do official posts go out?")] == [POLICY]
    assert retriever.invoke("when do official posts go out?", scope=OTHER) == []


def test_defaults_use_the_calibrated_threshold_of_the_embedding() -> None:
    """No gate given: MiniLMEmbeddings brings 0.54; an embedding without a calibration keeps the seeds' 0.78."""
    mini = GatedRetriever(retrievers=[_plain_store().as_retriever()], embedding=MiniLMEmbeddings(), scope=SCOPE)
    assert mini._gate.config_for(mini.scope).min_score == pytest.approx(0.54)  # type: ignore[arg-type]
    other = GatedRetriever(retrievers=[_plain_store().as_retriever()], embedding=HashEmbeddings(), scope=SCOPE)
    assert other._gate.config_for(other.scope).min_score == SEED_MIN_SCORE  # type: ignore[arg-type]
    vs = GatedVectorStore(InMemoryVectorStore(MiniLMEmbeddings()), scope=SCOPE)
    assert vs.gate.config_for(vs._scopes.default).min_score == pytest.approx(0.54)  # type: ignore[arg-type]


def test_minilm_embeddings_are_the_bundled_model() -> None:
    """MiniLMEmbeddings gives the vectors of shared_core's default embedding (offline all-MiniLM-L6-v2)."""
    emb = MiniLMEmbeddings()
    core = default_embedding()
    assert np.allclose(emb.embed_documents(["cat on a mat"])[0], core.embed_documents(["cat on a mat"])[0])
    assert np.allclose(emb.embed_query("a cat"), core.embed_query("a cat")) and len(emb.embed_query("x")) == 384


def test_the_obvious_write_and_read_serve(caplog: pytest.LogCaptureFixture) -> None:
    """A user's own statements written with origin='user_explicit' are recalled at once, with MiniLM defaults."""
    vs = GatedVectorStore(InMemoryVectorStore(MiniLMEmbeddings()), scope=SCOPE, origin="user_explicit")
    vs.add_texts([POLICY], metadatas=[{"title": "Posting policy"}])
    with caplog.at_level(logging.WARNING):
        [doc] = vs.similarity_search("when do official posts go out?", k=2)
    assert doc.page_content == POLICY and doc.metadata["title"] == "Posting policy" and _warnings(caplog) == []


def test_a_batch_that_stores_nothing_says_why_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """The default (agent) origin holds notes for review: add_texts returns [] and logs one line with the counts."""
    vs = GatedVectorStore(InMemoryVectorStore(MiniLMEmbeddings()), scope=SCOPE)
    with caplog.at_level(logging.WARNING):
        assert vs.add_texts(["The user seems to prefer mornings.", "The user may like tea."]) == []
    [line] = _warnings(caplog)
    assert "stored 0 of 2 documents (quarantine: 2; reasons untrusted: 2)" in line
    assert "quarantine_approve" in line and "origin='user_explicit'" in line and "tea" not in line


def test_store_holding_documents_the_filter_did_not_write_says_so(caplog: pytest.LogCaptureFixture) -> None:
    """Searching a store of plain documents through the write filter explains the empty result."""
    vs = GatedVectorStore(_plain_store(), scope=SCOPE)
    with caplog.at_level(logging.WARNING):
        assert vs.similarity_search("official posts", k=2) == []
    [line] = _warnings(caplog)
    assert "did not write" in line and "prefilter=False" in line


def test_preview_is_a_dry_run_with_reasons() -> None:
    """GatedRetriever.preview returns the gate result (accepted and rejected with reasons), flagged dry_run."""
    store = InMemoryVectorStore(HashEmbeddings())
    fresh = (datetime.now(timezone.utc) - timedelta(days=1)).isoformat()
    base = {**SCOPE, "updated_at": fresh, "status": "approved", "score": 0.9}
    store.add_documents(
        [
            Document(id="ok", page_content=POLICY, metadata=base),
            Document(id="draft", page_content="Draft: posts at 9.", metadata={**base, "status": "draft"}),
        ]
    )
    retriever = GatedRetriever(retrievers=[store.as_retriever()], scope=SCOPE, score_key="score")
    result = retriever.preview("official posts go out")
    assert isinstance(result, GateResult) and result.audit.dry_run and result.accepted_ids == ["ok"]
    assert {r.id: r.reason.value for r in result.rejected}["draft"] == "not_approved"


class _ThreadRecorder(HashEmbeddings):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.threads.add(threading.get_ident())
        return super().embed_documents(texts)


async def test_embedding_never_runs_on_the_event_loop() -> None:
    """ainvoke and the async vector store paths embed in worker threads, never on the loop (issue 12)."""
    loop_thread = threading.get_ident()
    emb = _ThreadRecorder()
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_texts([POLICY])
    await GatedRetriever(retrievers=[store.as_retriever()], embedding=emb, scope=SCOPE).ainvoke("posts")
    vs = GatedVectorStore(InMemoryVectorStore(HashEmbeddings()), embedding=emb, scope=SCOPE, origin="user_explicit")
    await vs.aadd_texts([POLICY])
    await vs.asimilarity_search("posts")
    assert emb.threads and loop_thread not in emb.threads
