"""GatedRetriever and RecallGateCompressor over wrapped retrievers (A1, R1, R9, R10, R12)."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import NOW, SCOPE, EventRecorder, HashEmbeddings, StaticRetriever, doc
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_recall_gate import (
    AUDIT_EVENT,
    PROVENANCE_KEY,
    AuditCallbackHandler,
    GatedRetriever,
    RecallGateCompressor,
)
from shared_core import AuditRecord, GateConfig, JsonlSink, RecallGate, ScopeError, capture_audit
from shared_core.testing import FrozenClock, HashEmbedding

OTHER = {"user_id": "u2", "agent_id": "a1", "memory_space_id": "s1"}


def gate(**config: Any) -> RecallGate:
    return RecallGate(GateConfig(**config), clock=FrozenClock(NOW))


def mixed_docs() -> list[Document]:
    return [
        doc("foreign", user_id="u2"),
        doc("draft", status="draft"),
        doc("old", updated_at="2025-01-01T00:00:00Z"),
        doc("good"),
    ]


def gated(docs: list[Document] | None = None, **kwargs: Any) -> GatedRetriever:
    kwargs.setdefault("gate", gate())
    kwargs.setdefault("scope", SCOPE)
    kwargs.setdefault("score_key", "score")
    return GatedRetriever(
        retrievers=[StaticRetriever(docs=docs if docs is not None else mixed_docs())], **kwargs
    )


# -- the gate decides, the adapter converts --------------------------------------------------------


def test_only_accepted_documents_come_out_as_copies_with_provenance() -> None:
    """Rejected documents never reach the output; accepted ones are copies carrying provenance."""
    docs = mixed_docs()
    before = copy.deepcopy(docs)
    out = gated(docs).invoke("note")
    assert [d.id for d in out] == ["good"]
    prov = out[0].metadata[PROVENANCE_KEY]
    assert prov["id"] == "good" and prov["semantic_score"] == 0.9 and prov["fused_rank"] == 4
    assert prov["channels"] == ["retriever_0"]
    assert docs == before  # inputs untouched
    assert {k: v for k, v in out[0].metadata.items() if k != PROVENANCE_KEY} == docs[3].metadata


def test_rejections_are_audited_with_reasons_and_no_text() -> None:
    """The audit record names each rejected id with its reason and holds no memory text."""
    docs = [*mixed_docs()[:3], doc("good", "the secret plan body text")]
    with capture_audit() as records:
        gated(docs).invoke("note")
    [record] = records
    assert {e.id: e.reason for e in record.rejected} == {
        "foreign": "scope_mismatch",
        "draft": "not_approved",
        "old": "stale",
    }
    assert "the secret plan body text" not in record.to_json()
    assert record.extra["adapter"] == "langchain"


def test_provenance_can_be_switched_off() -> None:
    """With provenance=False accepted documents keep exactly their original metadata."""
    docs = mixed_docs()
    out = gated(docs, provenance=False).invoke("note")
    assert out == [docs[3]]


def test_missing_scope_raises_before_any_retrieval() -> None:
    """Without a scope the call raises ScopeError and the wrapped retriever is never called (R1)."""
    inner = StaticRetriever(docs=mixed_docs())
    retriever = GatedRetriever(retrievers=[inner], gate=gate())
    with pytest.raises(ScopeError):
        retriever.invoke("note")
    with pytest.raises(ScopeError):
        asyncio.run(retriever.ainvoke("note"))
    assert inner.calls == 0


def test_incomplete_scope_is_refused_at_construction() -> None:
    """A constructor scope with an empty field raises ScopeError, not a pydantic error."""
    with pytest.raises(ScopeError):
        GatedRetriever(retrievers=[StaticRetriever(docs=[])], scope={"user_id": "u1", "agent_id": ""})


def test_per_call_scope_wins_over_config_and_constructor() -> None:
    """Scope precedence: invoke(scope=...) > config configurable scope > constructor scope."""
    retriever = gated()
    assert [d.id for d in retriever.invoke("note")] == ["good"]
    cfg = {"configurable": {"scope": OTHER}}
    assert [d.id for d in retriever.invoke("note", config=cfg)] == ["foreign"]
    assert [d.id for d in retriever.invoke("note", config=cfg, scope=SCOPE)] == ["good"]
    unscoped = GatedRetriever(retrievers=[StaticRetriever(docs=mixed_docs())], gate=gate(), score_key="score")
    assert [d.id for d in unscoped.invoke("note", scope=OTHER)] == ["foreign"]
    assert [d.id for d in unscoped.with_config(configurable={"scope": SCOPE}).invoke("note")] == ["good"]


async def test_config_scope_is_used_in_async() -> None:
    """ainvoke takes the scope from config["configurable"]["scope"] too."""
    unscoped = GatedRetriever(retrievers=[StaticRetriever(docs=mixed_docs())], gate=gate(), score_key="score")
    out = await unscoped.ainvoke("note", config={"configurable": {"scope": OTHER}})
    assert [d.id for d in out] == ["foreign"]


def test_k_at_construction_and_per_call() -> None:
    """k caps the accepted documents; the per-call k wins; excess ones are audited over_budget."""
    docs = [doc(f"m{i}") for i in range(6)]
    retriever = gated(docs, k=4)
    assert len(retriever.invoke("note")) == 4
    with capture_audit() as records:
        assert [d.id for d in retriever.invoke("note", k=2)] == ["m0", "m1"]
    assert records[0].counts == {"over_budget": 4}
    assert len(gated(docs).invoke("note")) == 6  # default: the space's max_hits (8)


def test_dry_run_flags_the_audit_and_keeps_decisions() -> None:
    """dry_run (constructor or per call) marks the audit as a preview; decisions are identical (R10)."""
    with capture_audit() as records:
        real = gated().invoke("note")
        preview = gated().invoke("note", dry_run=True)
        preview2 = gated(dry_run=True).invoke("note")
    assert [d.id for d in real] == [d.id for d in preview] == [d.id for d in preview2] == ["good"]
    assert [r.dry_run for r in records] == [False, True, True]


def test_weights_are_applied_when_fusing_two_retrievers() -> None:
    """Two retrievers are fused by id with their weights; a document both return is one result."""
    a = StaticRetriever(docs=[doc("x"), doc("y")])
    b = StaticRetriever(docs=[doc("y"), doc("z")])
    even = GatedRetriever(retrievers=[a, b], gate=gate(), scope=SCOPE, score_key="score")
    assert [d.id for d in even.invoke("note")] == ["y", "x", "z"]
    leaning_b = GatedRetriever(
        retrievers=[a, b], weights=[1.0, 3.0], gate=gate(), scope=SCOPE, score_key="score"
    )
    out = leaning_b.invoke("note")
    assert [d.id for d in out] == ["y", "z", "x"]
    assert out[0].metadata[PROVENANCE_KEY]["channels"] == ["retriever_0", "retriever_1"]
    named = GatedRetriever(
        retrievers=[a, b], names=["bm25", "dense"], gate=gate(), scope=SCOPE, score_key="score"
    )
    assert named.invoke("note")[0].metadata[PROVENANCE_KEY]["channel_ranks"] == {"bm25": 2, "dense": 1}


async def test_async_runs_wrapped_retrievers_concurrently() -> None:
    """ainvoke awaits the wrapped retrievers' own ainvoke concurrently (asyncio.gather)."""
    slow = [StaticRetriever(docs=[doc(f"m{i}")], delay=0.6) for i in range(3)]
    retriever = GatedRetriever(retrievers=slow, gate=gate(), scope=SCOPE, score_key="score")
    started = time.perf_counter()
    out = await retriever.ainvoke("note")
    assert time.perf_counter() - started < 1.4  # sequential would take 1.8 s; concurrent about 0.6 s
    assert sorted(d.id for d in out) == ["m0", "m1", "m2"]


def test_embedding_gives_the_cosine_the_gate_thresholds_on() -> None:
    """With an embedding the semantic score is the core's cosine, not the retriever's metadata."""
    docs = [doc("close", "posting policy tuesday"), doc("far", "quarterly revenue grew")]
    retriever = GatedRetriever(
        retrievers=[StaticRetriever(docs=docs)],
        embedding=HashEmbeddings(),
        gate=gate(min_score=0.5, min_lexical_score=None),
        scope=SCOPE,
    )
    out = retriever.invoke("posting policy tuesday")
    assert [d.id for d in out] == ["close"]
    emb = HashEmbedding()
    cosine = float(
        emb.embed_documents(["posting policy tuesday"])[0] @ emb.embed_query("posting policy tuesday")
    )
    assert out[0].metadata[PROVENANCE_KEY]["semantic_score"] == pytest.approx(cosine, abs=1e-5)


def test_ids_come_from_id_key_never_from_content() -> None:
    """With id_key the metadata id is used; two documents sharing a text stay two memories."""
    docs = [
        Document(page_content="same text", metadata={**doc(None).metadata, "memory_id": "a"}),
        Document(page_content="same text", metadata={**doc(None).metadata, "memory_id": "b"}),
    ]
    out = gated(docs, id_key="memory_id").invoke("note")
    assert [d.metadata[PROVENANCE_KEY]["id"] for d in out] == ["a", "b"]
    assert [d.id for d in out] == ["a", "b"]


def test_document_without_id_is_rejected_as_invalid() -> None:
    """A document with no id is never returned and is audited as invalid (never keyed by its text)."""
    with capture_audit() as records:
        out = gated([doc(None), doc("good")]).invoke("note")
    assert [d.id for d in out] == ["good"]
    assert [e.reason for e in records[0].rejected] == ["invalid"] and records[0].input_count == 2


def test_an_id_repeated_by_one_retriever_is_two_hits() -> None:
    """The same id twice in one retriever's results: the first is accepted, the second rejected invalid (R8)."""
    with capture_audit() as records:
        out = gated([doc("dup"), doc("dup")]).invoke("note")
    assert [d.id for d in out] == ["dup"]
    assert [(e.id, e.reason) for e in records[0].rejected] == [("dup", "invalid")]


def test_lexical_key_takes_the_lexical_score_from_metadata() -> None:
    """With lexical_key a bounded keyword score from metadata can pass low_score without a semantic score."""
    docs = [doc("code", score=0.1, kw=1.0), doc("other", score=0.1, kw=0.2)]
    assert [d.id for d in gated(docs, lexical_key="kw").invoke("ERR-42")] == ["code"]


def test_constructor_validation() -> None:
    """Retrievers xor store, one weight and unique name per retriever, positive k: misuse raises."""
    with pytest.raises(ValueError):
        GatedRetriever(scope=SCOPE)
    with pytest.raises(ValueError):
        GatedRetriever(retrievers=[StaticRetriever(docs=[])] * 2, names=["a", "a"], scope=SCOPE)
    with pytest.raises(ValueError):
        GatedRetriever(retrievers=[StaticRetriever(docs=[])], weights=[1.0, 2.0], scope=SCOPE)
    with pytest.raises(ValueError):
        GatedRetriever(retrievers=[StaticRetriever(docs=[])], k=0, scope=SCOPE)


def test_unknown_keyword_is_refused() -> None:
    """invoke() rejects keyword arguments the retriever does not declare (no silent no-op)."""
    with pytest.raises(TypeError):
        gated().invoke("note", filter={"user_id": "u2"})


# -- audit through callbacks ---------------------------------------------------------------------


def test_audit_event_reaches_callback_handlers() -> None:
    """Each call dispatches one recall_gate.audit custom event with the JSON-able audit record."""
    recorder = EventRecorder()
    gated().invoke("note", config={"callbacks": [recorder]})
    [(name, data)] = recorder.events
    assert name == AUDIT_EVENT
    json.dumps(data)  # JSON-able
    assert data["accepted_ids"] == ["good"] and data["input_count"] == 4


async def test_audit_event_in_astream_events() -> None:
    """The audit shows up as on_custom_event in astream_events(version='v2')."""
    events = [e async for e in gated().astream_events("note", version="v2")]
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == [AUDIT_EVENT]
    assert custom[0]["data"]["accepted_ids"] == ["good"]


def test_audit_handler_forwards_to_sinks(tmp_path: Path) -> None:
    """AuditCallbackHandler sends each audit event to shared_core sinks; a failing sink is isolated."""

    def broken(record: AuditRecord) -> None:
        raise RuntimeError("sink down")

    sink = JsonlSink(tmp_path / "audit.jsonl")
    seen: list[AuditRecord] = []
    handler = AuditCallbackHandler([broken, sink, seen.append])
    gated().invoke("note", config={"callbacks": [handler]})
    [record] = sink.read()
    assert record.accepted_ids == ("good",) and seen == [record]
    handler.on_custom_event("something.else", {"x": 1}, run_id=__import__("uuid").uuid4())
    assert len(seen) == 1


# -- compressor ------------------------------------------------------------------------------------


def test_compressor_gates_inside_contextual_compression_retriever() -> None:
    """RecallGateCompressor gates a base retriever's documents and dispatches the audit event."""
    compressor = RecallGateCompressor(scope=SCOPE, gate=gate(), score_key="score")
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=StaticRetriever(docs=mixed_docs())
    )
    recorder = EventRecorder()
    out = retriever.invoke("note", config={"callbacks": [recorder]})
    assert [d.id for d in out] == ["good"]
    assert [name for name, _ in recorder.events] == [AUDIT_EVENT]
    assert recorder.events[0][1]["counts"] == {"not_approved": 1, "scope_mismatch": 1, "stale": 1}


async def test_compressor_async_and_outside_a_run() -> None:
    """The compressor works async and when called directly (no run: audit only to the sinks)."""
    compressor = RecallGateCompressor(scope=SCOPE, gate=gate(), score_key="score", k=1)
    with capture_audit() as records:
        out = await compressor.acompress_documents([*mixed_docs(), doc("also")], "note")
        direct = compressor.compress_documents(mixed_docs(), "note")
    assert [d.id for d in out] == ["good"] and [d.id for d in direct] == ["good"]
    assert len(records) == 2


def test_compressor_without_scope_raises() -> None:
    """A compressor without a scope refuses to gate (R1)."""
    with pytest.raises(ScopeError):
        RecallGateCompressor(gate=gate()).compress_documents(mixed_docs(), "note")


# -- the standard LangChain retriever suite -------------------------------------------------------


def _vector_retriever(n: int = 10) -> BaseRetriever:
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents([doc(f"m{i}", f"memory number {i} about posting") for i in range(n)])
    return store.as_retriever(search_kwargs={"k": n})


class TestGatedRetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' retriever suite over a GatedRetriever wrapping an InMemoryVectorStore retriever."""

    @property
    def retriever_constructor(self) -> type[GatedRetriever]:
        return GatedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {
            "retrievers": [_vector_retriever()],
            "scope": SCOPE,
            "gate": gate(),
            "score_key": "score",
            "k": 4,
        }

    @property
    def retriever_query_example(self) -> str:
        return "posting"


def test_vector_retriever_fixture_accepts_everything() -> None:
    """The standard-suite data is all acceptable, so k alone decides how many come back."""
    retriever = GatedRetriever(retrievers=[_vector_retriever()], scope=SCOPE, gate=gate(), score_key="score")
    with capture_audit() as records:
        assert len(retriever.invoke("posting", k=8)) == 8
    assert records[0].counts == {"over_budget": 2}
    assert np.isfinite(records[0].elapsed_ms)
