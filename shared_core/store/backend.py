"""``ChromaBackend``: the memory store's collections, coherent partitions and commit (H2, H3, R1).

One collection per memory space (cosine space); inside it, partitions by route and owner bucket
(:mod:`shared_core.model.codec`). Each partition touched is mirrored in process
(:class:`~shared_core.retrieval.partition.Partition`: records, vectors, BM25 postings), derived
from Chroma, updated in place by writes, and rebuildable from Chroma at any time.

**Coherence** (the protocol is :mod:`.sync`): every commit stamps its memories with this
writer's id and sequence number and moves the space's head; before a query or a write uses a
space, the backend reads that space's heads (one small round trip) and applies what moved as a
delta. So a client sees every other client's writes, corrections, approvals and forgets at its
next call, without ``refresh()``; a head it cannot read fails the call (fail closed: a cached
partition is never served as fresh after a missed change). Within one store call
(:meth:`ChromaBackend.operation`) a space is checked once.

**Commit** (both indexes or neither): per space, the change record and pending head, the upserts
and deletes in Chroma, the in-process partitions, then the done head. If a Chroma call fails, the
space's partitions are dropped and rebuilt from Chroma on next use.

**Memory**: with ``cache_bytes`` the partitions held are kept under that many bytes (estimated),
least recently used first out; an evicted partition reloads (from its snapshot, :mod:`.snapshot`,
then the change feed) on next use.

This class is the store's :class:`~shared_core.write.target.WriteTarget`. It is internal to
:class:`~shared_core.store.MemoryStore`, which hands it to its write gate and exposes no way to
write through it (W1).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from pathlib import Path
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
    record_from_metadata,
    scope_where,
    with_clears,
)
from ..retrieval.bm25 import BM25Engine
from ..retrieval.partition import Partition, PartitionView, StoredRow, record_text
from ..write.target import PartitionKey, partition_key
from .cache import PartitionCache, key_of
from .chroma import READ_RETRIES, DiskGuard, chroma_call, sources_in
from .collections import Collections
from .sync import SEQ_KEY, W_KEY, ChangeFeed, ChromaFeedStorage, SqliteFeedStorage

__all__ = ["ChromaBackend"]


class ChromaBackend:
    """Collections and coherent in-process partitions of one store; thread-safe.

    Args:
        client: the Chroma client (persistent, ephemeral or HTTP).
        prefix: prefix of this store's collection names.
        embedder: the store's embedding.
        bm25_engine: BM25 implementation of the partitions.
        read_only: refuse :meth:`commit`.
        folder: the embedded store's folder (disk-space guard, snapshots); ``None`` otherwise.
        cache_bytes: byte budget of the partitions held in process (LRU); ``None``: unbounded.
        writer_id: this writer's change-feed id (default: random).
        reopen: ``() -> client``: a fresh client, for a read-only embedded reader whose Chroma
            cannot read vectors another process wrote (chromadb 1.5.9 "Error finding id").
        sole_writer: no other client writes these collections (an embedded store holding its
            folder's writer lock): the ids of a space are listed from Chroma once and kept up to
            date by :meth:`commit`, and :meth:`get` asks Chroma only for ids that may be stored
            (a write of new memories reads nothing back; one read less per call); its change feed
            defers each commit's end (:class:`~.sync.ChangeFeed`).
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        embedder: Embedder,
        bm25_engine: BM25Engine,
        read_only: bool = False,
        folder: Path | None = None,
        cache_bytes: int | None = None,
        writer_id: str | None = None,
        reopen: Callable[[], Any] | None = None,
        sole_writer: bool = False,
    ) -> None:
        self.prefix = prefix
        self.embedder = embedder
        self.bm25_engine: BM25Engine = bm25_engine
        self.read_only = read_only
        self.cols = Collections(client, prefix=prefix, embedder=embedder, read_only=read_only, reopen=reopen)
        storage: ChromaFeedStorage | SqliteFeedStorage = (
            SqliteFeedStorage(folder / "feed.sqlite3", read_only=read_only)
            if folder is not None
            else ChromaFeedStorage(lambda: self.cols.client, prefix=prefix, read_only=read_only)
        )
        self.feed = ChangeFeed(storage, writer_id=writer_id, defer_ends=sole_writer and not read_only)
        self.cols.on_reopen.append(self.feed.clear_cache)
        self.cache = PartitionCache(
            self.cols,
            self.feed,
            dimension=int(embedder.dimension),
            engine=bm25_engine,
            snapshots=folder / "cache" if folder is not None else None,
            cache_bytes=cache_bytes,
        )
        self._guard = DiskGuard(folder / "chroma") if folder is not None and not read_only else None
        # sole writer: space -> every id Chroma may hold (a superset: an id joins before its
        # upsert, which may fail after being applied, and leaves after its delete succeeded)
        self._ids: dict[str, set[str]] | None = {} if sole_writer and not read_only else None
        self.cols.on_reopen.append(self._forget_ids)

    @property
    def client(self) -> Any:
        """The current Chroma client."""
        return self.cols.client

    def clear(self) -> None:
        """Drop every cache (collections, partitions, change-feed state, ids listed)."""
        self.cache.clear()
        self.cols.clear()
        self._forget_ids()

    def _forget_ids(self) -> None:
        if self._ids is not None:
            self._ids = {}

    def _space_ids(self, space: str) -> set[str] | None:
        """The sole writer's ids of a space (listed once, under the space lock), else ``None``."""
        ids = self._ids
        if ids is None:
            return None
        with self.cache.space_lock(space):  # commits hold it: none lands between list and keep
            if space not in ids:
                ids[space] = self.all_ids(space)
            return ids[space]

    def close(self) -> None:
        """Write deferred feed ends, save the snapshots of changed partitions (an embedded writer), clear."""
        self.feed.close()
        self.cache.close()
        self.cols.clear()
        if isinstance(self.feed.storage, SqliteFeedStorage):
            self.feed.storage.close()

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError("the store is open read-only")

    # -- partitions -----------------------------------------------------------------------------

    @staticmethod
    def scope_keys(scope: Scope) -> tuple[PartitionKey, PartitionKey]:
        """The two partitions a scope sees: its private bucket and the shared one (R1, R2)."""
        route = scope.route_id or ""
        private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
        return (scope.memory_space_id, route, private), (scope.memory_space_id, route, SHARED_BUCKET)

    def partition(self, key: PartitionKey) -> Partition:
        """The in-process partition ``key``, checked against the change feed (see :mod:`.cache`)."""
        return self.cache.partition(key)

    def operation(self) -> Any:
        """One store call: each space it touches is checked against the change feed once."""
        return self.cache.operation()

    def views(self, scope: Scope) -> list[PartitionView]:
        """Snapshots of the scope's two partitions, for a query."""
        priv, shared = self.scope_keys(scope)
        with self.cache.operation():
            return [self.partition(priv).view(), self.partition(shared).view()]

    def refresh(self, memory_space_id: str | None = None) -> None:
        """Drop in-process partitions so they are rebuilt from Chroma (never needed for coherence)."""
        self.cache.refresh(memory_space_id)

    def cached_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Partitions of a space currently held in process."""
        return self.cache.cached_keys(memory_space_id)

    def indexed_ids(self, memory_space_id: str) -> set[str]:
        """Every id the in-process partitions hold for a space (after loading them all)."""
        with self.cache.operation():
            keys = self.partition_keys(memory_space_id) | self.cached_keys(memory_space_id)
            return {mid for key in keys for mid in self.partition(key).view().ids}

    def index_state(self, memory_space_id: str) -> dict[str, dict[PartitionKey, set[str]]]:
        """Ids per partition in Chroma and in the partitions held (brought up to date, none loaded)."""
        chroma: dict[PartitionKey, set[str]] = {}
        for rec in self.records_of_space(memory_space_id):
            chroma.setdefault(partition_key(rec), set()).add(rec.id)
        with self.cache.operation():
            loaded = {key: self.partition(key).ids() for key in self.cached_keys(memory_space_id)}
        return {"chroma": chroma, "loaded": loaded}

    def collection(self, space: str, *, create: bool) -> Any:
        """The collection of a memory space (``None`` when absent and not ``create``)."""
        return self.cols.collection(space, create=create)

    def spaces(self) -> list[str]:
        """Every memory space of this store (and only this store's, whatever the server holds)."""
        return self.cols.spaces()

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Records by id from Chroma (any partition of the space)."""
        known = self._space_ids(memory_space_id) if ids else None
        if known is not None:
            ids = [i for i in ids if i in known]
        col = self.collection(memory_space_id, create=False) if ids else None
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
        return set(chroma_call("list ids", lambda: col.get(include=[]), retries=READ_RETRIES)["ids"])

    def partition_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Every partition Chroma holds for a space."""
        col = self.collection(memory_space_id, create=False)
        if col is None:
            return set()
        metas = chroma_call("list partitions", lambda: col.get(include=["metadatas"]), retries=READ_RETRIES)
        return {key_of(memory_space_id, m) for m in metas["metadatas"]}

    def chroma_vector_channel(
        self, scope: Scope, views: Sequence[PartitionView], qv: NDArray[np.float32], n: int
    ) -> tuple[list[str], list[float]]:
        """The vector ranking from Chroma's own index, with the scope in ``where`` (R1)."""
        total = sum(len(v.ids) for v in views)
        if total == 0:
            return [], []
        got = self.cols.read(
            "vector query",
            scope.memory_space_id,
            lambda col: col.query(
                query_embeddings=[np.asarray(qv, dtype=np.float32)],
                n_results=min(n, total),
                where=scope_where(scope),
                include=["distances"],
            ),
        )
        if not got:
            return [], []
        known = {m for v in views for m in v.ids}  # the view is the coherent truth: Chroma may lag
        pairs = [
            (m, 1.0 - float(d)) for m, d in zip(got["ids"][0], got["distances"][0], strict=True) if m in known
        ]
        return [m for m, _ in pairs], [s for _, s in pairs]

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
        [found] = self.partition(partition_key(record)).neighbours(vector, thresholds=[threshold], limit=limit)
        return found

    def neighbours_many(
        self,
        records: Sequence[MemoryRecord],
        vectors: NDArray[np.float32],
        *,
        thresholds: Sequence[float],
        limit: int,
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """:meth:`neighbours` of each record, the records of one partition compared at once (W2, W8).

        One matrix product per partition and batch instead of a pass over the partition per record
        (:meth:`Partition.neighbours`).
        """
        out: list[list[tuple[MemoryRecord, float]]] = [[] for _ in records]
        groups: dict[PartitionKey, list[int]] = defaultdict(list)
        for i, rec in enumerate(records):
            groups[partition_key(rec)].append(i)
        vecs = np.asarray(vectors, dtype=np.float32)
        for key, rows in groups.items():
            found = self.partition(key).neighbours(vecs[rows], thresholds=[thresholds[i] for i in rows], limit=limit)
            for i, near in zip(rows, found, strict=True):
                out[i] = near
        return out

    def same_attribute(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active memories of the partition with the record's entity and attribute (L1)."""
        if not record.entity or not record.attribute:
            return []
        found = self.partition(partition_key(record)).with_attribute(
            record.entity, record.attribute, lambda r: r.field("superseded_by") is None and r.mid != record.id
        )
        return sorted(found, key=lambda r: (r.updated_at, r.id), reverse=True)

    def latest_body(self, key: PartitionKey) -> str | None:
        """Body of the partition's newest memory by creation time."""
        newest = self.partition(key).newest()
        return newest.body if newest is not None else None

    def ids_of_source(self, source_record_id: str) -> list[tuple[str, str]]:
        """``(space, id)`` of every memory derived from a source record (L2)."""
        out: list[tuple[str, str]] = []
        for space in self.spaces():
            col = self.collection(space, create=False)
            if col is None:
                continue
            got = chroma_call(
                "find source", partial(col.get, where={"source_record_id": source_record_id}, include=[])
            )
            out.extend((space, mid) for mid in got["ids"])
        return out

    def sources_among(self, sources: Sequence[str]) -> set[str]:
        """Those of ``sources`` that some memory of this store is derived from (one read per space and chunk)."""
        found: set[str] = set()
        for space in self.spaces() if sources else []:
            col = self.collection(space, create=False)
            if col is not None:
                found |= sources_in(col, sources, what="find sources")
        return found

    def expired(self, now: datetime) -> list[tuple[str, str]]:
        """``(space, id)`` of memories whose retention expiry has passed (L3)."""
        out: list[tuple[str, str]] = []
        ts = now.timestamp()
        for space in self.spaces():
            col = self.collection(space, create=False)
            if col is None:
                continue
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
        """Apply upserts and deletes to Chroma, then to the partitions, one space at a time.

        Raises:
            StoreError: read-only store, disk too full (before anything is written), or a Chroma
                failure (each memory then whole or absent; the space's partitions are rebuilt).
        """
        self._writable()
        upserts = list(upserts)
        if upserts and vectors is None:
            vectors = self.embed_records(upserts)
        by_space: dict[str, list[int]] = defaultdict(list)
        for i, rec in enumerate(upserts):
            by_space[rec.memory_space_id].append(i)
        del_by_space: dict[str, list[str]] = defaultdict(list)
        for space, mid in deletes:
            del_by_space[space].append(mid)
        for space in sorted(set(by_space) | set(del_by_space)):
            idx = by_space.get(space, [])
            vecs = (
                np.asarray(vectors[idx], dtype=np.float32)
                if idx and vectors is not None
                else np.zeros((0, int(self.embedder.dimension)), dtype=np.float32)
            )
            with self.cache.space_lock(space):
                self._commit_space(
                    space, [upserts[i] for i in idx], vecs, list(dict.fromkeys(del_by_space.get(space, [])))
                )
        # outside every space lock: eviction takes the locks of other spaces
        self.cache.enforce_budget({partition_key(r) for r in upserts})

    def _commit_space(
        self, space: str, records: list[MemoryRecord], vectors: NDArray[np.float32], dels: list[str]
    ) -> None:
        col = self.collection(space, create=True)
        encoded = [encode_record(r) for r in records]
        if self._guard is not None:
            payload = int(vectors.nbytes) + 64 * len(dels)
            payload += sum(len(d.encode("utf-8", "surrogatepass")) + len(json.dumps(m)) for d, m in encoded)
            self._guard.check("upsert" if records else "delete", payload)
        # Where an upserted memory was before matters only to the partitions held in this process:
        # each held partition of the space with an earlier version drops it below, from memory,
        # under the space lock. Chroma is asked only where deleted ids were (their snapshots go):
        # one read less per write than locating every upsert.
        previous = self._locate(col, dels)
        if dels:  # snapshots hold text: gone before the memories are (erasure, L2)
            held = {k for k, p in self.cache.held(space).items() if any(m in p for m in dels)}
            self.cache.forget_snapshots({previous[m] for m in dels if m in previous} | held)
        known = self._space_ids(space) if records else None
        # an earlier version's fields this one no longer has are cleared (Chroma merges metadata);
        # a shared client cannot know which ids exist, so it clears for every memory
        again = [known is None or r.id in known for r in records]
        if known is not None:
            known.update(r.id for r in records)
        seq = self.feed.next_seq()
        self.feed.begin(space, seq, deletes=dels)
        try:
            if records:
                metas = [
                    {**(with_clears(m) if seen else m), W_KEY: self.feed.writer, SEQ_KEY: seq}
                    for (_, m), seen in zip(encoded, again, strict=True)
                ]
                chroma_call(
                    "upsert",
                    partial(
                        col.upsert,
                        ids=[r.id for r in records],
                        embeddings=vectors,
                        documents=[d for d, _ in encoded],
                        metadatas=metas,
                    ),
                )
            if dels:
                chroma_call("delete", partial(col.delete, ids=dels))
                if self._ids is not None and space in self._ids:
                    self._ids[space].difference_update(dels)
            parts = self.cache.held(space)
            for mid in dels:
                for part in parts.values():
                    part.remove([mid])
            landing: dict[PartitionKey, list[int]] = defaultdict(list)  # one upsert per partition
            for i, rec in enumerate(records):
                key = partition_key(rec)
                for other, part in parts.items():  # an earlier version in another held partition
                    if other != key and rec.id in part:
                        part.remove([rec.id])
                if key in parts:
                    landing[key].append(i)
            for key, rows in landing.items():
                parts[key].upsert([StoredRow(records[i]) for i in rows], vectors[rows])
        except Exception:
            # Chroma has the truth, and a failed call (a timeout, say) may still have been
            # applied: drop the space's partitions, rebuilt from Chroma on next use.
            self.cache.drop_space(space)
            raise
        self.feed.end(space, seq)
        self.cache.committed(space, seq)

    def _locate(self, col: Any, ids: Sequence[str]) -> dict[str, PartitionKey]:
        if not ids:
            return {}
        got = chroma_call(
            "locate", lambda: col.get(ids=list(ids), include=["metadatas"]), retries=READ_RETRIES
        )
        return {
            mid: key_of(str(meta.get("memory_space_id", "")), meta)
            for mid, meta in zip(got["ids"], got["metadatas"], strict=True)
        }
