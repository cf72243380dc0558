"""``GatedVectorStore``: the write gate and the recall gate around any LlamaIndex vector store (A2).

Writes (``add``, hence every ``VectorStoreIndex`` insert) are decided by the core's
store-independent write gate, :func:`shared_core.write_gate.decide_writes` (size, tombstones,
screens for secrets / injection / hidden text / PII, masking, trust); queries go through
:func:`shared_core.candidates.gate_candidates`; deletions keep lineage and tombstones (L2).

The records to store and the write audit record come from the core too
(:func:`~shared_core.write_gate.decide_writes` with ``now=``,
:func:`~shared_core.write_gate.write_audit_record`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryResult,
)

from shared_core import AuditRecord, AuditSink, ConfigBook, RecallGate, Scope, Visibility, coerce_scope
from shared_core.audit import emit
from shared_core.embedding import as_embedder
from shared_core.model import SHARED_BUCKET, MemoryRecord, bucket_of
from shared_core.recall.wrapped import gate_candidates
from shared_core.timeutil import Clock, system_clock, to_utc
from shared_core.write import (
    MemoryCandidate,
    WriteAction,
    WriteDecision,
    WritePolicy,
    decide_writes,
    write_audit_record,
)

from .convert import candidate_from_node, gated_nodes, record_metadata, write_item_from_node
from .events import dispatch_audit
from .scope import ScopeLike, current_scope

if TYPE_CHECKING:
    pass

__all__ = ["GatedVectorStore"]

_COMPONENT = "GatedVectorStore"


@dataclasses.dataclass(frozen=True)
class _Held:
    candidate: MemoryCandidate
    reasons: tuple[str, ...]
    held_at: datetime
    expires_at: datetime


class GatedVectorStore(BasePydanticVectorStore):
    """Wrap a LlamaIndex vector store so that writes pass the write gate and queries the recall gate.

    Use it as the ``vector_store`` of a ``StorageContext``; every ``VectorStoreIndex`` insert
    then calls :meth:`add`, and every index retriever calls :meth:`query`::

        store = GatedVectorStore(
            ChromaVectorStore(chroma_collection=collection),
            embed_model=embed_model,
            scope={"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"},
            write_defaults={"origin": "user_explicit", "cited": True, "tier": "confirmed"},
            gate=RecallGate(GateConfig(min_score=0.5)),
        )
        index = VectorStoreIndex.from_documents(
            docs, storage_context=StorageContext.from_defaults(vector_store=store), embed_model=embed_model
        )

    **Writes** (:meth:`add`, :meth:`submit`). Each node becomes a write candidate: its text is the
    body, its metadata gives the record fields (``title``, scope, ``status``, ``origin``,
    ``cited``, ``tags``...), missing ones come from ``scope`` and ``write_defaults``, its id is the
    node id and its source record is ``ref_doc_id``. The core's write gate decides: credentials
    are rejected (never stored), injection / hidden text is quarantined (or rejected by policy),
    PII is masked (or rejected), untrusted origins are quarantined, tombstoned sources are
    rejected. Written nodes carry the record's fields in flat metadata (tuples as JSON, times as
    ISO strings plus epoch ``*_ts``, partition keys ``rg_route``/``rg_bucket``; all hidden from the
    LLM and from embeddings). A node whose text was masked is re-embedded with ``embed_model``, so
    no stored vector encodes the unmasked text. :meth:`add` returns only the ids actually written.
    Quarantined nodes are held in this process (:meth:`quarantine_list`,
    :meth:`quarantine_reject`, :meth:`quarantine_purge`), never written, never recalled.

    Caveats. ``VectorStoreIndex`` embeds nodes *before* calling ``add``: the embedding model sees
    text this store later rejects. A foreign store gives no neighbour lookup, so there is no
    dedup against existing memories (W2) and no supersede by ``entity`` + ``attribute``. Lineage,
    tombstones and the quarantine live in this process (not persisted). Metadata other than the
    record fields is not screened.

    **Queries** (:meth:`query`). The scope is pushed into the inner query as metadata filters on the
    partition keys written above (``memory_space_id``, ``rg_route``, ``rg_bucket``), ANDed with the
    query's own filters (filters with another condition are left as they are; set
    ``prefilter=False`` for stores filled by other means). At least ``fetch_k`` candidates are
    asked for, the gate keeps at most ``similarity_top_k``. The gate's semantic score is the cosine
    the core computes with ``embed_model`` between the query text and each candidate's text
    (native similarities such as Chroma's ``exp(-distance)`` are never thresholded); returned
    similarities are that cosine (or the lexical share). Scope: ``vector_store_kwargs={"scope":
    ...}`` of the retriever, else :func:`~llamaindex_recall_gate.recall_scope`, else the
    constructor's; with none, :class:`shared_core.ScopeError`.

    **Deletes** (:meth:`delete` by ``ref_doc_id``, :meth:`delete_nodes`). Delegated to the inner
    store, with tombstones so that the source or node cannot be written again (L2), held
    candidates of that source discarded, and a ``delete`` audit record with counts.

    Inner stores that do not store text (``SimpleVectorStore``) are supported: the screened nodes'
    text is kept in a private document store, so ``stores_text`` is always ``True`` and the index
    never puts unscreened nodes in its own docstore.

    Args:
        vector_store: the LlamaIndex vector store to wrap.
        embed_model: the embedding model of the index (a LlamaIndex ``BaseEmbedding`` or anything
            :func:`shared_core.embedding.as_embedder` accepts); re-embeds masked nodes and gives the
            gate its cosine.
        scope: default scope of queries and default scope fields of written nodes.
        write_defaults: default write-candidate fields (``origin``, ``cited``, ``tier``, ``tags``...).
        gate: the recall gate (default: ``RecallGate()`` with the seeds' defaults).
        write_policy: write-gate settings, or a ``ConfigBook`` with per-space policies (default
            ``WritePolicy()``).
        sinks: audit sinks for write and delete records, and for recall records of the default
            gate (a ``gate`` you pass keeps its own sinks); events are dispatched anyway.
        clock: injected clock for write decisions and audit times.
        fetch_k: ask the inner store for at least this many candidates.
        prefilter: push the scope into inner queries as metadata filters.
    """

    stores_text: bool = True
    is_embedding_query: bool = True

    _inner: BasePydanticVectorStore = PrivateAttr()
    _embed_model: Any = PrivateAttr()
    _embedder: Any = PrivateAttr()
    _scope: Scope | None = PrivateAttr(default=None)
    _write_defaults: dict[str, Any] = PrivateAttr(default_factory=dict)
    _gate: RecallGate = PrivateAttr()
    _book: ConfigBook = PrivateAttr()
    _audit_sinks: tuple[AuditSink, ...] = PrivateAttr()
    _sinks: tuple[AuditSink, ...] = PrivateAttr(default=())
    _clock: Clock = PrivateAttr()
    _fetch_k: int = PrivateAttr(default=0)
    _prefilter: bool = PrivateAttr(default=True)
    _docstore: SimpleDocumentStore | None = PrivateAttr(default=None)
    _lineage: dict[str, set[str]] = PrivateAttr(default_factory=dict)
    _tombstones: set[str] = PrivateAttr(default_factory=set)
    _held: dict[str, _Held] = PrivateAttr(default_factory=dict)
    _lock: Any = PrivateAttr(default_factory=threading.RLock)

    def __init__(
        self,
        vector_store: BasePydanticVectorStore,
        *,
        embed_model: Any,
        scope: ScopeLike | None = None,
        write_defaults: Mapping[str, Any] | None = None,
        gate: RecallGate | None = None,
        write_policy: WritePolicy | ConfigBook | None = None,
        sinks: Sequence[AuditSink] = (),
        clock: Clock = system_clock,
        fetch_k: int | None = None,
        prefilter: bool = True,
    ) -> None:
        super().__init__(stores_text=True, is_embedding_query=vector_store.is_embedding_query)
        self._inner = vector_store
        self._embed_model = embed_model
        self._embedder = as_embedder(embed_model)
        self._scope = coerce_scope(scope) if scope is not None else None
        self._write_defaults = {**(self._scope.model_dump() if self._scope else {}), **(write_defaults or {})}
        self._gate = gate if gate is not None else RecallGate(sinks=sinks, clock=clock)
        self._sinks = tuple(sinks)
        self._clock = clock
        self._fetch_k = int(fetch_k or 0)
        self._prefilter = prefilter
        self._docstore = None if vector_store.stores_text else SimpleDocumentStore()
        self._book = (
            write_policy
            if isinstance(write_policy, ConfigBook)
            else ConfigBook(write_default=write_policy or WritePolicy())
        )
        self._audit_sinks = (*self._sinks, self._event_sink)

    @classmethod
    def class_name(cls) -> str:
        """Name of the component (LlamaIndex convention)."""
        return "GatedVectorStore"

    @property
    def client(self) -> Any:
        """The wrapped store's client."""
        return self._inner.client

    @property
    def vector_store(self) -> BasePydanticVectorStore:
        """The wrapped store (ungated: for operators, never for the model)."""
        return self._inner

    @property
    def gate(self) -> RecallGate:
        """The recall gate applied to queries."""
        return self._gate

    # -- writes ---------------------------------------------------------------------------------

    def submit(self, nodes: Sequence[BaseNode], *, dry_run: bool = False) -> list[WriteDecision]:
        """Pass nodes through the write gate and write what it lets through; one decision per node.

        ``write`` decisions carry the node id, ``quarantine`` ones the hold id (``q_<node id>``).
        ``dry_run=True`` decides without embedding, writing or holding anything (audited as a
        preview).
        """
        with self._lock:
            items = [write_item_from_node(n, defaults=self._write_defaults) for n in nodes]
            now = to_utc(self._clock())
            decided = decide_writes(items, policy=self._book, is_tombstoned=self._is_tombstoned, now=now, build=True)
            to_store: list[BaseNode] = []
            decisions: list[WriteDecision] = []
            for node, decision in zip(nodes, decided, strict=True):
                if decision.action is WriteAction.WRITE and decision.record is not None:
                    to_store.append(_stored_node(node, decision.record))
                elif decision.action is WriteAction.QUARANTINE and decision.candidate is not None:
                    qid = f"q_{node.node_id}"
                    if not dry_run:
                        self._hold(qid, decision.candidate, decision.reasons, now)
                    decision = decision.model_copy(update={"id": qid})
                decisions.append(decision.model_copy(update={"dry_run": dry_run}) if dry_run else decision)
            if to_store and not dry_run:
                self._embed_changed(to_store)
                self._write(to_store)
            record = write_audit_record(
                decisions, now=now, config_hash=self._book.config_hash(), dry_run=dry_run
            )
            emit(record, self._audit_sinks)
            return decisions

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Write the nodes the write gate lets through; returns the ids written (fewer than given when some were held or rejected)."""
        decisions = self.submit(nodes)
        return [d.id for d in decisions if d.stored and d.id is not None]

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async :meth:`add` (the gate runs in a worker thread)."""
        return await asyncio.to_thread(self.add, nodes, **kwargs)

    def _write(self, nodes: list[BaseNode]) -> None:
        """Write nodes the write gate let through (and only those) to the inner store; record lineage."""
        self._inner.add(nodes)
        if self._docstore is not None:
            copies = []
            for node in nodes:
                bare = node.model_copy()
                bare.embedding = None
                copies.append(bare)
            self._docstore.add_documents(copies, allow_update=True)
        for node in nodes:
            self._lineage.setdefault(node.ref_doc_id or node.node_id, set()).add(node.node_id)

    def _hold(self, qid: str, candidate: MemoryCandidate, reasons: Sequence[Any], now: datetime) -> None:
        """Hold a quarantined candidate (masked as decided) until reviewed or expired (W6)."""
        ttl = self._book.write_for(candidate.memory_space_id).quarantine_ttl_days
        self._held[qid] = _Held(
            candidate=candidate,
            reasons=tuple(str(getattr(r, "value", r)) for r in reasons),
            held_at=now,
            expires_at=now + timedelta(days=ttl),
        )

    def _is_tombstoned(self, source_record_id: str | None, mid: str | None) -> bool:
        keys = {f"src:{source_record_id}" if source_record_id else "", f"mem:{mid}" if mid else ""} - {""}
        return bool(keys & self._tombstones)

    def _embed_changed(self, to_store: list[BaseNode]) -> None:
        """Embed stored nodes that have no embedding (new, or text changed by masking)."""
        todo = [n for n in to_store if n.embedding is None]
        if not todo:
            return
        texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in todo]
        model = self._embed_model
        if callable(getattr(model, "get_text_embedding_batch", None)):
            vectors = [list(map(float, v)) for v in model.get_text_embedding_batch(texts)]
        else:
            vectors = [list(map(float, v)) for v in self._embedder.embed_documents(texts)]
        for node, vec in zip(todo, vectors, strict=True):
            node.embedding = vec

    # -- quarantine (in process) ----------------------------------------------------------------

    def quarantine_list(self) -> list[dict[str, Any]]:
        """Held candidates: id, node id, space, reasons, held and expiry times, source (no text)."""
        return [
            {
                "id": qid,
                "node_id": h.candidate.id,
                "memory_space_id": h.candidate.memory_space_id,
                "reasons": list(h.reasons),
                "held_at": h.held_at.isoformat(),
                "expires_at": h.expires_at.isoformat(),
                "source_record_id": h.candidate.source_record_id,
            }
            for qid, h in sorted(self._held.items(), key=lambda kv: (kv[1].held_at, kv[0]))
        ]

    def quarantine_reject(self, qid: str) -> bool:
        """Discard a held candidate; returns whether it existed."""
        with self._lock:
            return self._held.pop(qid, None) is not None

    def quarantine_purge(self) -> int:
        """Discard held candidates past their TTL (W6); returns how many."""
        now = to_utc(self._clock())
        with self._lock:
            expired = [qid for qid, h in self._held.items() if h.expires_at <= now]
            for qid in expired:
                del self._held[qid]
        return len(expired)

    # -- deletes (lineage, L2) ------------------------------------------------------------------

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of a source document, tombstone it, and audit the counts (L2)."""
        with self._lock:
            ids = sorted(self._lineage.pop(ref_doc_id, set()))
            held = [q for q, h in self._held.items() if h.candidate.source_record_id == ref_doc_id]
            self._tombstones.update([f"src:{ref_doc_id}", *(f"mem:{i}" for i in ids)])
            self._inner.delete(ref_doc_id, **delete_kwargs)
            if self._docstore is not None:
                for nid in ids:
                    self._docstore.delete_document(nid, raise_error=False)
            for qid in held:
                del self._held[qid]
            self._audit_delete(ids, held=len(held), source_record_id=ref_doc_id)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async :meth:`delete`."""
        await asyncio.to_thread(self.delete, ref_doc_id, **delete_kwargs)

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete nodes by id (tombstoned, so they cannot be written again) and audit the count."""
        with self._lock:
            ids = sorted(set(node_ids or []))
            self._tombstones.update(f"mem:{i}" for i in ids)
            self._inner.delete_nodes(node_ids, filters, **delete_kwargs)
            for members in self._lineage.values():
                members.difference_update(ids)
            if self._docstore is not None:
                for nid in ids:
                    self._docstore.delete_document(nid, raise_error=False)
            self._audit_delete(ids, held=0, source_record_id=None)

    def clear(self) -> None:
        """Clear the inner store, lineage and quarantine (no tombstones: a reset, not a forget)."""
        with self._lock:
            self._inner.clear()
            ids = sorted(i for members in self._lineage.values() for i in members)
            self._lineage.clear()
            held = len(self._held)
            self._held.clear()
            if self._docstore is not None:
                self._docstore = SimpleDocumentStore()
            self._audit_delete(ids, held=held, source_record_id=None)

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Stored nodes by id or filter, ungated (for operators and LlamaIndex internals, not for the model)."""
        if self._docstore is not None and node_ids is not None and filters is None:
            return [n for n in (self._docstore.get_node(i, raise_error=False) for i in node_ids) if n]
        return self._inner.get_nodes(node_ids, filters)

    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Persist the inner store (lineage, tombstones and quarantine are in-process only)."""
        self._inner.persist(persist_path, fs=fs)

    # -- queries --------------------------------------------------------------------------------

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Query the inner store inside the scope and return only what the recall gate accepts."""
        scope = self._query_scope(kwargs)
        result = self._inner.query(self._inner_query(query, scope), **kwargs)
        return self._gate_result(query, result, scope)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async :meth:`query` (awaits the inner store's ``aquery``)."""
        scope = self._query_scope(kwargs)
        result = await self._inner.aquery(self._inner_query(query, scope), **kwargs)
        return self._gate_result(query, result, scope)

    def _query_scope(self, kwargs: dict[str, Any]) -> Scope:
        explicit = kwargs.pop("scope", None)
        return coerce_scope(explicit if explicit is not None else (current_scope() or self._scope))

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
        """The query's filters ANDed with the scope's partition keys (the gate rechecks every hit)."""
        if not self._prefilter:
            return filters
        ours: list[MetadataFilter | MetadataFilters] = [
            MetadataFilter(key="memory_space_id", value=scope.memory_space_id),
            MetadataFilter(key="rg_route", value=scope.route_id or ""),
            MetadataFilter(
                key="rg_bucket",
                value=[bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE), SHARED_BUCKET],
                operator=FilterOperator.IN,
            ),
        ]
        if filters is None:
            return MetadataFilters(filters=ours)
        if filters.condition in (None, FilterCondition.AND):
            return MetadataFilters(filters=[*ours, *filters.filters], condition=FilterCondition.AND)
        return filters

    def _result_nodes(self, result: VectorStoreQueryResult) -> list[NodeWithScore]:
        sims = list(result.similarities or [])
        if result.nodes is not None:
            nodes: list[BaseNode | None] = list(result.nodes)
        elif self._docstore is not None and result.ids is not None:
            nodes = [self._docstore.get_node(i, raise_error=False) for i in result.ids]
        else:
            nodes = []
        return [
            NodeWithScore(node=n, score=sims[i] if i < len(sims) else None)
            for i, n in enumerate(nodes)
            if n is not None
        ]

    def _gate_result(
        self, query: VectorStoreQuery, result: VectorStoreQueryResult, scope: Scope
    ) -> VectorStoreQueryResult:
        found = self._result_nodes(result)
        text = query.query_str
        wrapped = gate_candidates(
            text or "",
            [[candidate_from_node(n) for n in found]],
            scope=scope,
            gate=self._gate,
            names=["vector_store"],
            embedder=self._embedder if text else None,
            k=max(1, query.similarity_top_k),
            extra={"adapter": "llama_index", "component": _COMPONENT},
        )
        dispatch_audit(wrapped.result.audit, component=_COMPONENT)
        accepted = gated_nodes(wrapped, [found])
        return VectorStoreQueryResult(
            nodes=[n.node for n in accepted],
            similarities=[float(n.score) if n.score is not None else 0.0 for n in accepted],
            ids=[n.node.node_id for n in accepted],
        )

    # -- audit ----------------------------------------------------------------------------------

    def _event_sink(self, record: AuditRecord) -> None:
        dispatch_audit(record, component=_COMPONENT)

    def _audit_delete(self, ids: Sequence[str], *, held: int, source_record_id: str | None) -> None:
        record = AuditRecord(
            event="delete",
            at=to_utc(self._clock()).isoformat(),
            scope={},
            counts={"memories": len(ids), "quarantined": held},
            input_count=len(ids) + held,
            config_hash="",
            extra={"source_record_id": source_record_id, "ids": list(ids), "tombstoned": True},
        )
        emit(record, self._sinks)
        dispatch_audit(record, component=_COMPONENT)


def _stored_node(original: BaseNode, record: MemoryRecord) -> BaseNode:
    """The node to store for a record: the original with the record's (masked) text and metadata.

    Record metadata is flat; keys it adds are hidden from the LLM and from embeddings. The
    original embedding is kept only when the embedded content did not change.
    """
    meta = record_metadata(record)
    added = [k for k in meta if k not in original.metadata]
    node = original.model_copy()
    node.metadata = {**original.metadata, **meta}
    node.excluded_llm_metadata_keys = [*original.excluded_llm_metadata_keys, *added]
    node.excluded_embed_metadata_keys = [*original.excluded_embed_metadata_keys, *added]
    node.set_content(record.body)
    same = node.get_content(metadata_mode=MetadataMode.EMBED) == original.get_content(
        metadata_mode=MetadataMode.EMBED
    )
    node.embedding = original.embedding if same else None
    return node
