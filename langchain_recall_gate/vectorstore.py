"""``GatedVectorStore``: the write gate and the recall gate around any LangChain vector store (A1)."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from shared_core import ConfigBook, GateResult, Origin, RecallGate, Scope, Tier
from shared_core.audit import AuditSink
from shared_core.errors import ConfigError, InputError
from shared_core.interop import (
    PlainMode,
    ScopeSource,
    check_plain,
    core_embedder,
    default_gate,
    plain_defaults,
    positive_int,
    recall_feedback,
    staged_batch,
    visible_filter,
    write_feedback,
    write_fields,
)
from shared_core.interop.operator import OperatorActions
from shared_core.model import is_encoded
from shared_core.store import MemoryStore
from shared_core.timeutil import Clock, to_utc
from shared_core.write import WriteAction, WriteDecision, WriteGate, WritePolicy, lifecycle, memory_id
from shared_core.write.authority import WritePath
from shared_core.write.ledger import InMemoryLedger, Ledger

from .convert import (
    config_scope,
    document_id,
    gate_documents,
    hit_document,
    record_document,
    shown_document,
)
from .target import VectorStoreTarget, combine_filters, native_filter
from .vectorstore_retriever import GatedVectorStoreRetriever

__all__ = ["GatedVectorStore"]

ScoredDocs = list[tuple[Document, float | None]]
ScopeLike = Scope | Mapping[str, Any]

_log = logging.getLogger("langchain_recall_gate")
_TRUST_KEYS = ("origin", "tier", "cited", "confirmations", "evidence_count", "verification_status")
_SCOPE_KEYS = ("user_id", "agent_id", "memory_space_id", "route_id")
_KEPT = (WriteAction.WRITE, WriteAction.UPDATE, WriteAction.MERGE)


class GatedVectorStore(OperatorActions, VectorStore):
    """A vector store whose writes pass the write gate and whose searches pass the recall gate.

    Wrap any LangChain vector store (``GatedVectorStore(inner, scope=...)``) or expose the memory
    store (``GatedVectorStore.from_store(store, scope=...)``).

    **Writes** (``add_documents``, ``add_texts``, async twins) run the core's write gate over the
    inner store, with :class:`~shared_core.store.MemoryStore`'s lifecycle: secrets rejected,
    injections and untrusted notes held for review (:meth:`quarantine_list`,
    :meth:`quarantine_approve`, TTL), PII masked, dedup and supersede, tombstones, lineage,
    :meth:`forget`. Page content = body; metadata keys named like
    :class:`~shared_core.write.MemoryCandidate` fields fill those fields over ``write_defaults``;
    the id is ``ids[i]``, else ``Document.id`` / ``metadata[id_key]``, else the core's id of the text.

    **Authority** (R1, W3) comes from this filter, never from the documents: every write is in
    the caller's scope (a document whose metadata names another owner is rejected
    ``scope_mismatch``), with the filter's ``origin`` (default ``agent_inferred``: uncited notes
    are held for review), ``tier`` ceiling, ``cited`` and ``allow_shared``. Document metadata may
    lower trust (an ``origin`` below the filter's, ``status: draft``), never raise it. A write or
    delete by id touches only the caller's memories (``not_owner``, which does not say whether
    the id exists). Stored documents carry the user's own metadata keys plus the record in the
    core's flat codec, so the collection is readable through the LlamaIndex adapter and
    :class:`~shared_core.store.MemoryStore` (see :mod:`langchain_recall_gate.target`).

    ``add_documents`` returns the ids of the memories the documents are now in (written, updated
    or merged into; every outcome: :meth:`add_documents_with_decisions`); a batch that stores
    nothing logs one warning with the counts by action and reason.

    **Searches** (``similarity_search``, ``similarity_search_with_score``, ``as_retriever()``)
    fetch ``max(k, fetch_k)`` candidates from the inner store — with the scope pushed into its
    filter (``prefilter``; ``InMemoryVectorStore`` and ``langchain_chroma.Chroma`` by default,
    ANDed with a ``filter=`` you pass) — gate them and return at most ``k`` accepted documents,
    with provenance in ``metadata["recall_gate"]`` unless ``provenance=False``. Scores returned
    with documents are the inner store's own; the gate thresholds on the cosine it computes with
    ``embedding`` (default: the inner store's embeddings).

    ``get_by_ids`` is an ungated id lookup for operators (like ``MemoryStore.get``), not for a model.

    Args:
        inner: the vector store to wrap (or ``store=``).
        store: a :class:`~shared_core.store.MemoryStore` to use instead (see :meth:`from_store`).
        scope: default scope for writes and searches (per call: ``scope=`` or
            ``config["configurable"]["scope"]``).
        origin: the origin of what this filter writes, the ceiling of what a document may claim.
        tier: the highest tier a document may ask for (default: the policy's by origin).
        cited: whether this filter vouches that what it writes is grounded in a source.
        allow_shared: whether documents may be written ``visibility: shared``.
        write_defaults: candidate fields for documents whose metadata lacks them (``title``,
            ``tags``, ``status``, ``source``...; trust and scope are this filter's options).
        write_policy: write-gate settings (default ``WritePolicy()``).
        ledger: quarantine, tombstones, lineage and the forget journal (default: in process;
            pass ``shared_core.store.ledger.ChromaLedger(client, prefix=...)`` to keep them).
        sinks: audit sinks for write decisions and deletions.
        clock: the write gate's clock (default: the recall gate's).
        gate: the recall gate (default: the calibrated threshold of ``embedding``, else the seeds').
        embedding: for the gate's cosine scores and dedup (default: ``inner.embeddings``).
        score_key: metadata key holding a similarity in [-1, 1] (used without an embedding).
        lexical_key: metadata key holding a keyword score in [0, 1] (default: computed by the core).
        id_key: metadata key holding the memory id (default: ``Document.id``).
        fetch_k: candidates fetched from the inner store per search (at least ``k``).
        prefilter: push the scope into the inner search: ``True`` (the stores named above),
            ``False``, or ``scope -> filter`` for another store.
        provenance: add ``metadata["recall_gate"]`` to returned documents.
        plain_documents: documents in the inner store without record metadata: ``"reject"`` or
            ``"owned"`` (see :class:`~langchain_recall_gate.GatedRetriever`; turns the prefilter off).

    Example:
        >>> vs = GatedVectorStore(InMemoryVectorStore(MiniLMEmbeddings()), scope=scope, origin="user_explicit")
        >>> vs.add_texts(["Posts go out on Tuesdays."], metadatas=[{"title": "Posting"}])
        >>> vs.similarity_search("when do we post?", k=3)
    """

    def __init__(
        self,
        inner: VectorStore | None = None,
        *,
        store: MemoryStore | None = None,
        scope: ScopeLike | None = None,
        origin: Origin | str = Origin.AGENT_INFERRED,
        tier: Tier | str | None = None,
        cited: bool = False,
        allow_shared: bool = False,
        write_defaults: Mapping[str, Any] | None = None,
        write_policy: WritePolicy | ConfigBook | None = None,
        ledger: Ledger | None = None,
        sinks: Sequence[AuditSink] = (),
        clock: Clock | None = None,
        gate: RecallGate | None = None,
        embedding: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        fetch_k: int = 20,
        prefilter: bool | Callable[[Scope], Any] = True,
        provenance: bool = True,
        plain_documents: PlainMode = "reject",
        scope_filter: Callable[[Scope], Any] | None = None,
    ) -> None:
        if (inner is None) == (store is None):
            raise ConfigError("give either an inner vector store or store=..., not both and not neither")
        if store is not None:
            given = [
                n for n, v in (("gate", gate), ("embedding", embedding), ("ledger", ledger)) if v is not None
            ]
            if given or write_policy is not None:
                raise ConfigError(
                    "a MemoryStore brings its own gate, embedding, ledger and write policy: "
                    f"{', '.join([*given, *(['write_policy'] if write_policy is not None else [])])} "
                    "apply to a wrapped vector store only"
                )
        positive_int("fetch_k", fetch_k, allow_none=False)
        if scope_filter is not None:
            warnings.warn("scope_filter= is deprecated: use prefilter=", DeprecationWarning, stacklevel=2)
            prefilter = scope_filter
        self._scopes = ScopeSource(scope)
        check_plain(plain_documents, self._scopes.default)
        defaults = dict(write_defaults or {})
        misplaced = [k for k in (*_TRUST_KEYS, *_SCOPE_KEYS) if k in defaults]
        if misplaced:
            raise ConfigError(
                f"write_defaults may not set {', '.join(misplaced)}: trust and owner are the write "
                "filter's options (origin=, tier=, cited=, allow_shared=, scope=)"
            )
        self.inner = inner
        self.store = store
        self.write_defaults = defaults
        self._authority = {
            "origin": Origin(origin),
            "tier": None if tier is None else Tier(tier),
            "cited": cited,
            "allow_shared": allow_shared,
        }
        if embedding is None and score_key is None and inner is not None:
            embedding = inner.embeddings
        self.embedder = core_embedder(embedding) if embedding is not None else None
        self.gate = store.gate if store is not None else default_gate(gate, embedding, self.embedder)
        self.score_key = score_key
        self.lexical_key = lexical_key
        self.id_key = id_key
        self.fetch_k = fetch_k
        self.prefilter = False if plain_documents == "owned" else prefilter
        self.provenance = provenance
        self.plain_documents = plain_documents
        self._target: VectorStoreTarget | None = None
        self.last_decisions: list[WriteDecision] = []
        """The decisions of the last write (kept for convenience; concurrent writers: use the return value)."""
        if store is not None:
            self.writer: WriteGate = store.writer
        else:
            assert inner is not None
            if self.embedder is None:
                raise ConfigError("a write filter needs an embedding for dedup: pass embedding=")
            self._target = VectorStoreTarget(inner, self.embedder, ledger=ledger or InMemoryLedger())
            self.writer = WriteGate(
                self._target,
                self._target.ledger,
                policy=write_policy,
                sinks=sinks,
                clock=clock if clock is not None else self.gate.clock,
            )
            lifecycle.resume(self.writer)  # finish a forget a crash interrupted (persistent ledgers)

    @classmethod
    def from_store(
        cls, store: MemoryStore, *, scope: ScopeLike | None = None, **kwargs: Any
    ) -> GatedVectorStore:
        """A LangChain vector store over the memory store (hybrid search, its write gate and ledger).

        Args:
            store: the memory store.
            scope: default scope.
            **kwargs: ``origin``, ``tier``, ``cited``, ``allow_shared``, ``write_defaults``,
                ``provenance``, ``id_key``.
        """
        return cls(store=store, scope=scope, **kwargs)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        scope: ScopeLike | None = None,
        **kwargs: Any,
    ) -> GatedVectorStore:
        """A gated :class:`~langchain_core.vectorstores.InMemoryVectorStore` holding what the write gate lets through."""
        vs = cls(InMemoryVectorStore(embedding), scope=scope, **kwargs)
        vs.add_texts(texts, metadatas, ids=ids)
        return vs

    @property
    def embeddings(self) -> Embeddings | None:
        """The inner store's embeddings (``None`` over a memory store)."""
        return self.inner.embeddings if self.inner is not None else None

    def resolve_scope(self, explicit: Any = None, ambient: Any = None) -> Scope:
        """The scope of one call (see :class:`~._common.ScopeSource`: fails closed)."""
        return self._scopes.resolve(explicit, ambient)

    # -- writes ---------------------------------------------------------------------------------

    def _path(self, scope: Scope) -> WritePath:
        return WritePath.pinned(scope, name="langchain", **self._authority)  # type: ignore[arg-type]

    def _items(
        self, documents: Sequence[Document], ids: Sequence[str | None] | None, scope: Scope
    ) -> tuple[list[dict[str, Any]], dict[str, Mapping[str, Any]]]:
        if ids is not None and len(ids) != len(documents):
            raise InputError("ids must have one entry per document")
        items: list[dict[str, Any]] = []
        extras: dict[str, Mapping[str, Any]] = {}
        for i, doc in enumerate(documents):
            fields = {**self.write_defaults, **write_fields(doc.metadata)}
            mid = ids[i] if ids is not None and ids[i] is not None else document_id(doc, self.id_key)
            if mid is None:  # the core's deterministic id of the text as given (W2)
                title = fields.get("title")
                mid = memory_id(scope, title if isinstance(title, str) else "", doc.page_content)
            items.append({**fields, "body": doc.page_content, "id": mid})
            extras[mid] = doc.metadata
        return items, extras

    def _staged(self, extras: Mapping[str, Mapping[str, Any]]) -> AbstractContextManager[None]:
        return staged_batch(self.writer.lock, self._target, extras)

    def add_documents_with_decisions(
        self,
        documents: list[Document],
        *,
        ids: list[str | None] | None = None,
        scope: ScopeLike | None = None,
        dry_run: bool = False,
    ) -> list[WriteDecision]:
        """Write through the write gate; one :class:`~shared_core.write.WriteDecision` per document.

        Args:
            documents: the documents (never modified).
            ids: ids to use (default: each document's id, else a deterministic one).
            scope: the scope to write into (default: the store's).
            dry_run: decide only; nothing is written (R10).

        Raises:
            ScopeError: if there is no scope.
        """
        scope_obj = self._scopes.resolve(scope)
        items, extras = self._items(documents, ids, scope_obj)
        with self._staged(extras):
            decisions = self.writer.submit(items, path=self._path(scope_obj), dry_run=dry_run)
        line = write_feedback(decisions, "GatedVectorStore")
        if line is not None:
            _log.warning(line)
        self.last_decisions = decisions
        return decisions

    async def aadd_documents_with_decisions(
        self, documents: list[Document], **kwargs: Any
    ) -> list[WriteDecision]:
        """Async :meth:`add_documents_with_decisions` (in a worker thread: screens and embedding are CPU-bound)."""
        return await asyncio.to_thread(self.add_documents_with_decisions, documents, **kwargs)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Write through the write gate; returns the ids of the memories the documents are now in.

        Keyword arguments are those of :meth:`add_documents_with_decisions`.
        """
        return _kept_ids(self.add_documents_with_decisions(documents, **kwargs))

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async :meth:`add_documents`."""
        return _kept_ids(await self.aadd_documents_with_decisions(documents, **kwargs))

    # -- lifecycle: the core's (OperatorActions), through this filter's write gate -----------

    def _write_gate(self) -> WriteGate:
        return self.writer

    def delete(self, ids: list[str] | None = None, *, scope: ScopeLike | None = None, **kwargs: Any) -> bool:
        """Delete the caller's memories by id, with tombstones so they cannot come back (L2).

        Ids of other owners' memories (and ids that do not exist) are left alone.

        Returns:
            ``True`` when every id was the caller's and is deleted.

        Raises:
            InputError: when ``ids`` is ``None`` (a write filter has no delete-all).
        """
        if ids is None:
            raise InputError("ids are required: a write filter has no delete-all")
        scope_obj = self._scopes.resolve(scope)
        done = lifecycle.delete(self.writer, ids, memory_space_id=scope_obj.memory_space_id, scope=scope_obj)
        return not done["not_owner"]

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Async :meth:`delete`."""
        return await asyncio.to_thread(self.delete, ids, **kwargs)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Documents by id, as stored (codec keys removed). Not gated: for operators, not for a model."""
        if self.store is not None:
            space = self._scopes.resolve(None, config_scope(None)).memory_space_id
            return [record_document(r) for r in self.store.get(list(ids), memory_space_id=space)]
        assert self.inner is not None
        return [shown_document(d) for d in self.inner.get_by_ids(ids)]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async :meth:`get_by_ids`."""
        return await asyncio.to_thread(self.get_by_ids, ids)

    # -- searches: one pipeline, two ways to fetch ----------------------------------------------

    def _inner_kwargs(self, scope: Scope, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.prefilter is False or self._target is None:
            return kwargs
        if callable(self.prefilter):
            if "filter" in kwargs:
                raise InputError(
                    "give filter= or a prefilter for this store, not both: they cannot be combined"
                )
            return {**kwargs, "filter": self.prefilter(scope)}
        ours = native_filter(self._target.kind, visible_filter(scope))
        if ours is None:
            return kwargs
        theirs = kwargs.get("filter")
        return {
            **kwargs,
            "filter": ours if theirs is None else combine_filters(self._target.kind, ours, theirs),
        }

    def _fetch(self, query: str, n: int, kwargs: dict[str, Any]) -> ScoredDocs:
        assert self.inner is not None
        try:
            return [(d, float(s)) for d, s in self.inner.similarity_search_with_score(query, k=n, **kwargs)]
        except NotImplementedError:
            return [(d, None) for d in self.inner.similarity_search(query, k=n, **kwargs)]

    async def _afetch(self, query: str, n: int, kwargs: dict[str, Any]) -> ScoredDocs:
        assert self.inner is not None
        try:
            found = await self.inner.asimilarity_search_with_score(query, k=n, **kwargs)
            return [(d, float(s)) for d, s in found]
        except NotImplementedError:
            return [(d, None) for d in await self.inner.asimilarity_search(query, k=n, **kwargs)]

    def _gate(
        self, query: str, scored: ScoredDocs, scope: Scope, k: int, dry_run: bool, probe: Callable[[], bool]
    ) -> tuple[ScoredDocs, GateResult]:
        native = {id(doc): score for doc, score in scored}
        owner = self._scopes.default
        plain = (
            plain_defaults(owner, to_utc(self.gate.clock()))
            if self.plain_documents == "owned" and owner is not None
            else None
        )
        pairs, result, plain_count = gate_documents(
            query,
            [[doc for doc, _ in scored]],
            scope=scope,
            gate=self.gate,
            names=["vectorstore"],
            embedder=self.embedder,
            score_key=self.score_key,
            lexical_key=self.lexical_key,
            id_key=self.id_key,
            k=k,
            dry_run=dry_run,
            provenance=self.provenance,
            plain=plain,
            extra={"adapter": "langchain", "component": "GatedVectorStore"},
        )
        semantic = self.embedder is not None or self.score_key is not None
        line = recall_feedback(result, "GatedVectorStore", plain=plain_count, semantic=semantic)
        if line is None and not scored and self.prefilter is not False and probe():
            line = (
                "GatedVectorStore found no candidate in the caller's scope, while the store holds "
                "documents this filter did not write (no record metadata); they are never searched "
                "with prefilter on: write them through this filter, or pass prefilter=False"
            )
        if line is not None:
            _log.warning(line)
        return [(copy, native[id(original)]) for original, copy in pairs], result

    def _from_store(self, query: str, scope: Scope, k: int, dry_run: bool) -> tuple[ScoredDocs, GateResult]:
        assert self.store is not None
        result = self.store.query(query, scope=scope, k=k, dry_run=dry_run)
        line = recall_feedback(result, "GatedVectorStore")
        if line is not None:
            _log.warning(line)
        return [(hit_document(h, provenance=self.provenance), h.score) for h in result.accepted], result

    def _probe(self, query: str, n: int) -> bool:
        """Whether the inner store holds documents without record metadata (one unfiltered look)."""
        assert self.inner is not None
        return any(not is_encoded(d.metadata) for d in self.inner.similarity_search(query, k=n))

    def similarity_search_with_result(
        self,
        query: str,
        k: int = 4,
        *,
        scope: ScopeLike | None = None,
        dry_run: bool = False,
        fetch_k: int | None = None,
        **kwargs: Any,
    ) -> tuple[ScoredDocs, GateResult]:
        """Gated search returning the accepted ``(document, score)`` pairs and the core gate result.

        The gate result holds every rejection with its reasons and the audit record: with
        ``dry_run=True`` this is the preview of R10.

        Args:
            query: the query.
            k: at most this many documents.
            scope: the scope (default: the store's); required.
            dry_run: mark the run as a preview in the audit.
            fetch_k: candidates fetched from the inner store (default: the store's ``fetch_k``).
            **kwargs: passed to the inner store's search (e.g. ``filter``, ANDed with the scope's).

        Raises:
            ScopeError: if there is no scope (before anything is searched).
        """
        scope_obj = self._scopes.resolve(scope)
        if self.store is not None:
            return self._from_store(query, scope_obj, k, dry_run)
        n = max(k, fetch_k if fetch_k is not None else self.fetch_k)
        scored = self._fetch(query, n, self._inner_kwargs(scope_obj, kwargs))
        return self._gate(query, scored, scope_obj, k, dry_run, lambda: self._probe(query, n))

    async def asimilarity_search_with_result(
        self,
        query: str,
        k: int = 4,
        *,
        scope: ScopeLike | None = None,
        dry_run: bool = False,
        fetch_k: int | None = None,
        **kwargs: Any,
    ) -> tuple[ScoredDocs, GateResult]:
        """Async :meth:`similarity_search_with_result` (store queries and gating run in a worker thread)."""
        scope_obj = self._scopes.resolve(scope)
        if self.store is not None:
            return await asyncio.to_thread(self._from_store, query, scope_obj, k, dry_run)
        n = max(k, fetch_k if fetch_k is not None else self.fetch_k)
        scored = await self._afetch(query, n, self._inner_kwargs(scope_obj, kwargs))
        return await asyncio.to_thread(
            self._gate, query, scored, scope_obj, k, dry_run, lambda: self._probe(query, n)
        )

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Gated search: at most ``k`` accepted documents (keywords as :meth:`similarity_search_with_result`)."""
        return [doc for doc, _ in self.similarity_search_with_result(query, k, **kwargs)[0]]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Async :meth:`similarity_search`."""
        return [doc for doc, _ in (await self.asimilarity_search_with_result(query, k, **kwargs))[0]]

    def similarity_search_with_score(self, *args: Any, **kwargs: Any) -> list[tuple[Document, float]]:
        """Gated search with the inner store's scores (cosine over a memory store).

        Raises:
            NotImplementedError: if the inner store gives no scores.
        """
        return _scored(self.similarity_search_with_result(*args, **kwargs)[0])

    async def asimilarity_search_with_score(self, *args: Any, **kwargs: Any) -> list[tuple[Document, float]]:
        """Async :meth:`similarity_search_with_score`."""
        return _scored((await self.asimilarity_search_with_result(*args, **kwargs))[0])

    def preview(self, query: str, k: int = 4, *, scope: ScopeLike | None = None, **kwargs: Any) -> GateResult:
        """Dry run (R10): the gate result of a search, with every rejection and its reasons."""
        return self.similarity_search_with_result(query, k, scope=scope, dry_run=True, **kwargs)[1]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:  # the inner store's
        if self.inner is None:
            return lambda score: score
        return self.inner._select_relevance_score_fn()

    def as_retriever(self, **kwargs: Any) -> GatedVectorStoreRetriever:
        """A retriever over the gated search that also dispatches ``recall_gate.audit`` events.

        Keyword arguments as for ``VectorStore.as_retriever`` (``search_kwargs={"k": 4}``,
        ``tags``); ``search_type`` must be ``"similarity"``. The scope can be given in
        ``search_kwargs``, per call (``invoke(q, scope=...)``) or in
        ``config["configurable"]["scope"]``.
        """
        tags = kwargs.pop("tags", None) or [*self._get_retriever_tags()]
        return GatedVectorStoreRetriever(vectorstore=self, tags=tags, **kwargs)


def _scored(found: ScoredDocs) -> list[tuple[Document, float]]:
    out = [(doc, score) for doc, score in found if score is not None]
    if len(out) != len(found):
        raise NotImplementedError("the inner vector store returns no scores; use similarity_search")
    return out


def _kept_ids(decisions: Sequence[WriteDecision]) -> list[str]:
    return [d.id for d in decisions if d.action in _KEPT and d.id is not None]
