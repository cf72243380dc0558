"""LangChain adapter for recall-gate: gated retrievers, a gated vector store, audit callbacks (A1).

Adapters only convert and delegate: every decision is made by :mod:`shared_core`. The public
surface is pinned by ``tests/test_langchain_api.py``.
"""

from __future__ import annotations

from shared_core.interop import PROVENANCE_KEY

from .callbacks import AUDIT_EVENT, AuditCallbackHandler
from .compressor import RecallGateCompressor
from .embeddings import MiniLMEmbeddings
from .retriever import GatedRetriever
from .vectorstore import GatedVectorStore
from .vectorstore_retriever import GatedVectorStoreRetriever

__all__ = [
    "AUDIT_EVENT",
    "PROVENANCE_KEY",
    "AuditCallbackHandler",
    "GatedRetriever",
    "GatedVectorStore",
    "GatedVectorStoreRetriever",
    "MiniLMEmbeddings",
    "RecallGateCompressor",
]
