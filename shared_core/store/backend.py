"""``ChromaBackend``: the memory store's collections, partitions and two-index commit (H2, R1).

One collection per memory space (cosine space); inside it, partitions by route and owner bucket
(:mod:`shared_core.model.codec`). Each partition touched is mirrored in process
(:class:`~shared_core.retrieval.partition.Partition`: records, vectors, BM25), derived from Chroma
and rebuildable from it at any time.

Consistency (DESIGN "Consistency of the two indexes"): writes are idempotent upserts by id,
applied to Chroma first and then to the in-process partitions; if the second step fails the
space's partitions are dropped and rebuilt from Chroma on next use, so the two never diverge.

This class is the store's :class:`~shared_core.write.target.WriteTarget`. It is internal to
:class:`~shared_core.store.MemoryStore`, which hands it to its write gate and exposes no way to
write through it (W1).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..embedding import Embedder
from ..errors import StoreError
from ..model import (
    SHARED_BUCKET,
    MemoryRecord,
    Scope,
    Visibility,
    bucket_of,
    encode_record,
    partition_where,
    record_from_metadata,
    scope_where,
)
from ..retrieval.bm25 import BM25Engine
from ..retrieval.partition import Partition, PartitionView, record_text
from ..write.target import PartitionKey, partition_key
from .chroma import READ_RETRIES, check_collection_embedding, chroma_call, collection_name

__all__ = ["ChromaBackend"]


class ChromaBackend:
    """Collections and in-process partitions of one store; thread-safe.

    Args:
        client: the Chroma client (persistent, ephemeral or HTTP).
        prefix: prefix of this store's collection names.
        embedder: the store's embedding.
        bm25_engine: BM25 implementation of the partitions.
        read_only: refuse :meth:`commit`.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        embedder: Embedder,
        bm25_engine: BM25Engine,
        read_only: bool = False,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.embedder = embedder
        self.bm25_engine: BM25Engine = bm25_engine
        self.read_only = read_only
        self._collections: dict[str, Any] = {}
        self._parts: dict[PartitionKey, Partition] = {}
        self._mutex = threading.RLock()

    def clear(self) -> None:
        """Drop every cache (collections and partitions)."""
        with self._mutex:
            self._parts.clear()
            self._collections.clear()

    # -- collections ----------------------------------------------------------------------------

    def collection(self, space: str, *, create: bool) -> Any:
        """The collection of a memory space (``None`` when absent and not ``create``)."""
        with self._mutex:
            col = self._collections.get(space)
            if col is not None:
                return col
            name = collection_name(self.prefix, space)
            if create:
                meta = {
                    "hnsw:space": "cosine",
                    "rg_space": space,
                    "rg_prefix": self.prefix,
                    "rg_embedding": self.embedder.name,
                    "rg_dim": int(self.embedder.dimension),
                }
                col = chroma_call(
                    "create collection",
                    lambda: self.client.get_or_create_collection(
                        name, metadata=meta, embedding_function=None
                    ),
                )
            else:
                col = chroma_call("get collection", lambda: self._get_collection_or_none(name))
                if col is None:
                    return None
            check_collection_embedding(col.metadata, self.embedder.name, int(self.embedder.dimension), space)
            self._collections[space] = col
            return col

    def _get_collection_or_none(self, name: str) -> Any:
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if type(exc).__name__ in {
                "NotFoundError",
                "InvalidCollectionException",
            } or "does not exist" in str(exc):
                return None
            raise

    def spaces(self) -> list[str]:
        """Every memory space of this store (and only this store's, whatever the server holds)."""
        cols = chroma_call("list collections", self.client.list_collections)
        out = []
        for c in cols:
            name = c if isinstance(c, str) else c.name
            if not name.startswith(f"{self.prefix}-"):
                continue
            col = (
                c
                if not isinstance(c, str)
                else chroma_call(
                    "get collection", partial(self.client.get_collection, name, embedding_function=None)
                )
            )
            space = (col.metadata or {}).get("rg_space")
            # The exact name check keeps stores with prefixes "rg" and "rg-team" apart.
            if isinstance(space, str) and collection_name(self.prefix, space) == name:
                out.append(space)
        return sorted(out)

    # -- partitions -----------------------------------------------------------------------------

    @staticmethod
    def scope_keys(scope: Scope) -> tuple[PartitionKey, PartitionKey]:
        """The two partitions a scope sees: its private bucket and the shared one (R1, R2)."""
        route = scope.route_id or ""
        private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
        return (scope.memory_space_id, route, private), (scope.memory_space_id, route, SHARED_BUCKET)

    def partition(self, key: PartitionKey) -> Partition:
        """The in-process partition ``key``, loaded from Chroma on first use."""
        with self._mutex:
            part = self._parts.get(key)
            if part is not None:
                return part
            part = Partition(key, int(self.embedder.dimension), engine=self.bm25_engine)
            col = self.collection(key[0], create=False)
            if col is not None:
                got = chroma_call(
                    "load partition",
                    lambda: col.get(
                        where=partition_where(key[1] or None, key[2]),
                        include=["embeddings", "documents", "metadatas"],
                    ),
                    retries=READ_RETRIES,
                )
                if got["ids"]:
                    records = [
                        record_from_metadata(i, d, m)
                        for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
                    ]
                    part.upsert(records, np.asarray(got["embeddings"], dtype=np.float32))
            self._parts[key] = part
            return part

    def views(self, scope: Scope) -> list[PartitionView]:
        """Snapshots of the scope's two partitions, for a query."""
        priv, shared = self.scope_keys(scope)
        return [self.partition(priv).view(), self.partition(shared).view()]

    def refresh(self, memory_space_id: str | None = None) -> None:
        """Drop in-process partitions so they are rebuilt from Chroma."""
        with self._mutex:
            for key in [k for k in self._parts if memory_space_id in (None, k[0])]:
                del self._parts[key]

    def cached_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Partitions of a space currently held in process."""
        with self._mutex:
            return {k for k in self._parts if k[0] == memory_space_id}

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Records by id from Chroma (any partition of the space)."""
        col = self.collection(memory_space_id, create=False)
        if col is None or not ids:
            return []
        got = chroma_call(
            "get", lambda: col.get(ids=list(ids), include=["documents", "metadatas"]), retries=READ_RETRIES
        )
        return [
            record_from_metadata(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def all_ids(self, memory_space_id: str) -> set[str]:
        """Every id Chroma holds for a memory space."""
        col = self.collection(memory_space_id, create=False)
        if col is None:
            return set()
        return set(chroma_call("list ids", lambda: col.get(include=[]))["ids"])

    def partition_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Every partition Chroma holds for a space."""
        col = self.collection(memory_space_id, create=False)
        if col is None:
            return set()
        metas = chroma_call("list partitions", lambda: col.get(include=["metadatas"]))["metadatas"]
        return {(memory_space_id, str(m.get("rg_route", "")), str(m.get("rg_bucket", ""))) for m in metas}

    def chroma_vector_channel(
        self, scope: Scope, views: Sequence[PartitionView], qv: NDArray[np.float32], n: int
    ) -> tuple[list[str], list[float]]:
        """The vector ranking from Chroma's own index, with the scope in ``where`` (R1)."""
        col = self.collection(scope.memory_space_id, create=False)
        total = sum(len(v.ids) for v in views)
        if col is None or total == 0:
            return [], []
        got = chroma_call(
            "vector query",
            lambda: col.query(
                query_embeddings=[np.asarray(qv, dtype=np.float32)],
                n_results=min(n, total),
                where=scope_where(scope),
                include=["distances"],
            ),
            retries=READ_RETRIES,
        )
        return list(got["ids"][0]), [1.0 - float(d) for d in got["distances"][0]]

    # -- the WriteTarget protocol ---------------------------------------------------------------

    def embed_records(self, records: Sequence[MemoryRecord]) -> NDArray[np.float32]:
        """Embeddings of records' indexed text (title and body)."""
        return self.embedder.embed_documents([record_text(r) for r in records])

    def vector_of(self, record: MemoryRecord) -> NDArray[np.float32]:
        """The stored vector of a memory (from its partition, else recomputed)."""
        found = self.partition(partition_key(record)).get(record.id)
        if found is not None:
            return found[1]
        vec: NDArray[np.float32] = self.embed_records([record])[0]
        return vec

    def neighbours(
        self, record: MemoryRecord, vector: NDArray[np.float32], *, threshold: float, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        """Memories of the record's partition with cosine >= ``threshold``, best first (W2)."""
        view = self.partition(partition_key(record)).view()
        if not view.ids:
            return []
        sims = view.similarities(vector)
        order = np.argsort(-sims)[: max(1, limit)]
        return [(view.records[i], float(sims[i])) for i in order if sims[i] >= threshold]

    def same_attribute(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active memories of the partition with the record's entity and attribute (L1)."""
        return sorted(
            (
                r
                for r in self.partition(partition_key(record)).records()
                if r.entity == record.entity
                and r.attribute == record.attribute
                and r.superseded_by is None
                and r.id != record.id
            ),
            key=lambda r: (r.updated_at, r.id),
            reverse=True,
        )

    def latest_body(self, key: PartitionKey) -> str | None:
        """Body of the partition's newest memory by creation time."""
        newest = max(
            self.partition(key).records(), key=lambda r: (r.created_at or r.updated_at, r.id), default=None
        )
        return newest.body if newest is not None else None

    def ids_of_source(self, source_record_id: str) -> list[tuple[str, str]]:
        """``(space, id)`` of every memory derived from a source record (L2)."""
        out: list[tuple[str, str]] = []
        for space in self.spaces():
            col = self.collection(space, create=False)
            got = chroma_call(
                "find source", partial(col.get, where={"source_record_id": source_record_id}, include=[])
            )
            out.extend((space, mid) for mid in got["ids"])
        return out

    def expired(self, now: datetime) -> list[tuple[str, str]]:
        """``(space, id)`` of memories whose retention expiry has passed (L3)."""
        out: list[tuple[str, str]] = []
        ts = now.timestamp()
        for space in self.spaces():
            col = self.collection(space, create=False)
            got = chroma_call("expired", partial(col.get, where={"expires_at_ts": {"$lte": ts}}, include=[]))
            out.extend((space, m) for m in got["ids"])
        return out

    def records_of_space(self, memory_space_id: str) -> list[MemoryRecord]:
        """Every memory of a space, from Chroma."""
        col = self.collection(memory_space_id, create=False)
        if col is None:
            return []
        got = chroma_call("read space", lambda: col.get(include=["documents", "metadatas"]))
        return [
            record_from_metadata(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def commit(
        self,
        upserts: Sequence[MemoryRecord],
        vectors: NDArray[np.float32] | None,
        deletes: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Apply upserts and deletes to Chroma, then to the partitions (both or neither)."""
        if self.read_only:
            raise StoreError("the store is open read-only")
        upserts = list(upserts)
        if upserts and vectors is None:
            vectors = self.embed_records(upserts)
        by_space: dict[str, list[int]] = defaultdict(list)
        for i, rec in enumerate(upserts):
            by_space[rec.memory_space_id].append(i)
        del_by_space: dict[str, list[str]] = defaultdict(list)
        for space, mid in deletes:
            del_by_space[space].append(mid)

        with self._mutex:
            for space in sorted(set(by_space) | set(del_by_space)):
                col = self.collection(space, create=True)
                idx = by_space.get(space, [])
                touched_ids = [upserts[i].id for i in idx] + del_by_space.get(space, [])
                previous = self._locate(col, touched_ids)
                try:
                    if idx and vectors is not None:
                        docs, metas = zip(*(encode_record(upserts[i]) for i in idx), strict=True)
                        chroma_call(
                            "upsert",
                            partial(
                                col.upsert,
                                ids=[upserts[i].id for i in idx],
                                embeddings=np.asarray(vectors[idx], dtype=np.float32),
                                documents=list(docs),
                                metadatas=list(metas),
                            ),
                        )
                    if del_by_space.get(space):
                        chroma_call("delete", partial(col.delete, ids=del_by_space[space]))
                    for mid, key in previous.items():
                        part = self._parts.get(key)
                        if part is not None:
                            part.remove([mid])
                    for i in idx:
                        key = partition_key(upserts[i])
                        if key in self._parts and vectors is not None:
                            self._parts[key].upsert([upserts[i]], vectors[[i]])
                except Exception:
                    # Chroma has the truth, and a failed call (a timeout, say) may still have been
                    # applied: drop the space's partitions, rebuilt from Chroma on next use.
                    for key in [k for k in self._parts if k[0] == space]:
                        del self._parts[key]
                    raise

    def _locate(self, col: Any, ids: Sequence[str]) -> dict[str, PartitionKey]:
        if not ids:
            return {}
        got = chroma_call(
            "locate", lambda: col.get(ids=list(ids), include=["metadatas"]), retries=READ_RETRIES
        )
        out: dict[str, PartitionKey] = {}
        for mid, meta in zip(got["ids"], got["metadatas"], strict=True):
            out[mid] = (
                str(meta.get("memory_space_id", "")),
                str(meta.get("rg_route", "")),
                str(meta.get("rg_bucket", "")),
            )
        return out
