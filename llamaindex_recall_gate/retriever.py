"""``GatedRetriever``: a LlamaIndex retriever whose every result passed the recall gate (A2)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import NodeWithScore, QueryBundle, QueryType

from shared_core import ConfigError, GateResult, RecallGate, Scope, coerce_scope
from shared_core.embedding import as_embedder
from shared_core.recall.wrapped import gate_candidates
from shared_core.retrieval.fusion import FusionConfig
from shared_core.store import MemoryStore

from .convert import candidate_from_node, gated_nodes, node_from_hit
from .events import dispatch_audit
from .scope import ScopeLike, recall_scope, resolve_scope

__all__ = ["GatedRetriever"]

_COMPONENT = "GatedRetriever"


def _bundle(query: QueryType) -> QueryBundle:
    return QueryBundle(query_str=query) if isinstance(query, str) else query


def _positive_int(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"{name} must be a positive integer")


class GatedRetriever(BaseRetriever):
    """A retriever that returns only what the recall gate accepts; drop it in anywhere.

    It wraps either retrievers you already have (any ``BaseRetriever``: a
    ``VectorStoreIndex`` retriever, ``BM25Retriever``, ...) or a recall-gate
    :class:`~shared_core.store.MemoryStore`. Every decision is the core's
    (:func:`shared_core.candidates.gate_candidates` or :meth:`MemoryStore.query`); this class only
    converts nodes and delegates.

    **Wrapping retrievers.** The retrievers run (concurrently in ``aretrieve``), their results are
    fused by node id with ``weights`` really applied (RRF by default, ``fusion`` to change), each
    node's metadata is read as the memory's record (``user_id``, ``agent_id``,
    ``memory_space_id``, ``status``, ``updated_at``, ``tags``, ``supersedes``...) and the gate
    accepts or rejects it. The score the gate thresholds on is the cosine computed by the core
    with ``embedding`` (anything :func:`shared_core.embedding.as_embedder` accepts, including a
    LlamaIndex ``BaseEmbedding``), else ``metadata[score_key]`` if you declare it a similarity in
    [-1, 1], else none — then only the lexical share of query terms (``min_lexical_score``) can
    pass. Native retriever scores (``exp(-d)``, BM25, RRF) are never thresholded. The scope is not
    pushed into wrapped retrievers (the gate rechecks every hit); use :class:`GatedVectorStore` or
    a ``MemoryStore`` to filter by scope before similarity.

    **Wrapping a MemoryStore** (:meth:`from_store`): scoped hybrid retrieval (BM25 + vectors,
    scope pushed into both) and the store's gate.

    **Scope.** From the constructor for the standard ``retrieve()``/``aretrieve()``; per call
    with :meth:`retrieve_scoped`/:meth:`aretrieve_scoped`, or for a whole block (a query engine)
    with :func:`llamaindex_recall_gate.recall_scope`. Without any,
    :class:`shared_core.ScopeError` is raised before anything is retrieved.

    **Output.** Accepted nodes in the gate's order (tier priority, then rank), as copies whose
    ``metadata["recall_gate"]`` holds the provenance (channels, ranks, scores, validity, source;
    hidden from the LLM and embeddings) and whose score is the bounded gate score: the semantic
    cosine, or the lexical share when there is no semantic score. Every run dispatches a
    :class:`~llamaindex_recall_gate.RecallGateAuditEvent` and feeds the gate's audit sinks.

    Args:
        retrievers: one retriever or several (mutually exclusive with ``store``).
        store: a ``MemoryStore`` (prefer :meth:`from_store`).
        scope: default scope of ``retrieve()``.
        gate: the recall gate (default: ``RecallGate()`` with the seeds' defaults).
        weights: per-retriever fusion weights.
        names: per-retriever channel names (provenance); default ``retriever_0``, ...
        fusion: fusion settings (RRF by default).
        embedding: embedding with which the core computes the semantic score.
        score_key: metadata key holding a similarity in [-1, 1] (used without ``embedding``).
        lexical_key: metadata key holding a keyword score in [0, 1] (instead of the core's
            lexical share of query terms).
        id_key: metadata key holding the memory id (default: the node id).
        k: at most this many accepted nodes (overrides the config's ``max_hits``).
        candidates: fused candidates a ``MemoryStore`` passes to its gate.
        callback_manager: LlamaIndex callback manager.
        verbose: LlamaIndex verbosity flag.

    Example:
        >>> retriever = GatedRetriever(
        ...     index.as_retriever(similarity_top_k=20),
        ...     scope={"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"},
        ...     gate=RecallGate(GateConfig(min_score=0.5)),
        ...     embedding=embed_model,
        ... )
        >>> engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
        >>> nodes = retriever.retrieve_scoped("when do we post?", scope=other_scope)
    """

    def __init__(
        self,
        retrievers: BaseRetriever | Sequence[BaseRetriever] | None = None,
        *,
        store: MemoryStore | None = None,
        scope: ScopeLike | None = None,
        gate: RecallGate | None = None,
        weights: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
        fusion: FusionConfig | None = None,
        embedding: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        k: int | None = None,
        candidates: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        if (retrievers is None) == (store is None):
            raise ConfigError("give either retrievers or a MemoryStore (store=), not both or neither")
        inner = [retrievers] if isinstance(retrievers, BaseRetriever) else list(retrievers or [])
        if store is None and not inner:
            raise ConfigError("retrievers must hold at least one retriever")
        if store is not None and any(
            v is not None for v in (gate, weights, names, fusion, embedding, score_key, lexical_key, id_key)
        ):
            raise ConfigError(
                "a MemoryStore brings its own gate, fusion and embedding; "
                "gate/weights/names/fusion/embedding/score_key/id_key apply to wrapped retrievers"
            )
        if store is None and candidates is not None:
            raise ConfigError("candidates= applies to a MemoryStore only")
        if weights is not None and len(weights) != len(inner):
            raise ConfigError(f"{len(weights)} weights given for {len(inner)} retrievers")
        if names is not None and (len(names) != len(inner) or len(set(names)) != len(names)):
            raise ConfigError("names must be unique, one per retriever")
        _positive_int("k", k)
        _positive_int("candidates", candidates)
        self._retrievers: tuple[BaseRetriever, ...] = tuple(inner)
        self._store = store
        self._scope: Scope | None = coerce_scope(scope) if scope is not None else None
        self._gate = gate if gate is not None else (store.gate if store is not None else RecallGate())
        self._weights = list(weights) if weights is not None else None
        self._names = list(names) if names is not None else None
        self._fusion = fusion
        self._embedder = as_embedder(embedding) if embedding is not None else None
        self._score_key = score_key
        self._lexical_key = lexical_key
        self._id_key = id_key
        self._k = k
        self._candidates = candidates

    # -- constructors ---------------------------------------------------------------------------

    @classmethod
    def from_defaults(
        cls,
        retrievers: BaseRetriever | Sequence[BaseRetriever] | None = None,
        *,
        index: Any = None,
        similarity_top_k: int = 20,
        **kwargs: Any,
    ) -> GatedRetriever:
        """Gate given retrievers, or ``index.as_retriever(similarity_top_k=...)`` of an index.

        Ask the index for more than you need (default 20): the gate keeps at most ``k``
        (or ``max_hits``) of what passes.

        Args:
            retrievers: retrievers to wrap (mutually exclusive with ``index``).
            index: any LlamaIndex index with ``as_retriever`` (e.g. a ``VectorStoreIndex``).
            similarity_top_k: candidates asked from ``index``.
            **kwargs: keyword options of :class:`GatedRetriever`.

        Raises:
            ConfigError: if both or neither of ``retrievers`` and ``index`` are given.
        """
        if (retrievers is None) == (index is None):
            raise ConfigError("give either retrievers or index=, not both or neither")
        if index is not None:
            retrievers = index.as_retriever(similarity_top_k=similarity_top_k)
        return cls(retrievers, **kwargs)

    @classmethod
    def from_store(
        cls,
        store: MemoryStore,
        *,
        scope: ScopeLike | None = None,
        k: int | None = None,
        candidates: int | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> GatedRetriever:
        """Expose a recall-gate ``MemoryStore`` (scoped hybrid retrieval + its gate) as a retriever."""
        return cls(store=store, scope=scope, k=k, candidates=candidates, callback_manager=callback_manager)

    # -- per-call scope and preview -------------------------------------------------------------

    def retrieve_scoped(self, query: QueryType, *, scope: ScopeLike) -> list[NodeWithScore]:
        """``retrieve()`` on behalf of ``scope`` (instead of the constructor's).

        Raises:
            ScopeError: if ``scope`` is missing or incomplete.
        """
        with recall_scope(scope):
            return self.retrieve(query)

    async def aretrieve_scoped(self, query: QueryType, *, scope: ScopeLike) -> list[NodeWithScore]:
        """``aretrieve()`` on behalf of ``scope`` (instead of the constructor's).

        Raises:
            ScopeError: if ``scope`` is missing or incomplete.
        """
        with recall_scope(scope):
            return await self.aretrieve(query)

    def preview(self, query: QueryType, *, scope: ScopeLike | None = None) -> GateResult:
        """Dry-run (R10): what the gate would accept and reject, with reasons; nothing is returned to an LLM.

        Raises:
            ScopeError: if there is no scope.
        """
        if scope is not None:
            with recall_scope(scope):
                return self._run(_bundle(query), dry_run=True)[1]
        return self._run(_bundle(query), dry_run=True)[1]

    # -- LlamaIndex hooks -----------------------------------------------------------------------

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._run(query_bundle, dry_run=False)[0]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        scope = resolve_scope(self._scope)
        if self._store is not None:
            result = await asyncio.to_thread(self._store_query, self._store, query_bundle, scope, False)
            return self._from_store_result(result)
        channels = await asyncio.gather(*(r.aretrieve(copy.copy(query_bundle)) for r in self._retrievers))
        return self._gate_channels(query_bundle, list(channels), scope, dry_run=False)[0]

    # -- internals ------------------------------------------------------------------------------

    def _run(self, query_bundle: QueryBundle, *, dry_run: bool) -> tuple[list[NodeWithScore], GateResult]:
        scope = resolve_scope(self._scope)  # before any retrieval work (R1)
        if self._store is not None:
            result = self._store_query(self._store, query_bundle, scope, dry_run)
            return self._from_store_result(result), result
        channels = [r.retrieve(copy.copy(query_bundle)) for r in self._retrievers]
        return self._gate_channels(query_bundle, channels, scope, dry_run=dry_run)

    def _store_query(
        self, store: MemoryStore, query_bundle: QueryBundle, scope: Scope, dry_run: bool
    ) -> GateResult:
        return store.query(
            query_bundle.query_str, scope=scope, k=self._k, dry_run=dry_run, candidates=self._candidates
        )

    def _from_store_result(self, result: GateResult) -> list[NodeWithScore]:
        dispatch_audit(result.audit, component=_COMPONENT)
        return [node_from_hit(hit) for hit in result.accepted]

    def _gate_channels(
        self,
        query_bundle: QueryBundle,
        channels: Sequence[Sequence[NodeWithScore]],
        scope: Scope,
        *,
        dry_run: bool,
    ) -> tuple[list[NodeWithScore], GateResult]:
        wrapped = gate_candidates(
            query_bundle.query_str,
            [[candidate_from_node(n, id_key=self._id_key) for n in chan] for chan in channels],
            scope=scope,
            gate=self._gate,
            names=self._names,
            weights=self._weights,
            fusion=self._fusion,
            embedder=self._embedder,
            score_key=self._score_key,
            lexical_key=self._lexical_key,
            dry_run=dry_run,
            k=self._k,
            extra={"adapter": "llama_index", "component": _COMPONENT},
        )
        dispatch_audit(wrapped.result.audit, component=_COMPONENT)
        return gated_nodes(wrapped, channels, id_key=self._id_key), wrapped.result
