"""``GatedRetriever``: a LlamaIndex retriever whose every result passed the recall gate (A2)."""

from __future__ import annotations

import asyncio
import copy
import logging
import warnings
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks import CallbackManager
from llama_index.core.schema import IndexNode, NodeWithScore, QueryBundle, QueryType

from shared_core import GateResult, RecallGate, Scope
from shared_core.errors import ConfigError
from shared_core.interop import (
    PlainMode,
    check_plain,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
)
from shared_core.recall.wrapped import gate_candidates
from shared_core.retrieval.fusion import FusionConfig
from shared_core.store import MemoryStore
from shared_core.timeutil import to_utc

from .convert import candidate_from_node, gated_nodes, node_from_hit, plain_count
from .embeddings import gate_embedder
from .events import dispatch_audit
from .scope import ScopeLike, current_scope, recall_scope, scope_source

__all__ = ["GatedRetriever", "embed_model_option", "quiet_aretrieve", "quiet_retrieve"]

_COMPONENT = "GatedRetriever"
_log = logging.getLogger("llamaindex_recall_gate")


def _bundle(query: QueryType) -> QueryBundle:
    return QueryBundle(query_str=query) if isinstance(query, str) else query


def embed_model_option(embed_model: Any, embedding: Any) -> Any:
    """``embed_model``, or the deprecated ``embedding=`` alias (a ``DeprecationWarning``)."""
    if embedding is None:
        return embed_model
    if embed_model is not None:
        raise ConfigError("give embed_model= (embedding= is its deprecated alias), not both")
    warnings.warn(
        "embedding= is deprecated in the LlamaIndex adapter: use embed_model=",
        DeprecationWarning,
        stacklevel=3,
    )
    return embedding


def quiet_retrieve(retriever: BaseRetriever, bundle: QueryBundle) -> list[NodeWithScore]:
    """A wrapped retriever's nodes without its own retrieval events (issue 13 "tracing leaks").

    ``BaseRetriever.retrieve`` dispatches ``RetrievalStartEvent`` / ``RetrievalEndEvent`` (every
    candidate, other users' and rejected ones included) and a callback-manager ``RETRIEVE``
    event; the gated retriever calls the wrapped one's ``_retrieve`` (the extension point
    LlamaIndex retrievers implement) instead, so only gated nodes reach the caller's handlers.
    Recursive retrieval of ``IndexNode`` objects is kept. LlamaIndex offers no way to mute span
    handlers: one that records the return values of ``_retrieve`` spans still sees them.
    """
    nodes = retriever._retrieve(bundle)
    if any(isinstance(n.node, IndexNode) for n in nodes):
        nodes = retriever._handle_recursive_retrieval(bundle, nodes)
    return nodes


async def quiet_aretrieve(retriever: BaseRetriever, bundle: QueryBundle) -> list[NodeWithScore]:
    """Async :func:`quiet_retrieve`; a retriever with no async path of its own runs in a worker thread."""
    if type(retriever)._aretrieve is BaseRetriever._aretrieve:  # the default calls _retrieve on the loop
        nodes = await asyncio.to_thread(retriever._retrieve, bundle)
    else:
        nodes = await retriever._aretrieve(bundle)
    if any(isinstance(n.node, IndexNode) for n in nodes):
        nodes = await retriever._ahandle_recursive_retrieval(bundle, nodes)
    return nodes


class GatedRetriever(BaseRetriever):
    """A retriever that returns only what the recall gate accepts; drop it in anywhere.

    It wraps either retrievers you already have (any ``BaseRetriever``: a ``VectorStoreIndex``
    retriever, ``BM25Retriever``, ...) or a recall-gate :class:`~shared_core.store.MemoryStore`.
    Every decision is the core's (:func:`shared_core.recall.wrapped.gate_candidates` or
    :meth:`MemoryStore.query`); this class only converts nodes and delegates.

    **Wrapping retrievers.** The retrievers run (concurrently in ``aretrieve``), their results are
    fused by node id with ``weights`` really applied (RRF by default), each node's metadata is read
    as the memory's record (see :mod:`llamaindex_recall_gate.convert`) and the gate accepts or
    rejects it. The score the gate thresholds on is the cosine computed by the core with
    ``embed_model``, else ``metadata[score_key]``, else none — then only the lexical share of
    query terms (``min_lexical_score``) can pass. Native retriever scores are never thresholded.
    The wrapped retrievers' own retrieval events never reach your event handlers (see
    :func:`quiet_retrieve`): they carry ungated nodes.

    **Wrapping a MemoryStore** (:meth:`from_store`): scoped hybrid retrieval (BM25 + vectors,
    scope pushed into both) and the store's gate.

    **Scope.** Per call with :meth:`retrieve_scoped` / :meth:`aretrieve_scoped`, for a whole block
    (a query engine) with :func:`llamaindex_recall_gate.recall_scope`, else the constructor's;
    without any, :class:`shared_core.ScopeError` before anything is retrieved. It fails closed:
    see :mod:`llamaindex_recall_gate.scope`.

    **Output.** Accepted nodes in the gate's order, as copies whose ``metadata["recall_gate"]``
    holds the provenance (hidden from the LLM and embeddings) and whose score is the bounded gate
    score. Every run dispatches a :class:`~llamaindex_recall_gate.RecallGateAuditEvent`; a run
    that accepts nothing from a non-empty list logs one warning (logger
    ``llamaindex_recall_gate``) with the counts by reason and what to add.

    Args:
        retrievers: one retriever or several (mutually exclusive with ``store``).
        store: a ``MemoryStore`` (prefer :meth:`from_store`).
        scope: default scope.
        gate: the recall gate (default: the calibrated threshold of ``embed_model`` — 0.54 for
            :class:`~llamaindex_recall_gate.MiniLMEmbedding` — else the seeds' 0.78).
        weights: per-retriever fusion weights.
        names: per-retriever channel names (provenance); default ``retriever_0``, ...
        fusion: fusion settings (RRF by default).
        embed_model: embedding with which the core computes the semantic score (``embedding=``
            is a deprecated alias).
        score_key: metadata key holding a similarity in [-1, 1] (used without ``embed_model``).
        lexical_key: metadata key holding a keyword score in [0, 1].
        id_key: metadata key holding the memory id (default: the node id).
        k: at most this many accepted nodes (overrides the config's ``max_hits``).
        candidates: fused candidates a ``MemoryStore`` passes to its gate.
        dry_run: mark audit records as previews (decisions are identical).
        provenance: add ``metadata["recall_gate"]`` to accepted nodes.
        plain_documents: nodes without record metadata: ``"reject"`` (``invalid``) or ``"owned"``
            (approved memories of the constructor scope; see the LangChain adapter's docs).
        callback_manager: LlamaIndex callback manager.
        verbose: LlamaIndex verbosity flag.

    Example:
        >>> retriever = GatedRetriever(index.as_retriever(similarity_top_k=20), scope=scope,
        ...                            embed_model=MiniLMEmbedding())
        >>> engine = RetrieverQueryEngine.from_args(retriever, llm=llm)
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
        embed_model: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        k: int | None = None,
        candidates: int | None = None,
        dry_run: bool = False,
        provenance: bool = True,
        plain_documents: PlainMode = "reject",
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        embedding: Any = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        embed_model = embed_model_option(embed_model, embedding)
        if (retrievers is None) == (store is None):
            raise ConfigError("give either retrievers or a MemoryStore (store=), not both and not neither")
        inner = [retrievers] if isinstance(retrievers, BaseRetriever) else list(retrievers or [])
        if store is None and not inner:
            raise ConfigError("retrievers must hold at least one retriever")
        wrapped_only = {
            "gate": gate,
            "weights": weights,
            "names": names,
            "fusion": fusion,
            "embed_model": embed_model,
            "score_key": score_key,
            "lexical_key": lexical_key,
            "id_key": id_key,
        }
        given = [name for name, value in wrapped_only.items() if value is not None]
        if store is not None and given:
            raise ConfigError(
                f"a MemoryStore brings its own gate, fusion and embedding: {', '.join(given)} "
                "apply to wrapped retrievers only"
            )
        if store is None and candidates is not None:
            raise ConfigError("candidates= applies to a MemoryStore only")
        if weights is not None and len(weights) != len(inner):
            raise ConfigError(f"{len(weights)} weights given for {len(inner)} retrievers")
        if names is not None and (len(names) != len(inner) or len(set(names)) != len(names)):
            raise ConfigError("names must be unique, one per retriever")
        positive_int("k", k)
        positive_int("candidates", candidates)
        self._scopes = scope_source(scope)
        check_plain(plain_documents, self._scopes.default)
        self._retrievers: tuple[BaseRetriever, ...] = tuple(inner)
        self._store = store
        self._embedder = gate_embedder(embed_model) if embed_model is not None else None
        self._gate = store.gate if store is not None else default_gate(gate, embed_model, self._embedder)
        self._weights = list(weights) if weights is not None else None
        self._names = list(names) if names is not None else None
        self._fusion = fusion
        self._score_key = score_key
        self._lexical_key = lexical_key
        self._id_key = id_key
        self._k = k
        self._candidates = candidates
        self._dry_run = dry_run
        self._provenance = provenance
        self._plain_documents = plain_documents

    @property
    def scope(self) -> Scope | None:
        """The constructor's scope."""
        return self._scopes.default

    @property
    def gate(self) -> RecallGate:
        """The recall gate this retriever applies."""
        return self._gate

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
        cls, store: MemoryStore, *, scope: ScopeLike | None = None, **kwargs: Any
    ) -> GatedRetriever:
        """Expose a recall-gate ``MemoryStore`` (scoped hybrid retrieval + its gate) as a retriever."""
        return cls(store=store, scope=scope, **kwargs)

    # -- per-call scope and preview -------------------------------------------------------------

    def retrieve_scoped(self, query: QueryType, *, scope: ScopeLike) -> list[NodeWithScore]:
        """``retrieve()`` on behalf of ``scope`` (instead of the constructor's)."""
        with recall_scope(scope):
            return self.retrieve(query)

    async def aretrieve_scoped(self, query: QueryType, *, scope: ScopeLike) -> list[NodeWithScore]:
        """``aretrieve()`` on behalf of ``scope`` (instead of the constructor's)."""
        with recall_scope(scope):
            return await self.aretrieve(query)

    def preview(self, query: QueryType, *, scope: ScopeLike | None = None) -> GateResult:
        """Dry run (R10): what the gate would accept and reject, with reasons; nothing goes to an LLM.

        Raises:
            ScopeError: if there is no scope.
        """
        bundle = _bundle(query)
        scope_obj = self._scopes.resolve(scope, current_scope())
        if self._store is not None:
            return self._store_query(self._store, bundle, scope_obj, dry_run=True)[1]
        channels = [quiet_retrieve(r, copy.copy(bundle)) for r in self._retrievers]
        return self._gate_channels(bundle, channels, scope_obj, dry_run=True)[1]

    # -- LlamaIndex hooks: one pipeline, two ways to fetch ----------------------------------------

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        scope = self._scopes.resolve(None, current_scope())  # before any retrieval work (R1)
        if self._store is not None:
            return self._store_query(self._store, query_bundle, scope, dry_run=self._dry_run)[0]
        channels = [quiet_retrieve(r, copy.copy(query_bundle)) for r in self._retrievers]
        return self._gate_channels(query_bundle, channels, scope, dry_run=self._dry_run)[0]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        scope = self._scopes.resolve(None, current_scope())
        if self._store is not None:
            nodes, _ = await asyncio.to_thread(
                self._store_query, self._store, query_bundle, scope, dry_run=self._dry_run
            )
            return nodes
        channels = await asyncio.gather(
            *(quiet_aretrieve(r, copy.copy(query_bundle)) for r in self._retrievers)
        )
        nodes, _ = await asyncio.to_thread(
            self._gate_channels, query_bundle, list(channels), scope, dry_run=self._dry_run
        )
        return nodes

    # -- internals ------------------------------------------------------------------------------

    def _store_query(
        self, store: MemoryStore, query_bundle: QueryBundle, scope: Scope, *, dry_run: bool
    ) -> tuple[list[NodeWithScore], GateResult]:
        result = store.query(
            query_bundle.query_str, scope=scope, k=self._k, dry_run=dry_run, candidates=self._candidates
        )
        dispatch_audit(result.audit, component=_COMPONENT)
        _warn(recall_feedback(result, _COMPONENT))
        return [node_from_hit(hit, provenance=self._provenance) for hit in result.accepted], result

    def _gate_channels(
        self,
        query_bundle: QueryBundle,
        channels: Sequence[Sequence[NodeWithScore]],
        scope: Scope,
        *,
        dry_run: bool,
    ) -> tuple[list[NodeWithScore], GateResult]:
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self._gate.clock()))
            if self._plain_documents == "owned" and owner is not None
            else None
        )
        wrapped = gate_candidates(
            query_bundle.query_str,
            [
                [
                    candidate_from_node(
                        n,
                        id_key=self._id_key,
                        score_key=self._score_key,
                        lexical_key=self._lexical_key,
                        plain=plain,
                    )
                    for n in chan
                ]
                for chan in channels
            ],
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
        semantic = self._embedder is not None or self._score_key is not None
        plain_n = 0 if plain is not None else plain_count(channels)
        _warn(recall_feedback(wrapped.result, _COMPONENT, plain=plain_n, semantic=semantic))
        nodes = gated_nodes(wrapped, channels, id_key=self._id_key, provenance=self._provenance)
        return nodes, wrapped.result


def _warn(line: str | None) -> None:
    if line is not None:
        _log.warning(line)
