"""``GatedRetriever``: a LangChain retriever whose results went through the recall gate (A1)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import Field, PrivateAttr, model_validator

from shared_core import GateResult, RecallGate, Scope, coerce_scope
from shared_core.embedding import as_embedder
from shared_core.retrieval.fusion import FusionConfig
from shared_core.store import MemoryStore

from .callbacks import adispatch_audit, dispatch_audit
from .convert import config_scope_kwargs, gate_documents, hit_document, resolve_scope

__all__ = ["GatedRetriever"]


class GatedRetriever(BaseRetriever):
    """A retriever that returns only the memories the recall gate accepts.

    Two ways in (DESIGN "Two ways in, both first-class"):

    * **wrap what you have** — ``GatedRetriever(retrievers=[bm25, vector], weights=[1, 2],
      scope=...)`` runs your retrievers (concurrently in async), fuses their results by stable
      id (RRF, weights really applied), computes bounded scores and gates every document on its
      metadata (the seeds' ``MemoryHit`` fields: ``user_id``, ``agent_id``, ``memory_space_id``,
      ``updated_at``, ``status``, ...). Ids come from ``Document.id`` or ``metadata[id_key]``;
    * **the hybrid store** — ``GatedRetriever.from_store(store, scope=...)`` runs the memory
      store's scoped BM25 + vector query and its gate (``store.query``).

    The scope is required (R1): at construction, per call (``invoke(q, scope=...)``) or in
    ``config["configurable"]["scope"]``; the per-call scope wins. Without one the call raises
    :class:`~shared_core.ScopeError` before any retrieval runs. Accepted documents are copies whose
    ``metadata["recall_gate"]`` holds their provenance (R12; ``provenance=False`` leaves metadata
    as it was); rejected documents never come out. Each call dispatches one
    ``recall_gate.audit`` custom event (see :mod:`langchain_recall_gate.callbacks`) and sends the
    record to the gate's sinks.

    Attributes:
        retrievers: the retrievers to wrap (one or several); or use ``store``.
        weights: fusion weight per retriever (default 1.0 each).
        names: channel name per retriever, unique, shown in provenance (default ``retriever_0``,
            ``retriever_1``, ..., as in the LlamaIndex adapter).
        store: a :class:`~shared_core.store.MemoryStore` to query instead (see :meth:`from_store`).
        gate: the recall gate for wrapped retrievers (default ``RecallGate()``, the seeds'
            settings); a store uses its own gate.
        scope: default scope (a :class:`~shared_core.Scope` or a mapping of its fields).
        k: at most this many documents (``None``: the memory space's ``max_hits``); per call too.
        embedding: anything :func:`shared_core.embedding.as_embedder` accepts (e.g. a LangChain
            ``Embeddings``): the gate's semantic score is then the cosine it computes.
        score_key: metadata key holding a similarity in [-1, 1] (used without ``embedding``).
        lexical_key: metadata key holding a keyword score in [0, 1], used instead of the lexical
            share the core computes (e.g. scores exported from another system).
        id_key: metadata key holding the memory id (default: ``Document.id``).
        fusion: fusion settings for several retrievers (RRF by default).
        candidates: fused candidates the store passes to the gate (store only).
        dry_run: mark runs as previews in the audit (R10); decisions are identical.
        provenance: add ``metadata["recall_gate"]`` to accepted documents.

    Example:
        >>> retriever = GatedRetriever(retrievers=[vectorstore.as_retriever(search_kwargs={"k": 20})],
        ...                            embedding=embeddings, scope={"user_id": "u1", "agent_id": "bot",
        ...                            "memory_space_id": "acme"}, k=4)
        >>> chain = retriever | format_docs | prompt | llm
        >>> retriever.invoke("when do we post?", scope=other_scope)  # per-call scope wins

    The wrapped retrievers decide how many candidates they return: give them a generous ``k``
    (the gate drops some). In async, wrapped retrievers run concurrently through their own
    ``ainvoke``; the store path runs ``store.query`` in a worker thread (``asyncio.to_thread``),
    as does gating when an ``embedding`` is set (embedding calls can block).
    """

    retrievers: list[BaseRetriever] = Field(default_factory=list)
    weights: list[float] | None = None
    names: list[str] | None = None
    store: MemoryStore | None = None
    gate: RecallGate | None = None
    scope: Scope | None = None
    k: int | None = None
    embedding: Any = None
    score_key: str | None = None
    lexical_key: str | None = None
    id_key: str | None = None
    fusion: FusionConfig | None = None
    candidates: int | None = None
    dry_run: bool = False
    provenance: bool = True

    _gate: RecallGate = PrivateAttr()
    _embedder: Any = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        if data.get("scope") is not None:
            data["scope"] = coerce_scope(data["scope"])  # ScopeError, not a pydantic error
        super().__init__(**data)

    @model_validator(mode="after")
    def _check(self) -> GatedRetriever:
        if (self.store is None) == (not self.retrievers):
            raise ValueError("give either retrievers=[...] or store=..., not both and not neither")
        if self.store is not None and self.gate is not None:
            raise ValueError("a store applies its own gate: configure it on the MemoryStore")
        if self.weights is not None and len(self.weights) != len(self.retrievers):
            raise ValueError("weights must have one entry per retriever")
        if self.names is not None and (
            len(self.names) != len(self.retrievers) or len(set(self.names)) != len(self.names)
        ):
            raise ValueError("names must be unique, one per retriever")
        if self.k is not None and (isinstance(self.k, bool) or self.k < 1):
            raise ValueError("k must be a positive integer")
        return self

    def model_post_init(self, context: Any, /) -> None:
        """Adapt the embedding once."""
        self._gate = self.gate if self.gate is not None else RecallGate()
        self._embedder = as_embedder(self.embedding) if self.embedding is not None else None

    @classmethod
    def from_store(
        cls,
        store: MemoryStore,
        *,
        scope: Scope | dict[str, Any] | None = None,
        k: int | None = None,
        **kwargs: Any,
    ) -> GatedRetriever:
        """A retriever over the memory store's scoped hybrid query (BM25 + vector, then the gate).

        Args:
            store: the memory store.
            scope: default scope (per-call scope wins).
            k: at most this many documents (default: the memory space's ``max_hits``).
            **kwargs: other options (``dry_run``, ``provenance``, ``candidates``, ``tags``, ...).
        """
        return cls(store=store, scope=scope, k=k, **kwargs)

    # -- Runnable entry points: take the scope from config["configurable"] ----------------------

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve and gate; ``scope``, ``k`` and ``dry_run`` may be given per call."""
        return super().invoke(input, config, **config_scope_kwargs(config, kwargs))

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke`."""
        return await super().ainvoke(input, config, **config_scope_kwargs(config, kwargs))

    # -- the work ------------------------------------------------------------------------------

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        scope: Scope | dict[str, Any] | None = None,
        k: int | None = None,
        dry_run: bool | None = None,
    ) -> list[Document]:
        scope_obj = resolve_scope(scope, self.scope)  # before any retrieval (R1)
        if self.store is not None:
            result = self._query_store(self.store, query, scope_obj, k, dry_run)
            dispatch_audit(result.audit, run_manager)
            return [hit_document(h, provenance=self.provenance) for h in result.accepted]
        started = time.perf_counter()
        child = run_manager.get_child()
        channels = [r.invoke(query, config={"callbacks": child}) for r in self.retrievers]
        pairs, result = self._gate_channels(query, channels, scope_obj, k, dry_run, started)
        dispatch_audit(result.audit, run_manager)
        return [doc for _, doc in pairs]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        scope: Scope | dict[str, Any] | None = None,
        k: int | None = None,
        dry_run: bool | None = None,
    ) -> list[Document]:
        scope_obj = resolve_scope(scope, self.scope)  # before any retrieval (R1)
        if self.store is not None:
            result = await asyncio.to_thread(self._query_store, self.store, query, scope_obj, k, dry_run)
            await adispatch_audit(result.audit, run_manager)
            return [hit_document(h, provenance=self.provenance) for h in result.accepted]
        started = time.perf_counter()
        child = run_manager.get_child()
        channels = await asyncio.gather(
            *(r.ainvoke(query, config={"callbacks": child}) for r in self.retrievers)
        )
        if self._embedder is not None:
            pairs, result = await asyncio.to_thread(
                self._gate_channels, query, channels, scope_obj, k, dry_run, started
            )
        else:
            pairs, result = self._gate_channels(query, channels, scope_obj, k, dry_run, started)
        await adispatch_audit(result.audit, run_manager)
        return [doc for _, doc in pairs]

    def _query_store(
        self, store: MemoryStore, query: str, scope: Scope, k: int | None, dry_run: bool | None
    ) -> GateResult:
        return store.query(
            query,
            scope=scope,
            k=k if k is not None else self.k,
            dry_run=self.dry_run if dry_run is None else dry_run,
            candidates=self.candidates,
        )

    def _gate_channels(
        self,
        query: str,
        channels: list[list[Document]],
        scope: Scope,
        k: int | None,
        dry_run: bool | None,
        started: float,
    ) -> tuple[list[tuple[Document, Document]], GateResult]:
        return gate_documents(
            query,
            channels,
            scope=scope,
            gate=self._gate,
            names=self.names,
            weights=self.weights,
            fusion=self.fusion,
            embedder=self._embedder,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            id_key=self.id_key,
            k=k if k is not None else self.k,
            dry_run=self.dry_run if dry_run is None else dry_run,
            provenance=self.provenance,
            extra={
                "adapter": "langchain",
                "retrieve_ms": round((time.perf_counter() - started) * 1e3, 3),
                "retrievers": [r.get_name() for r in self.retrievers],
            },
        )
