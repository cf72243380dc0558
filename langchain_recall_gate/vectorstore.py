"""``GatedVectorStore``: a write filter and recall gate around any LangChain vector store (A1)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore, VectorStoreRetriever

from shared_core import ConfigBook, GateResult, RecallGate, Scope, coerce_scope
from shared_core.audit import AuditSink
from shared_core.embedding import as_embedder
from shared_core.store import MemoryStore
from shared_core.write import WriteDecision, WritePolicy

from ._foreign_write import foreign_write
from .callbacks import adispatch_audit, dispatch_audit
from .convert import (
    config_scope_kwargs,
    document_id,
    gate_documents,
    hit_document,
    record_document,
    resolve_scope,
    stored_document,
    strip_stamp,
    to_memory_candidate,
)

__all__ = ["GatedVectorStore", "GatedVectorStoreRetriever"]

ScoredDocs = list[tuple[Document, float | None]]


class GatedVectorStore(VectorStore):
    """A vector store whose writes pass the write gate and whose searches pass the recall gate.

    Wrap any LangChain vector store (``GatedVectorStore(inner, scope=...)``) or expose the memory
    store (``GatedVectorStore.from_store(store, scope=...)``).

    **Writes** (``add_documents``, ``add_texts`` and async twins) build one write-gate candidate
    per document: the page content is the body, metadata keys named like
    :class:`~shared_core.write_gate.MemoryCandidate` fields (``title``, ``status``, ``origin``,
    ``cited``, ``tags``, ``supersedes``, ...) fill those fields over ``write_defaults``, the scope
    is the writer's (constructor or ``scope=`` per call), the id is ``ids[i]``, else
    ``Document.id`` / ``metadata[id_key]``, else the gate's deterministic id. Secrets are rejected,
    injections quarantined, PII masked (W4, W5, by the write policy); only documents the gate
    stores reach the inner store, carrying the record the gate built as a metadata stamp (scalar
    keys under ``recall_gate.``, hidden again on read). The return value lists the ids of stored
    documents only; every outcome is in :attr:`last_decisions` or, race-free,
    :meth:`add_documents_with_decisions`. Over a foreign store the decisions come from the core's
    store-independent write gate: no tombstones, no dedup against stored memories, no supersede
    links to them, and quarantined candidates are reported but not kept (W6 review needs
    :meth:`from_store`); over a memory store the full write gate applies.

    **Searches** (``similarity_search``, ``similarity_search_with_score``, ``as_retriever()``)
    fetch ``fetch_k`` candidates from the inner store (optionally pre-filtered by
    ``scope_filter(scope)`` passed as the inner store's ``filter``), gate them with the scope,
    and return at most ``k`` accepted documents, with provenance in ``metadata["recall_gate"]``
    unless ``provenance=False``. Scores returned with documents are the inner store's own; the
    gate thresholds on the cosine it computes with ``embedding`` (default: the inner store's
    embeddings), so every search embeds the candidates' texts once more.

    **Deletes** delegate; over a memory store they record tombstones so the ids cannot come back
    (L2). ``get_by_ids`` is an id lookup for operators and indexing, *not* gated (like
    ``MemoryStore.get``): never hand its output to a model.

    Args:
        inner: the vector store to wrap (or ``store=``).
        scope: default scope for writes and searches.
        gate: the recall gate (default ``RecallGate()``; its clock also stamps writes).
        write_policy: write-gate settings (default ``WritePolicy()``).
        write_defaults: candidate fields for documents whose metadata lacks them, e.g.
            ``{"origin": "user_explicit", "cited": True}``.
        embedding: for the gate's cosine scores (default: ``inner.embeddings``, unless
            ``score_key`` is given).
        score_key: metadata key holding a similarity in [-1, 1] (used without an embedding).
        lexical_key: metadata key holding a keyword score in [0, 1] (default: computed by the core).
        id_key: metadata key holding the memory id (default: ``Document.id``).
        fetch_k: candidates fetched from the inner store per search (at least ``k``).
        scope_filter: ``scope -> filter`` for the inner store's search (push the scope down, R1).
        provenance: add ``metadata["recall_gate"]`` to returned documents.
        sinks: audit sinks for write decisions.
        store: a :class:`~shared_core.store.MemoryStore` to use instead of ``inner``.

    Example:
        >>> vs = GatedVectorStore(InMemoryVectorStore(embeddings), scope=scope,
        ...                       write_defaults={"origin": "user_explicit", "cited": True})
        >>> vs.add_documents([Document("Posts go out on Tuesdays.", metadata={"title": "Posting"})])
        >>> vs.last_decisions[0].action
        >>> vs.similarity_search("when do we post?", k=3)
    """

    def __init__(
        self,
        inner: VectorStore | None = None,
        *,
        scope: Scope | Mapping[str, Any] | None = None,
        gate: RecallGate | None = None,
        write_policy: WritePolicy | ConfigBook | None = None,
        write_defaults: Mapping[str, Any] | None = None,
        embedding: Any = None,
        score_key: str | None = None,
        lexical_key: str | None = None,
        id_key: str | None = None,
        fetch_k: int = 20,
        scope_filter: Callable[[Scope], Any] | None = None,
        provenance: bool = True,
        sinks: Sequence[AuditSink] = (),
        store: MemoryStore | None = None,
    ) -> None:
        if (inner is None) == (store is None):
            raise ValueError("give either an inner vector store or store=..., not both and not neither")
        if store is not None and gate is not None:
            raise ValueError("a store applies its own gate: configure it on the MemoryStore")
        if isinstance(fetch_k, bool) or not isinstance(fetch_k, int) or fetch_k < 1:
            raise ValueError("fetch_k must be a positive integer")
        self.inner = inner
        self.store = store
        self.scope = coerce_scope(scope) if scope is not None else None
        self.gate = gate if gate is not None else RecallGate()
        self.write_policy = write_policy
        self.write_defaults = dict(write_defaults or {})
        if embedding is None and score_key is None and inner is not None:
            embedding = inner.embeddings
        self.embedder = as_embedder(embedding) if embedding is not None else None
        self.score_key = score_key
        self.lexical_key = lexical_key
        self.id_key = id_key
        self.fetch_k = fetch_k
        self.scope_filter = scope_filter
        self.provenance = provenance
        self.sinks = tuple(sinks)
        self.last_decisions: list[WriteDecision] = []

    @classmethod
    def from_store(
        cls, store: MemoryStore, *, scope: Scope | Mapping[str, Any] | None = None, **kwargs: Any
    ) -> GatedVectorStore:
        """A LangChain vector store over the memory store (hybrid search, gated writes, tombstones).

        Args:
            store: the memory store.
            scope: default scope.
            **kwargs: ``provenance``, ``write_defaults``, ``id_key``.
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
        scope: Scope | Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> GatedVectorStore:
        """A gated :class:`~langchain_core.vectorstores.InMemoryVectorStore` holding ``texts``.

        Only the texts the write gate stores are added; see :attr:`last_decisions`.
        """
        vs = cls(InMemoryVectorStore(embedding), scope=scope, **kwargs)
        vs.add_texts(texts, metadatas, ids=ids)
        return vs

    @property
    def embeddings(self) -> Embeddings | None:
        """The inner store's embeddings (``None`` over a memory store)."""
        return self.inner.embeddings if self.inner is not None else None

    # -- writes ---------------------------------------------------------------------------------

    def _candidates(
        self, documents: Sequence[Document], ids: Sequence[str | None] | None, scope: Any
    ) -> list[dict[str, Any]]:
        scope_obj = resolve_scope(scope, self.scope)
        if ids is not None and len(ids) != len(documents):
            raise ValueError("ids must have one entry per document")
        return [
            to_memory_candidate(
                doc,
                memory_id=(
                    ids[i] if ids is not None and ids[i] is not None else document_id(doc, self.id_key)
                ),
                scope=scope_obj,
                defaults=self.write_defaults,
            )
            for i, doc in enumerate(documents)
        ]

    def _decide(
        self, documents: Sequence[Document], ids: Sequence[str | None] | None, scope: Any, dry_run: bool
    ) -> tuple[list[WriteDecision], list[Document]]:
        """Run the write gate; returns the decisions and the documents to write to the inner store."""
        candidates = self._candidates(documents, ids, scope)
        if self.store is not None:
            return self.store.add(candidates, dry_run=dry_run), []
        decisions, records = foreign_write(
            candidates, policy=self.write_policy, sinks=self.sinks, clock=self.gate.clock, dry_run=dry_run
        )
        return decisions, [stored_document(record, documents[index].metadata) for index, record in records]

    def add_documents_with_decisions(
        self,
        documents: list[Document],
        *,
        ids: list[str] | None = None,
        scope: Scope | Mapping[str, Any] | None = None,
        dry_run: bool = False,
        **kwargs: Any,
    ) -> list[WriteDecision]:
        """Write through the write gate; one :class:`~shared_core.write_gate.WriteDecision` per document.

        Args:
            documents: the documents (never modified).
            ids: ids to use (default: each document's id, else a deterministic one).
            scope: the scope to write into (default: the store's).
            dry_run: decide only; nothing is written (R10).
            **kwargs: passed to the inner store's ``add_documents``.

        Raises:
            ScopeError: if there is no scope.
        """
        decisions, to_write = self._decide(documents, ids, scope, dry_run)
        if to_write and not dry_run and self.inner is not None:
            self.inner.add_documents(to_write, ids=[d.id for d in to_write], **kwargs)
        self.last_decisions = decisions
        return decisions

    async def aadd_documents_with_decisions(
        self,
        documents: list[Document],
        *,
        ids: list[str] | None = None,
        scope: Scope | Mapping[str, Any] | None = None,
        dry_run: bool = False,
        **kwargs: Any,
    ) -> list[WriteDecision]:
        """Async :meth:`add_documents_with_decisions` (the gate runs in a worker thread)."""
        decisions, to_write = await asyncio.to_thread(self._decide, documents, ids, scope, dry_run)
        if to_write and not dry_run and self.inner is not None:
            await self.inner.aadd_documents(to_write, ids=[d.id for d in to_write], **kwargs)
        self.last_decisions = decisions
        return decisions

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Write through the write gate; returns the ids of the documents stored.

        Keyword arguments are those of :meth:`add_documents_with_decisions`; all outcomes
        (quarantined, rejected, merged) are in :attr:`last_decisions`.
        """
        return _stored_ids(self.add_documents_with_decisions(documents, **kwargs))

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async :meth:`add_documents`."""
        return _stored_ids(await self.aadd_documents_with_decisions(documents, **kwargs))

    # -- searches ---------------------------------------------------------------------------------

    def _fetch_k(self, k: int, fetch_k: int | None) -> int:
        return max(k, fetch_k if fetch_k is not None else self.fetch_k)

    def _inner_kwargs(self, scope: Scope, kwargs: dict[str, Any]) -> dict[str, Any]:
        if self.scope_filter is not None and "filter" not in kwargs:
            return {**kwargs, "filter": self.scope_filter(scope)}
        return kwargs

    def _gate_scored(
        self, query: str, scored: ScoredDocs, scope: Scope, k: int, dry_run: bool
    ) -> tuple[ScoredDocs, GateResult]:
        native = {id(doc): score for doc, score in scored}
        pairs, result = gate_documents(
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
            extra={"adapter": "langchain", "component": "vectorstore"},
        )
        return [(copy, native[id(original)]) for original, copy in pairs], result

    def _store_result(
        self, store: MemoryStore, query: str, scope: Scope, k: int, dry_run: bool
    ) -> GateResult:
        return store.query(query, scope=scope, k=k, dry_run=dry_run)

    def _from_store_result(self, result: GateResult) -> tuple[ScoredDocs, GateResult]:
        return [(hit_document(h, provenance=self.provenance), h.score) for h in result.accepted], result

    def _inner_scored(self, query: str, n: int, kwargs: dict[str, Any]) -> ScoredDocs:
        assert self.inner is not None
        try:
            return [(d, float(s)) for d, s in self.inner.similarity_search_with_score(query, k=n, **kwargs)]
        except NotImplementedError:
            return [(d, None) for d in self.inner.similarity_search(query, k=n, **kwargs)]

    async def _ainner_scored(self, query: str, n: int, kwargs: dict[str, Any]) -> ScoredDocs:
        assert self.inner is not None
        try:
            found = await self.inner.asimilarity_search_with_score(query, k=n, **kwargs)
            return [(d, float(s)) for d, s in found]
        except NotImplementedError:
            return [(d, None) for d in await self.inner.asimilarity_search(query, k=n, **kwargs)]

    def similarity_search_with_result(
        self,
        query: str,
        k: int = 4,
        *,
        scope: Scope | Mapping[str, Any] | None = None,
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
            **kwargs: passed to the inner store's search (e.g. ``filter``).

        Raises:
            ScopeError: if there is no scope (before anything is searched).
        """
        scope_obj = resolve_scope(scope, self.scope)
        if self.store is not None:
            return self._from_store_result(self._store_result(self.store, query, scope_obj, k, dry_run))
        scored = self._inner_scored(query, self._fetch_k(k, fetch_k), self._inner_kwargs(scope_obj, kwargs))
        return self._gate_scored(query, scored, scope_obj, k, dry_run)

    async def asimilarity_search_with_result(
        self,
        query: str,
        k: int = 4,
        *,
        scope: Scope | Mapping[str, Any] | None = None,
        dry_run: bool = False,
        fetch_k: int | None = None,
        **kwargs: Any,
    ) -> tuple[ScoredDocs, GateResult]:
        """Async :meth:`similarity_search_with_result` (store queries and embedding run in a thread)."""
        scope_obj = resolve_scope(scope, self.scope)
        if self.store is not None:
            result = await asyncio.to_thread(self._store_result, self.store, query, scope_obj, k, dry_run)
            return self._from_store_result(result)
        n = self._fetch_k(k, fetch_k)
        scored = await self._ainner_scored(query, n, self._inner_kwargs(scope_obj, kwargs))
        if self.embedder is not None:
            return await asyncio.to_thread(self._gate_scored, query, scored, scope_obj, k, dry_run)
        return self._gate_scored(query, scored, scope_obj, k, dry_run)

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

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
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

    # -- deletes and lookups ------------------------------------------------------------------------

    def delete(
        self, ids: list[str] | None = None, *, scope: Scope | Mapping[str, Any] | None = None, **kwargs: Any
    ) -> bool | None:
        """Delete by id (over a memory store: with tombstones, in the scope's memory space, L2).

        Raises:
            ValueError: over a memory store, when ``ids`` is ``None`` (no delete-all there).
        """
        if self.store is not None:
            if ids is None:
                raise ValueError("ids are required: a memory store has no delete-all")
            space = resolve_scope(scope, self.scope).memory_space_id
            self.store.delete(ids, memory_space_id=space)
            return True
        assert self.inner is not None
        return self.inner.delete(ids, **kwargs)

    async def adelete(
        self, ids: list[str] | None = None, *, scope: Scope | Mapping[str, Any] | None = None, **kwargs: Any
    ) -> bool | None:
        """Async :meth:`delete`."""
        if self.store is not None or self.inner is None:
            return await asyncio.to_thread(self.delete, ids, scope=scope, **kwargs)
        return await self.inner.adelete(ids, **kwargs)

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Documents by id, stamp removed. Not gated: for operators and indexing, not for a model."""
        if self.store is not None:
            space = resolve_scope(None, self.scope).memory_space_id
            return [record_document(r) for r in self.store.get(list(ids), memory_space_id=space)]
        assert self.inner is not None
        return [_unstamped(d) for d in self.inner.get_by_ids(ids)]

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async :meth:`get_by_ids`."""
        if self.store is not None or self.inner is None:
            return await asyncio.to_thread(self.get_by_ids, ids)
        return [_unstamped(d) for d in await self.inner.aget_by_ids(ids)]


def _scored(found: ScoredDocs) -> list[tuple[Document, float]]:
    out = [(doc, score) for doc, score in found if score is not None]
    if len(out) != len(found):
        raise NotImplementedError("the inner vector store returns no scores; use similarity_search")
    return out


def _unstamped(doc: Document) -> Document:
    return Document(id=doc.id, page_content=doc.page_content, metadata=strip_stamp(doc.metadata))


def _stored_ids(decisions: Iterable[WriteDecision]) -> list[str]:
    return [d.id for d in decisions if d.stored and d.id is not None]


class GatedVectorStoreRetriever(VectorStoreRetriever):
    """The retriever of a :class:`GatedVectorStore`: gated similarity search plus audit events.

    Made by :meth:`GatedVectorStore.as_retriever`. Each call dispatches one ``recall_gate.audit``
    custom event. ``scope`` may come from ``search_kwargs``, the call's keyword arguments or
    ``config["configurable"]["scope"]`` (per call wins).
    """

    vectorstore: GatedVectorStore
    allowed_search_types: ClassVar[tuple[str, ...]] = ("similarity",)

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve and gate; ``scope`` and ``k`` may be given per call."""
        return super().invoke(input, config, **config_scope_kwargs(config, kwargs))

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke`."""
        return await super().ainvoke(input, config, **config_scope_kwargs(config, kwargs))

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        found, result = self.vectorstore.similarity_search_with_result(query, **(self.search_kwargs | kwargs))
        dispatch_audit(result.audit, run_manager)
        return [doc for doc, _ in found]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        found, result = await self.vectorstore.asimilarity_search_with_result(
            query, **(self.search_kwargs | kwargs)
        )
        await adispatch_audit(result.audit, run_manager)
        return [doc for doc, _ in found]
