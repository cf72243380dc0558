"""An LCEL chain over a GatedRetriever: only the right memory reaches the model (A1, R9)."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_doubles import NOW, SCOPE, EventRecorder, HashEmbeddings

from langchain_recall_gate import AUDIT_EVENT, AuditCallbackHandler, GatedRetriever
from shared_core import AuditRecord, GateConfig, RecallGate
from shared_core.testing import FrozenClock

QUESTION = "When is the weekly newsletter published?"
MEMORIES = [  # best first, as the wrapped retriever ranks them: the three wrong ones outrank the right one
    ("old-policy", "Newsletter policy (superseded): the weekly newsletter is published on Mondays.", {}),
    ("draft-policy", "Draft: the weekly newsletter is published on Fridays.", {"status": "draft"}),
    ("other-user", "The weekly newsletter is published on Sundays.", {"user_id": "u2"}),
    ("current-policy", "The weekly newsletter is published on Tuesdays at 9:00.", {}),
]
EXPECTED_REJECTIONS = {
    "old-policy": "superseded",
    "draft-policy": "not_approved",
    "other-user": "scope_mismatch",
}


def _memories() -> list[Document]:
    base = {**SCOPE, "updated_at": "2026-07-01T00:00:00Z", "status": "approved", "score": 0.95}
    return [Document(id=i, page_content=t, metadata={**base, **m}) for i, t, m in MEMORIES]


class FixedOrderStore(InMemoryVectorStore):
    """An InMemoryVectorStore whose similarity ranking is the insertion order (we control it)."""

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        docs = self.get_by_ids([i for i, _, _ in MEMORIES])
        order = {i: n for n, (i, _, _) in enumerate(MEMORIES)}
        return sorted(docs, key=lambda d: order[d.id or ""])[:k]


def _chain(seen: list[str]) -> tuple[Runnable[str, str], GatedRetriever]:
    store = FixedOrderStore(HashEmbeddings())
    store.add_documents(_memories())
    retriever = GatedRetriever(
        retrievers=[store.as_retriever(search_kwargs={"k": 10})],
        gate=RecallGate(GateConfig(), clock=FrozenClock(NOW)),
        scope=SCOPE,
        score_key="score",
    )
    prompt = ChatPromptTemplate.from_messages(
        [("system", "Answer from these memories only:\n{context}"), ("human", "{question}")]
    )

    def format_docs(docs: list[Document]) -> dict[str, str]:
        return {"context": "\n".join(d.page_content for d in docs), "question": QUESTION}

    def tap(value: PromptValue) -> PromptValue:
        seen.append(value.to_string())
        return value

    model = FakeListChatModel(responses=["Tuesdays at 9:00."])
    chain = retriever | RunnableLambda(format_docs) | prompt | RunnableLambda(tap) | model | StrOutputParser()
    return chain, retriever


def _assert_prompt(seen: list[str]) -> None:
    [text] = seen
    assert "Tuesdays at 9:00" in text
    for wrong in ("Mondays", "Fridays", "Sundays"):
        assert wrong not in text


def _assert_audit(data: dict[str, Any]) -> None:
    record = AuditRecord.model_validate(data)
    assert record.accepted_ids == ("current-policy",)
    assert {e.id: e.reason for e in record.rejected} == EXPECTED_REJECTIONS
    assert record.summary() == {
        "rejected_count": 3,
        "reasons": {"not_approved": 1, "scope_mismatch": 1, "superseded": 1},
    }
    assert "newsletter" not in record.to_json().lower()  # no memory text in the audit


def test_wrapped_order_puts_the_wrong_memories_first() -> None:
    """Without the gate the wrapped retriever ranks superseded, draft and foreign above the right one."""
    seen: list[str] = []
    _, retriever = _chain(seen)
    assert [d.id for d in retriever.retrievers[0].invoke(QUESTION)] == [i for i, _, _ in MEMORIES]


def test_chain_prompt_holds_only_the_right_memory_and_handler_sees_rejections() -> None:
    """invoke: the model's prompt holds only the current policy; a callback handler gets the audit."""
    seen: list[str] = []
    chain, _ = _chain(seen)
    recorder = EventRecorder()
    records: list[AuditRecord] = []
    answer = chain.invoke(QUESTION, config={"callbacks": [recorder, AuditCallbackHandler([records.append])]})
    assert answer == "Tuesdays at 9:00."
    _assert_prompt(seen)
    [(name, data)] = recorder.events
    assert name == AUDIT_EVENT
    _assert_audit(data)
    assert [r.model_dump() for r in records] == [AuditRecord.model_validate(data).model_dump()]


async def test_chain_astream_events_carry_the_audit() -> None:
    """astream_events(v2): one on_custom_event recall_gate.audit naming the three rejections."""
    seen: list[str] = []
    chain, _ = _chain(seen)
    recorder = EventRecorder()
    events = [e async for e in chain.astream_events(QUESTION, version="v2", config={"callbacks": [recorder]})]
    custom = [e for e in events if e["event"] == "on_custom_event"]
    assert [e["name"] for e in custom] == [AUDIT_EVENT]
    _assert_audit(custom[0]["data"])
    assert [n for n, _ in recorder.events] == [AUDIT_EVENT]
    _assert_prompt(seen)
    final = [e for e in events if e["event"] == "on_chain_end" and not e["parent_ids"]]
    assert final[-1]["data"]["output"] == "Tuesdays at 9:00."
