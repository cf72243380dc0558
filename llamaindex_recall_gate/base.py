"""recall-gate for LlamaIndex: the public surface, re-exported by the package (A2).

* :class:`GatedRetriever` — a ``BaseRetriever`` that gates one or several retrievers, or a
  recall-gate ``MemoryStore``.
* :class:`RecallGatePostprocessor` — the recall gate as a node postprocessor.
* :class:`GatedVectorStore` — write gate and recall gate around any LlamaIndex vector store.
* :class:`RecallGateAuditEvent` — the audit record as an instrumentation event.
* :class:`MiniLMEmbedding` — the bundled offline embedding as a ``BaseEmbedding``.
* :func:`recall_scope` — the scope of every gated component called inside a ``with`` block.

Everything that decides lives in :mod:`shared_core`; these classes convert and delegate.
"""

from __future__ import annotations

from .embeddings import MiniLMEmbedding
from .events import RecallGateAuditEvent
from .postprocessor import RecallGatePostprocessor
from .retriever import GatedRetriever
from .scope import recall_scope
from .vector_store import GatedVectorStore

__all__ = [
    "GatedRetriever",
    "GatedVectorStore",
    "MiniLMEmbedding",
    "RecallGateAuditEvent",
    "RecallGatePostprocessor",
    "recall_scope",
]
