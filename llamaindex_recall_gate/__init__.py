"""LlamaIndex adapter for recall-gate: gated retriever, postprocessor, vector store, audit events."""

from llamaindex_recall_gate.base import (
    GatedRetriever,
    GatedVectorStore,
    MiniLMEmbedding,
    RecallGateAuditEvent,
    RecallGatePostprocessor,
    recall_scope,
)

__all__ = [
    "GatedRetriever",
    "GatedVectorStore",
    "MiniLMEmbedding",
    "RecallGateAuditEvent",
    "RecallGatePostprocessor",
    "recall_scope",
]
