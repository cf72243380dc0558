"""``GatedVectorStore``: the write gate and the recall gate around any LlamaIndex vector store (A2).

Writes (``add``, hence every ``VectorStoreIndex`` insert) run the core's write gate
(:class:`~shared_core.write.gate.WriteGate`) over the inner store (:mod:`.target`), with the same
ledger and lifecycle as :class:`~shared_core.store.MemoryStore`; queries go through
:func:`shared_core.recall.wrapped.gate_candidates`. The adapter converts and delegates.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, NodeWithScore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)

from shared_core import AuditRecord, AuditSink, ConfigBook, Origin, RecallGate, Scope, Tier
from shared_core.errors import ConfigError, InputError
from shared_core.interop import (
    PlainMode,
    check_plain,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
    staged_batch,
    visible_filter,
    write_feedback,
)
from shared_core.interop.operator import OperatorActions
from shared_core.model import is_encoded
from shared_core.recall.wrapped import gate_candidates
from shared_core.store import MemoryStore
from shared_core.timeutil import Clock, to_utc
from shared_core.write import WriteAction, WriteDecision, WriteGate, WritePolicy, lifecycle
from shared_core.write.authority import WritePath
from shared_core.write.ledger import InMemoryLedger, Ledger

from .convert import (
    candidate_from_node,
    gated_nodes,
    node_from_hit,
    node_from_record,
    plain_count,
    stored_node,
    write_item_from_node,
)
from .embeddings import gate_embedder
from .events import dispatch_audit
from .retriever import embed_model_option
from .scope import ScopeLike, current_scope, scope_source
from .target import NodeStoreTarget, to_filters

__all__ = ["GatedVectorStore"]

_COMPONENT = "GatedVectorStore"
_log = logging.getLogger("llamaindex_recall_gate")
_TRUST_KEYS = ("origin", "tier", "cited", "confirmations", "evidence_count", "verification_status")
_SCOPE_KEYS = ("user_id", "agent_id", "memory_space_id", "route_id")
_KEPT = (WriteAction.WRITE, WriteAction.UPDATE, WriteAction.MERGE)


class GatedVectorStore(OperatorActions, BasePydanticVectorStore):
    """Wrap a LlamaIndex vector store so that writes pass the write gate and queries the recall gate.

    Use it as the ``vector_store`` of a ``StorageContext``; every ``VectorStoreIndex`` insert
    then calls :meth:`add`, and every index retriever calls :meth:`query`::

        store = GatedVectorStore(
            ChromaVectorStore(chroma_collection=collection),
            embed_model=MiniLMEmbedding(),
            scope={"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"},
            origin="user_explicit",
        )
        index = VectorStoreIndex.from_documents(
            docs, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=MiniLMEmbedding()
        )

    **Writes** (:meth:`add`, :meth:`submit`). Each node becomes a write candidate: its text is the
    body, metadata keys named like candidate fields give the record fields (``title``,
    ``status``, ``tags``...), missing ones come from ``write_defaults``, its id is the node id and
    its source record is ``ref_doc_id``. The core's write gate decides — secrets rejected,
    injections and untrusted notes held for review (:meth:`quarantine_list`,
    :meth:`quarantine_approve`, TTL), PII masked, dedup and supersede against stored memories,
    tombstones and lineage — with the same ledger protocol as ``MemoryStore`` (``ledger=``:
    in process by default, or ``shared_core.store.ledger.ChromaLedger``). Written nodes carry the
    record in the core's flat codec (hidden from the LLM and from embeddings), so the collection
    is readable by the LangChain adapter and by ``MemoryStore``. The stored vector is
    ``embed_model``'s embedding of the screened title and body.

    **Authority** (R1, W3) is this filter's, never the nodes': every write is in the caller's scope
    (a node whose metadata names another owner is rejected ``scope_mismatch``), with the filter's
    ``origin`` (default ``agent_inferred``), ``tier`` ceiling, ``cited`` and ``allow_shared``;
    metadata may lower trust, never raise it. A write or delete by id touches only the caller's
    memories (``not_owner``, without saying whether the id exists).

    **What the gate refuses reaches no docstore.** This store reports ``stores_text=True`` (an
    inner store that keeps no text gets a private document store of screened nodes), so a
    ``VectorStoreIndex`` keeps nothing in its own docstore; with ``store_nodes_override=True`` the
    index pairs the nodes it passed to :meth:`add` with the returned ids, so :meth:`add` rewrites
    the list it was given, in place, to hold exactly the stored (screened) nodes. An
    ``IngestionPipeline`` with a docstore stores its input documents itself: pass
    ``store_doc_text=False`` or no docstore.

    **Queries** (:meth:`query`). The scope is pushed into the inner query as metadata filters on the
    codec's partition keys, ANDed with the query's own filters (nested, whatever their condition;
    ``prefilter=False`` for stores filled by other means). At least ``fetch_k`` candidates are
    asked for; the gate keeps at most ``similarity_top_k``. Returned similarities are the
    cosine the core computes with ``embed_model`` (or the lexical share). Scope:
    ``vector_store_kwargs={"scope": ...}`` of the retriever, else
    :func:`~llamaindex_recall_gate.recall_scope`, else the constructor's.

    **Deletes.** :meth:`delete` (``index.delete_ref_doc``) deletes the caller's memories derived
    from that source and tombstones their ids; :meth:`delete_nodes` deletes the caller's memories
    by id; :meth:`forget` forgets a source record for every owner (an operator action: the
    source itself is tombstoned, L2).

    Args:
        vector_store: the LlamaIndex vector store to wrap (or ``store=``).
        embed_model: the embedding of the index (required over a vector store; ``embedding=`` is a
            deprecated alias).
        store: a :class:`~shared_core.store.MemoryStore` to use instead (see :meth:`from_store`).
        scope: default scope.
        origin, tier, cited, allow_shared: this filter's write authority (see above).
        write_defaults: candidate fields for nodes whose metadata lacks them (no trust, no owner).
        write_policy: write-gate settings, or a ``ConfigBook`` with per-space policies.
        ledger: quarantine, tombstones, lineage, forget journal (default: in process).
        gate: the recall gate (default: the calibrated threshold of ``embed_model``, else the seeds').
        sinks: audit sinks for writes and deletes (events are dispatched anyway).
        clock: the write gate's clock (default: the recall gate's).
        fetch_k: ask the inner store for at least this many candidates (default 20).
        prefilter: push the scope into inner queries as metadata filters.
        provenance: add ``metadata["recall_gate"]`` to returned nodes.
        plain_documents: nodes in the inner store without record metadata: ``"reject"`` or
            ``"owned"`` (turns the prefilter off).
    """

    stores_text: bool = True
    is_embedding_query: bool = True

    _inner: BasePydanticVectorStore | None = PrivateAttr(default=None)
    _store: MemoryStore | None = PrivateAttr(default=None)
    _target: NodeStoreTarget | None = PrivateAttr(default=None)
    _writer: WriteGate = PrivateAttr()
    _embedder: Any = PrivateAttr(default=None)
    _scopes: Any = PrivateAttr()
    _authority: dict[str, Any] = PrivateAttr(default_factory=dict)
    _write_defaults: dict[str, Any] = PrivateAttr(default_factory=dict)
    _gate: RecallGate = PrivateAttr()
    _fetch_k: int = PrivateAttr(default=20)
    _prefilter: bool = PrivateAttr(default=True)
    _provenance: bool = PrivateAttr(default=True)
    _plain_documents: str = PrivateAttr(default="reject")

    def __init__(
        self,
        vector_store: BasePydanticVectorStore | None = None,
        *,
        embed_model: Any = None,
        store: MemoryStore | None = None,
        scope: ScopeLike | None = None,
        origin: Origin | str = Origin.AGENT_INFERRED,
        tier: Tier | str | None = None,
        cited: bool = False,
        allow_shared: bool = False,
        write_defaults: Mapping[str, Any] | None = None,
        write_policy: WritePolicy | ConfigBook | None = None,
        ledger: Ledger | None = None,
        gate: RecallGate | None = None,
        sinks: Sequence[AuditSink] = (),
        clock: Clock | None = None,
        fetch_k: int = 20,
        prefilter: bool = True,
        provenance: bool = True,
        plain_documents: PlainMode = "reject",
        embedding: Any = None,
    ) -> None:
        embed_model = embed_model_option(embed_model, embedding)
        if (vector_store is None) == (store is None):
            raise ConfigError("give either a vector store or store=..., not both and not neither")
        if store is not None:
            given = [
                n
                for n, v in (
                    ("embed_model", embed_model),
                    ("gate", gate),
                    ("ledger", ledger),
                    ("write_policy", write_policy),
                )
                if v is not None
            ]
            if given:
                raise ConfigError(
                    f"a MemoryStore brings its own gate, embedding, ledger and write policy: {', '.join(given)} "
                    "apply to a wrapped vector store only"
                )
        elif embed_model is None:
            raise ConfigError("embed_model= is required: the index's embedding model")
        positive_int("fetch_k", fetch_k, allow_none=False)
        defaults = dict(write_defaults or {})
        misplaced = [k for k in (*_TRUST_KEYS, *_SCOPE_KEYS) if k in defaults]
        if misplaced:
            raise ConfigError(
                f"write_defaults may not set {', '.join(misplaced)}: trust and owner are the write "
                "filter's options (origin=, tier=, cited=, allow_shared=, scope=)"
            )
        super().__init__(
            stores_text=True,
            is_embedding_query=vector_store.is_embedding_query if vector_store is not None else False,
        )
        self._scopes = scope_source(scope)
        check_plain(plain_documents, self._scopes.default)
        self._write_defaults = defaults
        self._authority = {
            "origin": Origin(origin),
            "tier": None if tier is None else Tier(tier),
            "cited": cited,
            "allow_shared": allow_shared,
        }
        self._fetch_k = fetch_k
        self._prefilter = prefilter and plain_documents != "owned"
        self._provenance = provenance
        self._plain_documents = plain_documents
        if store is not None:
            self._store = store
            self._gate = store.gate
            self._writer = store.writer
            return
        assert vector_store is not None
        self._inner = vector_store
        self._embedder = gate_embedder(embed_model)
        self._gate = default_gate(
            gate, embed_model, self._embedder, sinks=sinks, **({} if clock is None else {"clock": clock})
        )
        self._target = NodeStoreTarget(vector_store, self._embedder, ledger=ledger or InMemoryLedger())
        self._writer = WriteGate(
            self._target,
            self._target.ledger,
            policy=write_policy,
            sinks=(*sinks, self._event_sink),
            clock=clock if clock is not None else self._gate.clock,
        )
        lifecycle.resume(self._writer)

    @classmethod
    def from_store(
        cls, store: MemoryStore, *, scope: ScopeLike | None = None, **kwargs: Any
    ) -> GatedVectorStore:
        """A LlamaIndex vector store over the memory store: its hybrid query, write gate and ledger."""
        return cls(store=store, scope=scope, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        """Name of the component (LlamaIndex convention)."""
        return "GatedVectorStore"

    @property
    def client(self) -> Any:
        """The wrapped store's client."""
        return self._inner.client if self._inner is not None else None

    @property
    def vector_store(self) -> BasePydanticVectorStore | None:
        """The wrapped store (ungated: for operators, never for the model)."""
        return self._inner

    @property
    def scope(self) -> Scope | None:
        """The constructor's scope."""
        return self._scopes.default  # type: ignore[no-any-return]

    @property
    def gate(self) -> RecallGate:
        """The recall gate applied to queries."""
        return self._gate

    @property
    def writer(self) -> WriteGate:
        """The write gate in front of the inner store (or the memory store's)."""
        return self._writer

    # -- writes ---------------------------------------------------------------------------------

    def _path(self, scope: Scope) -> WritePath:
        return WritePath.pinned(scope, name="llama_index", **self._authority)

    def _staged(self, nodes: Mapping[str, BaseNode]) -> AbstractContextManager[None]:
        return staged_batch(self._writer.lock, self._target, nodes)

    def submit(
        self, nodes: Sequence[BaseNode], *, scope: ScopeLike | None = None, dry_run: bool = False
    ) -> list[WriteDecision]:
        """Pass nodes through the write gate and store what it lets through; one decision per node.

        ``write`` decisions carry the node id, ``quarantine`` ones the hold id. ``dry_run=True``
        decides without writing or holding anything.
        """
        scope_obj = self._scopes.resolve(scope, current_scope())
        items = [self._item(n) for n in nodes]
        with self._staged({n.node_id: n for n in nodes}):
            decisions = self._writer.submit(items, path=self._path(scope_obj), dry_run=dry_run)
        line = write_feedback(decisions, _COMPONENT)
        if line is not None:
            _log.warning(line)
        return decisions

    def _item(self, node: BaseNode) -> dict[str, Any]:
        return write_item_from_node(node, defaults=self._write_defaults)

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store the nodes the write gate lets through; returns their ids (see the class docstring).

        A ``list`` passed in is rewritten in place to the stored (screened) nodes, in the order of
        the returned ids.
        """
        decisions = self.submit(nodes, scope=add_kwargs.pop("scope", None))
        originals = {n.node_id: n for n in nodes}
        stored = [
            stored_node(originals.get(d.id), d.record)
            for d in decisions
            if d.stored and d.id is not None and d.record is not None
        ]
        if isinstance(nodes, list):
            nodes[:] = stored
        return [n.node_id for n in stored]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async :meth:`add` (in a worker thread: screens and embedding are CPU-bound)."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    # -- lifecycle: the core's (OperatorActions), through this filter's write gate -----------

    def _write_gate(self) -> WriteGate:
        return self._writer

    def _delete_ids(self, ids: Sequence[str], scope: Any) -> dict[str, Any]:
        scope_obj = self._scopes.resolve(scope, current_scope())
        return lifecycle.delete(self._writer, ids, memory_space_id=scope_obj.memory_space_id, scope=scope_obj)

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete the caller's memories derived from a source document (``index.delete_ref_doc``), tombstoning their ids."""
        found = [*self._writer.target.ids_of_source(ref_doc_id), *self._writer.ledger.linked(ref_doc_id)]
        ids = sorted({mid for _, mid in found})
        self._delete_ids(ids, delete_kwargs.get("scope"))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async :meth:`delete`."""
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Delete the caller's memories by id (tombstoned, so they cannot be written again).

        Raises:
            InputError: without ``node_ids`` (a write filter deletes by id, never by a filter).
        """
        if not node_ids or filters is not None:
            raise InputError("delete_nodes needs node_ids and no filters: a write filter deletes by id")
        self._delete_ids(node_ids, delete_kwargs.get("scope"))

    async def adelete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Async :meth:`delete_nodes`."""
        await asyncio.to_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    def clear(self) -> None:
        """Refused: a write filter has no delete-all (use :meth:`delete_nodes` or :meth:`forget`).

        Raises:
            InputError: always.
        """
        raise InputError("a write filter has no clear(): delete by id (delete_nodes) or forget a source")

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Stored nodes by id or filter, ungated (for operators and LlamaIndex internals, not for the model)."""
        if self._store is not None:
            space = self._scopes.resolve(None, current_scope()).memory_space_id
            return [node_from_record(r) for r in self._store.get(list(node_ids or []), memory_space_id=space)]
        assert self._target is not None
        return self._target.get_nodes(node_ids, filters)

    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Persist the inner store (pass a persistent ``ledger`` to keep quarantine and tombstones)."""
        if self._inner is not None:
            self._inner.persist(persist_path, fs=fs)

    # -- queries: one pipeline, two ways to fetch -----------------------------------------------

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Query the inner store inside the scope and return only what the recall gate accepts."""
        scope = self._query_scope(kwargs)
        if self._store is not None:
            return self._from_store(query, scope)
        assert self._inner is not None
        inner_query = self._inner_query(query, scope)
        return self._gate_result(query, self._inner.query(inner_query, **kwargs), scope, inner_query)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async :meth:`query` (awaits the inner store's ``aquery``; gating runs in a worker thread)."""
        scope = self._query_scope(kwargs)
        if self._store is not None:
            return await asyncio.to_thread(self._from_store, query, scope)
        assert self._inner is not None
        inner_query = self._inner_query(query, scope)
        result = await self._inner.aquery(inner_query, **kwargs)
        return await asyncio.to_thread(self._gate_result, query, result, scope, inner_query)

    def _query_scope(self, kwargs: dict[str, Any]) -> Scope:
        explicit = kwargs.pop("scope", None)
        return self._scopes.resolve(explicit, current_scope())  # type: ignore[no-any-return]

    def _inner_query(self, query: VectorStoreQuery, scope: Scope) -> VectorStoreQuery:
        return dataclasses.replace(
            query,
            similarity_top_k=max(query.similarity_top_k, self._fetch_k),
            filters=self._scoped_filters(query.filters, scope),
            # An index over a text-storing store (this one) tracks no node ids and passes []:
            # "no restriction", as text-storing stores read it, not "no node" as SimpleVectorStore does.
            node_ids=query.node_ids or None,
        )

    def _scoped_filters(self, filters: MetadataFilters | None, scope: Scope) -> MetadataFilters | None:
        """The query's filters ANDed with the scope's partition keys (nested when they use OR or NOT)."""
        if not self._prefilter:
            return filters
        ours: list[MetadataFilter | MetadataFilters] = list(to_filters(visible_filter(scope)).filters)
        if filters is None or not filters.filters:
            return MetadataFilters(filters=ours)
        if filters.condition in (None, FilterCondition.AND):
            return MetadataFilters(filters=[*ours, *filters.filters], condition=FilterCondition.AND)
        return MetadataFilters(filters=[*ours, filters], condition=FilterCondition.AND)

    def _result_nodes(self, result: VectorStoreQueryResult) -> list[NodeWithScore]:
        sims = list(result.similarities or [])
        if result.nodes is not None:
            nodes: list[BaseNode | None] = list(result.nodes)
        elif self._target is not None and result.ids is not None:
            nodes = self._target.nodes_of_ids(result.ids)
        else:
            nodes = []
        return [
            NodeWithScore(node=n, score=sims[i] if i < len(sims) else None)
            for i, n in enumerate(nodes)
            if n is not None
        ]

    def _gate_result(
        self,
        query: VectorStoreQuery,
        result: VectorStoreQueryResult,
        scope: Scope,
        inner_query: VectorStoreQuery,
    ) -> VectorStoreQueryResult:
        found = self._result_nodes(result)
        text = query.query_str or ""
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self._gate.clock()))
            if self._plain_documents == "owned" and owner is not None
            else None
        )
        wrapped = gate_candidates(
            text,
            [[candidate_from_node(n, plain=plain) for n in found]],
            scope=scope,
            gate=self._gate,
            names=["vector_store"],
            embedder=self._embedder if text else None,
            k=max(1, query.similarity_top_k),
            extra={"adapter": "llama_index", "component": _COMPONENT},
        )
        dispatch_audit(wrapped.result.audit, component=_COMPONENT)
        line = recall_feedback(
            wrapped.result,
            _COMPONENT,
            plain=0 if plain is not None else plain_count([found]),
            semantic=bool(text),
        )
        if line is None and not found and self._prefilter and self._holds_plain(inner_query):
            line = (
                "GatedVectorStore found no candidate in the caller's scope, while the store holds nodes "
                "this filter did not write (no record metadata); they are never searched with "
                "prefilter on: write them through this filter, or pass prefilter=False"
            )
        if line is not None:
            _log.warning(line)
        accepted = gated_nodes(wrapped, [found], provenance=self._provenance)
        return VectorStoreQueryResult(
            nodes=[n.node for n in accepted],
            similarities=[float(n.score) if n.score is not None else 0.0 for n in accepted],
            ids=[n.node.node_id for n in accepted],
        )

    def _holds_plain(self, inner_query: VectorStoreQuery) -> bool:
        """Whether the inner store holds nodes without record metadata (one unfiltered look)."""
        assert self._inner is not None
        if inner_query.query_embedding is None:
            return False
        probe = dataclasses.replace(inner_query, filters=None)
        return any(not is_encoded(n.node.metadata) for n in self._result_nodes(self._inner.query(probe)))

    def _from_store(self, query: VectorStoreQuery, scope: Scope) -> VectorStoreQueryResult:
        assert self._store is not None
        result = self._store.query(query.query_str or "", scope=scope, k=max(1, query.similarity_top_k))
        dispatch_audit(result.audit, component=_COMPONENT)
        line = recall_feedback(result, _COMPONENT)
        if line is not None:
            _log.warning(line)
        nodes = [node_from_hit(h, provenance=self._provenance) for h in result.accepted]
        return VectorStoreQueryResult(
            nodes=[n.node for n in nodes],
            similarities=[float(n.score) if n.score is not None else 0.0 for n in nodes],
            ids=[n.node.node_id for n in nodes],
        )

    # -- audit ----------------------------------------------------------------------------------

    def _event_sink(self, record: AuditRecord) -> None:
        dispatch_audit(record, component=_COMPONENT)
