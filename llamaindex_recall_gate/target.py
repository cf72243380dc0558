"""The write target over a LlamaIndex vector store: storage glue for the core's write gate (W1, P1).

:class:`NodeStoreTarget` gives :class:`~shared_core.write.gate.WriteGate` what it needs from any
``BasePydanticVectorStore``: nodes by id and by metadata filter (``get_nodes``), nearest
neighbours (``query`` with the partition as ``MetadataFilters``), upserts (``delete_nodes`` of
the ids already there, then ``add``: stores such as Chroma ignore an ``add`` of an existing id)
and deletes (``delete_nodes``). A store that keeps no text (``SimpleVectorStore``) gets a private
document store (one per store object, shared by every filter over it) holding exactly the nodes
the write gate stored, so text, filters and lookups work and no index docstore is ever needed.
It lives in process, as the ``SimpleVectorStore`` itself does until persisted.

Stored vectors are the store's ``embed_model`` embedding of the record's title and body (the
index's own embedding of the text as it arrived is discarded: a masked text must not be stored
with the vector of its unmasked form).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence

import numpy as np
from llama_index.core.schema import BaseNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from numpy.typing import NDArray

from shared_core.embedding import Embedder
from shared_core.interop import ForeignTarget, Stored, Where, conditions_of, matches
from shared_core.model import MemoryRecord
from shared_core.write.ledger import Ledger

from .convert import node_text, stored_node

__all__ = ["NodeStoreTarget", "to_filters"]


def to_filters(where: Where) -> MetadataFilters:
    """A filter of the shared dialect as LlamaIndex ``MetadataFilters`` (AND of EQ / IN / LTE)."""
    out: list[MetadataFilter | MetadataFilters] = []
    for cond in conditions_of(where):
        [(key, test)] = cond.items()
        if isinstance(test, dict) and "$in" in test:
            out.append(MetadataFilter(key=key, value=list(test["$in"]), operator=FilterOperator.IN))
        elif isinstance(test, dict) and "$lte" in test:
            out.append(MetadataFilter(key=key, value=test["$lte"], operator=FilterOperator.LTE))
        else:
            out.append(MetadataFilter(key=key, value=test))
    return MetadataFilters(filters=out)


_DOCSTORES: dict[int, SimpleDocumentStore] = {}
_DOCSTORES_LOCK = threading.Lock()


def shared_docstore(inner: BasePydanticVectorStore) -> SimpleDocumentStore:
    """The private document store of a text-less inner store, one per store object.

    Every write filter over the same ``SimpleVectorStore`` shares it, so ownership checks see
    what any of them stored (a second filter must not overwrite the first one's memories).
    """
    with _DOCSTORES_LOCK:
        key = id(inner)
        found = _DOCSTORES.get(key)
        if found is None:
            found = _DOCSTORES[key] = SimpleDocumentStore()
            weakref.finalize(inner, _DOCSTORES.pop, key, None)
        return found


def _overrides(store: BasePydanticVectorStore, method: str) -> bool:
    return getattr(type(store), method, None) is not getattr(BasePydanticVectorStore, method, None)


class NodeStoreTarget(ForeignTarget):
    """The write gate's target over a LlamaIndex vector store (see the module docstring).

    Args:
        inner: the user's vector store.
        embedder: the store's embedding (stored vectors and dedup cosines).
        ledger: the write gate's ledger.
    """

    def __init__(self, inner: BasePydanticVectorStore, embedder: Embedder, *, ledger: Ledger) -> None:
        self.inner = inner
        self.docstore: SimpleDocumentStore | None = None if inner.stores_text else shared_docstore(inner)
        super().__init__(
            embedder, ledger=ledger, can_scan=self.docstore is not None or _overrides(inner, "get_nodes")
        )

    @staticmethod
    def _entries(nodes: Sequence[BaseNode | None]) -> list[Stored]:
        return [(n.node_id, node_text(n), n.metadata) for n in nodes if n is not None]

    def _nodes(self, ids: Sequence[str]) -> list[BaseNode]:
        if self.docstore is not None:
            return [n for n in (self.docstore.get_node(i, raise_error=False) for i in ids) if n is not None]
        try:
            return list(self.inner.get_nodes(node_ids=list(ids)))
        except NotImplementedError:
            return []

    def _fetch(self, ids: Sequence[str]) -> list[Stored]:
        return self._entries(self._nodes(ids)) if ids else []

    def _scan(self, where: Where) -> list[Stored] | None:
        if self.docstore is not None:
            return [e for e in self._entries(list(self.docstore.docs.values())) if matches(where, e[2])]
        try:
            return self._entries(self.inner.get_nodes(node_ids=None, filters=to_filters(where)))
        except NotImplementedError:
            return None

    def _nearest(self, text: str, vector: NDArray[np.float32], n: int, where: Where) -> list[Stored] | None:
        query = VectorStoreQuery(
            query_embedding=[float(x) for x in vector], similarity_top_k=n, filters=to_filters(where)
        )
        try:
            result = self.inner.query(query)
        except NotImplementedError:
            return None
        if result.nodes is not None:
            return self._entries(list(result.nodes))
        return self._fetch(list(result.ids or []))

    def _write(self, records: Sequence[MemoryRecord], vectors: NDArray[np.float32] | None) -> None:
        existing = {n.node_id: n for n in self._nodes([r.id for r in records])}
        if vectors is None:
            vectors = self.embed_records(records)
        nodes = []
        for rec, vec in zip(records, vectors, strict=True):
            node = stored_node(self.extra_for(rec.id) or existing.get(rec.id), rec)
            node.embedding = [float(x) for x in vec]
            nodes.append(node)
        if existing:
            self.inner.delete_nodes(list(existing))
        self.inner.add(nodes)
        if self.docstore is not None:
            copies = []
            for node in nodes:
                bare = node.model_copy()
                bare.embedding = None
                copies.append(bare)
            self.docstore.add_documents(copies, allow_update=True)

    def _remove(self, ids: Sequence[str]) -> None:
        self.inner.delete_nodes(list(ids))
        if self.docstore is not None:
            for mid in ids:
                self.docstore.delete_document(mid, raise_error=False)

    def get_nodes(self, node_ids: Sequence[str] | None, filters: MetadataFilters | None) -> list[BaseNode]:
        """Stored nodes by id or filter (ungated: for operators and LlamaIndex internals)."""
        if self.docstore is not None and node_ids is not None and filters is None:
            return [n for n in (self.docstore.get_node(i, raise_error=False) for i in node_ids) if n]
        return list(self.inner.get_nodes(list(node_ids) if node_ids is not None else None, filters))

    def nodes_of_ids(self, ids: Sequence[str]) -> list[BaseNode | None]:
        """Nodes for query result ids (text-less stores: from the private document store)."""
        if self.docstore is None:
            return [None for _ in ids]
        return [self.docstore.get_node(i, raise_error=False) for i in ids]
