"""``RecallGateCompressor``: the recall gate as a LangChain document compressor."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from pydantic import ConfigDict, PrivateAttr

from shared_core import GateResult, RecallGate, Scope
from shared_core.interop import (
    PlainMode,
    ScopeSource,
    check_plain,
    core_embedder,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
)
from shared_core.timeutil import to_utc

from .callbacks import adispatch_audit_to, dispatch_audit_to
from .convert import config_scope, gate_documents

__all__ = ["RecallGateCompressor"]

_log = logging.getLogger("langchain_recall_gate")


class RecallGateCompressor(BaseDocumentCompressor):
    """Gate a list of documents already retrieved, e.g. in a ``ContextualCompressionRetriever``.

    The documents are treated as one ranked channel, converted to core candidates (ids from
    ``Document.id`` or ``metadata[id_key]``, record fields from metadata as in
    :mod:`langchain_recall_gate.convert`), gated, and the accepted ones come back as copies with
    provenance in ``metadata["recall_gate"]``. The audit record goes to the gate's sinks and,
    inside a run, out as a ``recall_gate.audit`` custom event.

    **Scope**: ``config["configurable"]["scope"]`` of the running chain wins over the
    constructor's; once the compressor has served such a per-request scope it never falls back to
    its constructor scope (``ScopeError`` instead). A compressor receives no config of its own:
    it sees the running chain's, so ``configurable.scope`` reaches it when the
    ``ContextualCompressionRetriever`` runs as a step of a chain; a bare
    ``ContextualCompressionRetriever.invoke(q, config=...)`` does not pass its config on (use
    :class:`~langchain_recall_gate.GatedRetriever`, which takes it directly and also keeps the
    base retriever's ungated results out of your tracing).

    Attributes:
        scope: the default scope.
        gate: the recall gate (default: the calibrated threshold of ``embedding``, else the seeds').
        k: at most this many documents (``None``: the memory space's ``max_hits``).
        embedding: a LangChain ``Embeddings`` (or anything ``as_embedder`` accepts), for cosines.
        score_key: metadata key holding a similarity in [-1, 1].
        lexical_key: metadata key holding a keyword score in [0, 1] (default: computed by the core).
        id_key: metadata key holding the memory id (default: ``Document.id``).
        dry_run: mark runs as previews in the audit (R10).
        provenance: add ``metadata["recall_gate"]`` to accepted documents.
        plain_documents: ``"reject"`` or ``"owned"``, as for :class:`~langchain_recall_gate.GatedRetriever`.

    Example:
        >>> from langchain_classic.retrievers import ContextualCompressionRetriever
        >>> retriever = ContextualCompressionRetriever(
        ...     base_compressor=RecallGateCompressor(scope=scope, score_key="score"),
        ...     base_retriever=my_retriever,
        ... )
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scope: Scope | None = None
    gate: RecallGate | None = None
    k: int | None = None
    embedding: Any = None
    score_key: str | None = None
    lexical_key: str | None = None
    id_key: str | None = None
    dry_run: bool = False
    provenance: bool = True
    plain_documents: PlainMode = "reject"

    _embedder: Any = PrivateAttr(default=None)
    _gate: RecallGate = PrivateAttr()
    _scopes: ScopeSource = PrivateAttr()

    def __init__(self, **data: Any) -> None:
        scopes = ScopeSource(data.get("scope"))
        data["scope"] = scopes.default
        positive_int("k", data.get("k"))
        check_plain(data.get("plain_documents", "reject"), scopes.default)
        super().__init__(**data)
        self._scopes = scopes

    def model_post_init(self, context: Any, /) -> None:
        """Adapt the embedding once; pick the gate."""
        self._embedder = core_embedder(self.embedding) if self.embedding is not None else None
        self._gate = default_gate(self.gate, self.embedding, self._embedder)

    def _run(
        self, documents: Sequence[Document], query: str, scope: Scope
    ) -> tuple[list[Document], GateResult]:
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self._gate.clock()))
            if self.plain_documents == "owned" and owner is not None
            else None
        )
        pairs, result, plain_count = gate_documents(
            query,
            [list(documents)],
            scope=scope,
            gate=self._gate,
            names=["documents"],
            embedder=self._embedder,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            id_key=self.id_key,
            k=self.k,
            dry_run=self.dry_run,
            provenance=self.provenance,
            plain=plain,
            extra={"adapter": "langchain", "component": "RecallGateCompressor"},
        )
        semantic = self._embedder is not None or self.score_key is not None
        line = recall_feedback(result, "RecallGateCompressor", plain=plain_count, semantic=semantic)
        if line is not None:
            _log.warning(line)
        return [doc for _, doc in pairs], result

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Return the accepted documents, in the gate's order.

        Raises:
            ScopeError: if there is no scope (see the class docstring).
        """
        scope = self._scopes.resolve(None, config_scope(None))
        docs, result = self._run(documents, query, scope)
        dispatch_audit_to(result.audit, callbacks)
        return docs

    async def acompress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> Sequence[Document]:
        """Async :meth:`compress_documents` (gating runs in a worker thread)."""
        scope = self._scopes.resolve(None, config_scope(None))
        docs, result = await asyncio.to_thread(self._run, documents, query, scope)
        await adispatch_audit_to(result.audit, callbacks)
        return docs
