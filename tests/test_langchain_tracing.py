"""No ungated text in LangChain tracing: the wrapped retriever's run never reaches the caller (issue 13, R9)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.tracers.context import collect_runs
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import NOW, SCOPE, HashEmbeddings, StaticRetriever

from langchain_recall_gate import AUDIT_EVENT, GatedRetriever
from shared_core import GateConfig, RecallGate
from shared_core.testing import FrozenClock

RIGHT = "The weekly newsletter goes out on Tuesday mornings."
FOREIGN = "Bob's private note: the weekly newsletter budget is 4,000 euros."
DRAFT = "Draft: the weekly newsletter might move to Fridays."
BASE = {**SCOPE, "updated_at": "2026-07-01T00:00:00Z", "status": "approved"}


class Recorder(BaseCallbackHandler):
    """Records every callback a handler can receive, as text."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.retriever_ends: list[list[Document]] = []

    def on_retriever_start(self, serialized: Any, query: str, **kwargs: Any) -> None:
        self.seen.append(repr((query, kwargs)))

    def on_retriever_end(self, documents: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.retriever_ends.append(list(documents))
        self.seen.append(repr((documents, kwargs)))

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.seen.append(repr((inputs, kwargs)))

    def on_chain_end(self, outputs: Any, **kwargs: Any) -> None:
        self.seen.append(repr((outputs, kwargs)))

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        self.seen.append(repr((name, data)))

    def on_text(self, text: str, **kwargs: Any) -> None:
        self.seen.append(text)


def _retriever(**kwargs: Any) -> GatedRetriever:
    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents(
        [
            Document(id="right", page_content=RIGHT, metadata=BASE),
            Document(id="foreign", page_content=FOREIGN, metadata={**BASE, "user_id": "bob"}),
            Document(id="draft", page_content=DRAFT, metadata={**BASE, "status": "draft"}),
        ]
    )
    return GatedRetriever(
        retrievers=[store.as_retriever(search_kwargs={"k": 10})],
        embedding=HashEmbeddings(),
        gate=RecallGate(GateConfig(min_score=0.1), clock=FrozenClock(NOW)),
        scope=SCOPE,
        **kwargs,
    )


def _clean(texts: list[str]) -> None:
    blob = "\n".join(texts)
    assert "Bob's private note" not in blob and "4,000 euros" not in blob and "Fridays" not in blob


def test_callback_handler_sees_only_gated_documents() -> None:
    """A recording handler gets the gated run (accepted text, audit ids) and nothing of the wrapped run."""
    recorder = Recorder()
    out = _retriever().invoke("weekly newsletter", config={"callbacks": [recorder]})
    assert [d.id for d in out] == ["right"]
    assert [[d.id for d in docs] for docs in recorder.retriever_ends] == [["right"]]  # one run: the gated one
    assert any(AUDIT_EVENT in s for s in recorder.seen) and any(RIGHT in s for s in recorder.seen)
    _clean(recorder.seen)


async def test_astream_events_v2_carries_no_ungated_text() -> None:
    """astream_events(version="v2") shows the gated retriever's run and audit event, never the wrapped run."""
    recorder = Recorder()
    events = [
        e
        async for e in _retriever().astream_events(
            "weekly newsletter", version="v2", config={"callbacks": [recorder]}
        )
    ]
    retriever_events = [e for e in events if e["event"].startswith("on_retriever")]
    assert {e["name"] for e in retriever_events} == {"GatedRetriever"}
    assert [e["name"] for e in events if e["event"] == "on_custom_event"] == [AUDIT_EVENT]
    _clean([repr(e) for e in events] + recorder.seen)
    [end] = [e for e in retriever_events if e["event"] == "on_retriever_end"]
    assert [d.id for d in end["data"]["output"]] == ["right"]


def test_collect_runs_gets_no_wrapped_run() -> None:
    """A run collector (what tracers are built on) records the gated run only."""
    with collect_runs() as cb:
        _retriever().invoke("weekly newsletter")
    assert [r.name for r in cb.traced_runs] == ["GatedRetriever"]
    assert not cb.traced_runs[0].child_runs
    _clean([repr(r.outputs) for r in cb.traced_runs])


def test_inner_callbacks_trace_the_wrapped_run_to_your_own_handler() -> None:
    """inner_callbacks= sends the wrapped retriever's own run (ungated) to the handler you choose, only there."""
    mine, caller = Recorder(), Recorder()
    _retriever(inner_callbacks=[mine]).invoke("weekly newsletter", config={"callbacks": [caller]})
    assert sorted(d.id or "" for d in mine.retriever_ends[0]) == ["draft", "foreign", "right"]
    _clean(caller.seen)


async def test_async_wrapped_runs_stay_outside_too() -> None:
    """The async path runs each wrapped retriever outside the caller's callback tree as well."""
    recorder = Recorder()
    slow = StaticRetriever(
        docs=[Document(id="foreign", page_content=FOREIGN, metadata={**BASE, "user_id": "bob", "score": 0.9})],
        delay=0.01,
    )
    retriever = GatedRetriever(retrievers=[slow], scope=SCOPE, score_key="score")
    assert await retriever.ainvoke("newsletter", config={"callbacks": [recorder]}) == []
    assert recorder.retriever_ends == [[]]
    _clean(recorder.seen)
