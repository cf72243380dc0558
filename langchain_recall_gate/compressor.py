"""``RecallGateCompressor``: the recall gate as a LangChain document compressor."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, Field, PrivateAttr

from shared_core import GateResult, RecallGate, Scope, coerce_scope
from shared_core.embedding import as_embedder

from .callbacks import adispatch_audit_to, dispatch_audit_to
from .convert import gate_documents, resolve_scope

__all__ = ["RecallGateCompressor"]


class RecallGateCompressor(BaseDocumentCompressor):
    """Gate a list of documents already retrieved, e.g. in a ``ContextualCompressionRetriever``.

    The documents are treated as one ranked channel, converted to core candidates (ids from
    ``Document.id`` or ``metadata[id_key]``, record fields from metadata), gated, and the accepted
    ones come back as copies with provenance in ``metadata["recall_gate"]``. The audit record goes
    to the gate's sinks and, inside a run, out as a ``recall_gate.audit`` custom event.

    Attributes:
        scope: the scope (required; a compressor receives no per-call arguments).
        gate: the recall gate (default ``RecallGate()``).
        k: at most this many documents (``None``: the memory space's ``max_hits``).
        embedding: anything :func:`shared_core.embedding.as_embedder` accepts, for cosine scores.
        score_key: metadata key holding a similarity in [-1, 1].
        lexical_key: metadata key holding a keyword score in [0, 1] (default: computed by the core).
        id_key: metadata key holding the memory id (default: ``Document.id``).
        dry_run: mark runs as previews in the audit (R10).
        provenance: add ``metadata["recall_gate"]`` to accepted documents.

    Example:
        >>> from langchain_classic.retrievers import ContextualCompressionRetriever
        >>> retriever = ContextualCompressionRetriever(
        ...     base_compressor=RecallGateCompressor(scope=scope, score_key="score"),
        ...     base_retriever=my_retriever,
        ... )
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scope: Scope | None = None
    gate: RecallGate = Field(default_factory=RecallGate)
    k: int | None = None
    embedding: Any = None
    score_key: str | None = None
    lexical_key: str | None = None
    id_key: str | None = None
    dry_run: bool = False
    provenance: bool = True

    _embedder: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        if data.get("scope") is not None:
            data["scope"] = coerce_scope(data["scope"])
        super().__init__(**data)

    def model_post_init(self, context: Any, /) -> None:
        """Adapt the embedding once."""
        self._embedder = as_embedder(self.embedding) if self.embedding is not None else None

    def _gate(self, documents: Sequence[Document], query: str) -> tuple[list[Document], GateResult]:
        pairs, result = gate_documents(
            query,
            [list(documents)],
            scope=resolve_scope(None, self.scope),
            gate=self.gate,
            names=["documents"],
            embedder=self._embedder,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            id_key=self.id_key,
            k=self.k,
            dry_run=self.dry_run,
            provenance=self.provenance,
            extra={"adapter": "langchain", "component": "compressor"},
        )
        return [doc for _, doc in pairs], result

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return the accepted documents, in the gate's order.

        Raises:
            ScopeError: if the compressor has no scope.
        """
        docs, result = self._gate(documents, query)
        dispatch_audit_to(result.audit, callbacks)
        return docs

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (gating runs in a worker thread when an embedding is set)."""
        if self._embedder is not None:
            docs, result = await asyncio.to_thread(self._gate, documents, query)
        else:
            docs, result = self._gate(documents, query)
        await adispatch_audit_to(result.audit, callbacks)
        return docs
