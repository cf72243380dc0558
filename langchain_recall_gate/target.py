"""The write target over a LangChain vector store: storage glue for the core's write gate (W1, P1).

:class:`VectorStoreTarget` gives :class:`~shared_core.write.gate.WriteGate` what it needs from any
LangChain :class:`~langchain_core.vectorstores.VectorStore`: documents by id (``get_by_ids``),
upserts by id (``add_documents(..., ids=...)``, which LangChain defines as an upsert), deletes
(``delete(ids)``) and nearest neighbours (``similarity_search`` with the partition as filter).
Two stores can also be scanned by metadata (supersede by entity + attribute, expiry, source
lineage): :class:`~langchain_core.vectorstores.InMemoryVectorStore` (a predicate filter) and
``langchain_chroma.Chroma`` (Chroma's ``where``); for others the ledger keeps the lineage.

Stored documents: page content = the record's (screened) body, metadata = the user's own keys
plus the record in the core's flat codec, so the collection is readable by the LlamaIndex adapter
and by :class:`~shared_core.store.MemoryStore`. The inner store embeds the page content with its
own embeddings, as every LangChain store does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from numpy.typing import NDArray

from shared_core.embedding import Embedder
from shared_core.interop import ForeignTarget, Stored, Where, conditions_of, matches
from shared_core.model import MemoryRecord, with_clears
from shared_core.write.ledger import Ledger

__all__ = ["StoreKind", "VectorStoreTarget", "combine_filters", "store_kind"]

StoreKind = Literal["memory", "chroma", "other"]


def store_kind(inner: VectorStore) -> StoreKind:
    """Which filter language a LangChain vector store speaks (``other``: none recall-gate knows)."""
    if isinstance(inner, InMemoryVectorStore):
        return "memory"
    if type(inner).__module__.startswith("langchain_chroma"):
        return "chroma"
    return "other"


def native_filter(kind: StoreKind, where: Where) -> Any:
    """A filter in the store's own language (``None`` for a store recall-gate cannot filter)."""
    if kind == "memory":
        return lambda doc: matches(where, doc.metadata)
    if kind == "chroma":
        return where
    return None


def combine_filters(kind: StoreKind, ours: Any, theirs: Any) -> Any:
    """Both filters at once (the scope's and the caller's ``filter=``)."""
    if kind == "memory":
        first: Callable[[Document], bool] = ours
        second: Callable[[Document], bool] = theirs
        return lambda doc: first(doc) and second(doc)
    return {"$and": [*conditions_of(ours), theirs]}


class VectorStoreTarget(ForeignTarget):
    """The write gate's target over a LangChain vector store (see the module docstring).

    Args:
        inner: the user's vector store.
        embedder: the embedding for dedup cosines.
        ledger: the write gate's ledger.
    """

    def __init__(self, inner: VectorStore, embedder: Embedder, *, ledger: Ledger) -> None:
        self.inner = inner
        self.kind = store_kind(inner)
        super().__init__(embedder, ledger=ledger, can_scan=self.kind != "other")

    def _fetch(self, ids: Sequence[str]) -> list[Stored]:
        try:
            docs = self.inner.get_by_ids(list(ids))
        except NotImplementedError:
            return []
        return [(d.id, d.page_content, d.metadata) for d in docs if d.id is not None]

    def _scan(self, where: Where) -> list[Stored] | None:
        if self.kind == "memory":
            store: Mapping[str, dict[str, Any]] = self.inner.store  # type: ignore[attr-defined]
            return [(i, v["text"], v["metadata"]) for i, v in store.items() if matches(where, v["metadata"])]
        if self.kind == "chroma":
            got = self.inner.get(where=where, include=["documents", "metadatas"])  # type: ignore[attr-defined]
            return list(zip(got["ids"], got["documents"], got["metadatas"], strict=True))
        return None

    def _nearest(self, text: str, vector: NDArray[np.float32], n: int, where: Where) -> list[Stored] | None:
        flt = native_filter(self.kind, where)
        kwargs = {} if flt is None else {"filter": flt}
        try:
            docs = self.inner.similarity_search(text, k=n, **kwargs)
        except NotImplementedError:
            return None
        return [(d.id, d.page_content, d.metadata) for d in docs if d.id is not None]

    def _write(self, records: Sequence[MemoryRecord], vectors: NDArray[np.float32] | None) -> None:
        existing = {mid: meta for mid, _, meta in self._fetch([r.id for r in records])}
        docs = []
        for rec in records:
            staged = self.extra_for(rec.id)
            user = {**existing.get(rec.id, {}), **(staged or {})}  # the new document's keys win
            text, meta = self.document(rec, user)
            if self.kind == "chroma" and rec.id in existing:
                # Chroma merges an upsert's metadata into the stored one: a field the record no
                # longer has (superseded_by after its correction was forgotten, an expiry dropped)
                # must be sent as None, or the old value stays (MemoryStore's backend does the same)
                meta = with_clears(meta)
            docs.append(Document(id=rec.id, page_content=text, metadata=meta))
        self.inner.add_documents(docs, ids=[d.id for d in docs])

    def _remove(self, ids: Sequence[str]) -> None:
        self.inner.delete(ids=list(ids))
