"""No ungated text in LlamaIndex instrumentation or docstores (issue 13: tracing leaks, docstore leaks)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.callbacks import CallbackManager, LlamaDebugHandler
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.vector_stores import SimpleVectorStore
from llamaindex_support import CORPUS, QUERY, SCOPE, HashLlamaEmbedding, collect_events, make_gate, make_nodes

from llamaindex_recall_gate import GatedRetriever, GatedVectorStore

WRONG = [CORPUS[k][0] for k in ("superseded", "draft", "foreign")]
SECRET = "Deploy with the key sk-proj-Q7vR2mX9kL4pT8wN3zY6bH1cF5dJ0sA2eG4iK7 for the newsletter job"
EMAIL = "alice.smith@example.com"


def _dump(objs: list[Any]) -> str:
    out = []
    for o in objs:
        try:
            out.append(o.model_dump_json())
        except Exception:
            out.append(repr(o))
    return "\n".join(out)


def test_event_handler_sees_only_gated_nodes() -> None:
    """An instrumentation event handler and a legacy callback handler never see a rejected or foreign node."""
    debug = LlamaDebugHandler()
    manager = CallbackManager([debug])
    index = VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding(), callback_manager=manager)
    inner = index.as_retriever(similarity_top_k=4)
    retriever = GatedRetriever(
        inner, scope=SCOPE, gate=make_gate(), embed_model=HashLlamaEmbedding(), callback_manager=manager
    )
    debug.flush_event_logs()  # the index's own construction embedded the corpus: not a retrieval
    with collect_events() as collector:
        response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM(), callback_manager=manager).query(QUERY)
    assert [n.node.node_id for n in response.source_nodes] == ["right"]
    seen = _dump(collector.events) + repr(debug.get_events())
    assert CORPUS["right"][0] in seen  # the handlers do record node text: the gated node's
    for text in WRONG:
        assert text not in seen
    ends = [e for e in collector.events if type(e).__name__ == "RetrievalEndEvent"]
    assert [[n.node.node_id for n in e.nodes] for e in ends] == [["right"]]  # type: ignore[attr-defined]


async def test_async_event_handler_sees_only_gated_nodes() -> None:
    """The async path (aretrieve) dispatches no wrapped retrieval events either."""
    index = VectorStoreIndex(make_nodes(), embed_model=HashLlamaEmbedding())
    retriever = GatedRetriever(
        index.as_retriever(similarity_top_k=4), scope=SCOPE, gate=make_gate(), embed_model=HashLlamaEmbedding()
    )
    with collect_events() as collector:
        out = await retriever.aretrieve(QUERY)
    assert [n.node.node_id for n in out] == ["right"]
    seen = _dump(collector.events)
    assert all(text not in seen for text in WRONG)


def _persisted_docstore(override: bool) -> str:
    store = GatedVectorStore(
        SimpleVectorStore(), embed_model=HashLlamaEmbedding(), scope=SCOPE, origin="user_explicit", gate=make_gate()
    )
    context = StorageContext.from_defaults(vector_store=store)
    VectorStoreIndex.from_documents(
        [
            Document(id_="secret", text=SECRET),  # rejected: first, so a naive zip would pair it with an id
            Document(id_="pii", text=f"Invoices for the newsletter go to {EMAIL} monthly."),
            Document(id_="ok", text=CORPUS["right"][0]),
        ],
        storage_context=context,
        embed_model=HashLlamaEmbedding(),
        store_nodes_override=override,
    )
    folder = tempfile.mkdtemp()
    context.persist(folder)
    return "".join(open(os.path.join(folder, f), encoding="utf-8").read() for f in sorted(os.listdir(folder)))


def test_rejected_text_reaches_no_docstore() -> None:
    """Neither the index's docstore nor anything persisted holds the refused key or the unmasked address."""
    for override in (False, True):
        blob = _persisted_docstore(override)
        assert "sk-proj-" not in blob and EMAIL not in blob, override
        assert "weekly newsletter goes out" in blob or not override  # the stored node is there


def test_override_docstore_holds_the_screened_nodes() -> None:
    """With store_nodes_override=True the index's docstore gets exactly the stored, masked nodes."""
    store = GatedVectorStore(
        SimpleVectorStore(), embed_model=HashLlamaEmbedding(), scope=SCOPE, origin="user_explicit", gate=make_gate()
    )
    index = VectorStoreIndex.from_documents(
        [Document(id_="secret", text=SECRET), Document(id_="pii", text=f"Invoices go to {EMAIL} monthly.")],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=HashLlamaEmbedding(),
        store_nodes_override=True,
    )
    texts = [n.get_content() for n in index.docstore.docs.values()]
    assert len(texts) == 1 and "<EMAIL_ADDRESS>" in texts[0] and EMAIL not in texts[0]
