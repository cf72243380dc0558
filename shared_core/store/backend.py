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

import contextlib
import json
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
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
    partition_where,
    record_from_metadata,
    scope_where,
)
from ..retrieval.bm25 import BM25Engine
from ..retrieval.partition import Partition, PartitionView, StoredRow, record_text
from ..write.target import PartitionKey, partition_key
from . import snapshot
from .chroma import (
    READ_RETRIES,
    DiskGuard,
    check_collection_embedding,
    chroma_call,
    collection_name,
    get_collection_or_none,
    is_internal_error,
)
from .sync import SEQ_KEY, W_KEY, ChangeFeed, ChromaFeedStorage, Head, SqliteFeedStorage, changed_where

__all__ = ["ChromaBackend"]

_FETCH_CHUNK = 2000
_SMALL_DELTA = 500


@dataclass
class _SpaceState:
    """What of a space's change feed the cached partitions reflect."""

    seen: dict[str, int] = field(default_factory=dict)  # writer -> done seq applied
    polled_ns: int = 0  # monotonic start of the last completed poll


def _key_of(space: str, meta: dict[str, Any]) -> PartitionKey:
    return (space, str(meta.get("rg_route", "")), str(meta.get("rg_bucket", "")))


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
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.embedder = embedder
        self.bm25_engine: BM25Engine = bm25_engine
        self.read_only = read_only
        self.cache_bytes = cache_bytes
        storage: ChromaFeedStorage | SqliteFeedStorage = (
            SqliteFeedStorage(folder / "feed.sqlite3", read_only=read_only)
            if folder is not None
            else ChromaFeedStorage(lambda: self.client, prefix=prefix, read_only=read_only)
        )
        self.feed = ChangeFeed(storage, writer_id=writer_id)
        self.on_reopen: list[Callable[[], None]] = []
        self._guard = DiskGuard(folder / "chroma") if folder is not None and not read_only else None
        self._snapdir = folder / "cache" if folder is not None else None
        self._reopen = reopen
        self._collections: dict[str, Any] = {}
        self._parts: OrderedDict[PartitionKey, Partition] = OrderedDict()
        self._state: dict[str, _SpaceState] = {}
        self._saved: dict[PartitionKey, int] = {}  # partition version its snapshot holds
        self._space_locks: dict[str, threading.RLock] = defaultdict(threading.RLock)
        self._mutex = threading.RLock()
        self._local = threading.local()
        self.evictions = 0

    def clear(self) -> None:
        """Drop every cache (collections, partitions, change-feed state)."""
        with self._mutex:
            self._parts.clear()
            self._state.clear()
            self._collections.clear()

    def close(self) -> None:
        """Save the snapshots of changed partitions (the writer of an embedded store), then clear."""
        if self._snapdir is not None and not self.read_only:
            with self._mutex:
                items = list(self._parts.items())
            for key, part in items:
                with contextlib.suppress(StoreError):
                    self._save_snapshot(key, part)
        self.clear()
        if isinstance(self.feed.storage, SqliteFeedStorage):
            self.feed.storage.close()

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError("the store is open read-only")

    # -- collections ----------------------------------------------------------------------------

    def collection(self, space: str, *, create: bool) -> Any:
        """The collection of a memory space (``None`` when absent and not ``create``)."""
        with self._mutex:
            col = self._collections.get(space)
        if col is not None:
            return col
        name = collection_name(self.prefix, space)
        if create:
            self._writable()
            meta = {
                "hnsw:space": "cosine",
                "rg_space": space,
                "rg_prefix": self.prefix,
                "rg_embedding": self.embedder.name,
                "rg_dim": int(self.embedder.dimension),
            }
            col = chroma_call(
                "create collection",
                lambda: self.client.get_or_create_collection(name, metadata=meta, embedding_function=None),
            )
        else:
            col = chroma_call("get collection", lambda: get_collection_or_none(self.client, name))
            if col is None:
                return None
        check_collection_embedding(col.metadata, self.embedder.name, int(self.embedder.dimension), space)
        with self._mutex:
            self._collections[space] = col
        return col

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
            meta = col.metadata or {}
            space = meta.get("rg_space")
            # Prefix and exact name keep stores with prefixes "rg" and "rg-team" apart.
            if (
                isinstance(space, str)
                and meta.get("rg_prefix", self.prefix) == self.prefix
                and collection_name(self.prefix, space) == name
            ):
                out.append(space)
        return sorted(out)

    def _reopen_client(self) -> None:
        if self._reopen is None:  # pragma: no cover - guarded by the caller
            return
        with self._mutex:
            self.client = self._reopen()
            self._collections.clear()
        self.feed.clear_cache()
        for hook in self.on_reopen:
            hook()

    def _read(self, what: str, space: str, call: Callable[[Any], Any]) -> Any:
        """A read of a space's collection; a read-only embedded reader reopens its client once."""
        holder = [self.collection(space, create=False)]
        if holder[0] is None:
            return None

        def attempt() -> Any:
            try:
                return call(holder[0])
            except Exception as exc:
                if self._reopen is None or not is_internal_error(exc):
                    raise
            self._reopen_client()
            holder[0] = self.collection(space, create=False)
            return call(holder[0]) if holder[0] is not None else None

        return chroma_call(what, attempt, retries=READ_RETRIES if self._reopen is None else 0)

    # -- coherence ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def operation(self) -> Iterator[None]:
        """One store call: each space it touches is checked against the change feed once."""
        if getattr(self._local, "synced", None) is not None:
            yield
            return
        self._local.synced = set()
        try:
            yield
        finally:
            self._local.synced = None

    def _ensure_synced(self, space: str) -> None:
        synced: set[str] | None = getattr(self._local, "synced", None)
        if synced is not None and space in synced:
            return
        self.sync(space)
        if synced is not None:
            synced.add(space)

    def sync(self, space: str) -> None:
        """Apply what other writers changed in a space since the last check (one round trip if nothing).

        Raises:
            StoreUnavailableError, StoreError: if the change feed cannot be read; the cached
                partitions are then not used (the caller's query or write fails).
        """
        arrived = time.monotonic_ns()
        with self._space_locks[space]:
            with self._mutex:
                state = self._state.get(space)
                targets = [p for k, p in self._parts.items() if k[0] == space]
            if state is None or not targets:
                return
            if state.polled_ns > arrived:
                return  # a check that started after this call arrived has just finished
            started = time.monotonic_ns()
            heads = self.feed.heads(space)
            self._catch_up(space, targets, state.seen, heads)
            state.seen.update({w: h.done for w, h in heads.items()})
            state.polled_ns = started

    def _catch_up(
        self, space: str, targets: Sequence[Partition], seen: dict[str, int], heads: dict[str, Head]
    ) -> None:
        """Bring ``targets`` (partitions of ``space``) from ``seen`` up to ``heads``."""
        moved = [(w, h, seen.get(w, 0)) for w, h in heads.items() if h.pending > seen.get(w, 0)]
        if not moved:
            return
        keys = {t.key for t in targets}
        wanted: set[str] = set()
        for w, h, lo in moved:
            changed = self._read(
                "read changes", space, lambda col, w=w, lo=lo: col.get(where=changed_where(w, lo), include=[])
            )
            ids = set(changed["ids"]) if changed else set()
            if len(ids) <= _SMALL_DELTA:
                wanted |= ids
            else:
                wanted |= {i for i in ids if any(i in t for t in targets)}
                for key in keys:
                    extra = {"rg_route": key[1], "rg_bucket": key[2]}
                    got = self._read(
                        "read changes",
                        space,
                        lambda col, w=w, lo=lo, e=extra: col.get(where=changed_where(w, lo, e), include=[]),
                    )
                    wanted |= set(got["ids"]) if got else set()
            if h.dels > lo:
                wanted |= {i for i in self.feed.deleted_since(space, w, lo) if any(i in t for t in targets)}
        if wanted:
            self._fetch_into(space, sorted(wanted), targets)

    def _fetch_into(self, space: str, ids: Sequence[str], targets: Sequence[Partition]) -> None:
        """Re-read ids from Chroma and route each into the target partition it belongs to."""
        present: set[str] = set()
        for start in range(0, len(ids), _FETCH_CHUNK):
            chunk = list(ids[start : start + _FETCH_CHUNK])
            got = self._read(
                "read changes",
                space,
                lambda col, c=chunk: col.get(ids=c, include=["embeddings", "documents", "metadatas"]),
            )
            if not got:
                continue
            for mid, doc, meta, vec in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            ):
                present.add(mid)
                row = StoredRow.stored(mid, doc, meta)
                key = _key_of(space, meta)
                for t in targets:
                    if t.key == key:
                        t.upsert([row], np.asarray([vec], dtype=np.float32))
                    elif mid in t:
                        t.remove([mid])
        gone = [i for i in ids if i not in present]
        for t in targets:
            t.remove(gone)

    # -- partitions -----------------------------------------------------------------------------

    @staticmethod
    def scope_keys(scope: Scope) -> tuple[PartitionKey, PartitionKey]:
        """The two partitions a scope sees: its private bucket and the shared one (R1, R2)."""
        route = scope.route_id or ""
        private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
        return (scope.memory_space_id, route, private), (scope.memory_space_id, route, SHARED_BUCKET)

    def partition(self, key: PartitionKey) -> Partition:
        """The in-process partition ``key``, checked against the change feed, loaded on first use."""
        space = key[0]
        self._ensure_synced(space)
        with self._space_locks[space]:
            with self._mutex:
                part = self._parts.get(key)
                if part is not None:
                    self._parts.move_to_end(key)
                    return part
            part, heads = self._load(key)
            with self._mutex:
                self._parts[key] = part
                state = self._state.get(space)
                if state is None:
                    self._state[space] = _SpaceState(seen=heads, polled_ns=time.monotonic_ns())
        self._enforce_budget({key})
        return part

    def _load(self, key: PartitionKey) -> tuple[Partition, dict[str, int]]:
        space = key[0]
        part = Partition(key, int(self.embedder.dimension), engine=self.bm25_engine)
        col = self.collection(space, create=False)
        if col is None:
            return part, {}
        heads = self.feed.heads(space)
        done = {w: h.done for w, h in heads.items()}
        if self._snapdir is not None:
            snap = snapshot.load(
                self._snapdir,
                key,
                dimension=int(self.embedder.dimension),
                engine=self.bm25_engine,
                embedding=self.embedder.name,
                collection_id=str(col.id),
            )
            if snap is not None and all(w in heads and heads[w].done >= s for w, s in snap.heads.items()):
                self._saved[key] = snap.partition.version
                self._catch_up(space, [snap.partition], snap.heads, heads)
                return snap.partition, done
        got = self._read(
            "load partition",
            space,
            lambda c: c.get(
                where=partition_where(key[1] or None, key[2]), include=["embeddings", "documents", "metadatas"]
            ),
        )
        if got and got["ids"]:
            rows = [
                StoredRow.stored(i, d, m)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
            ]
            part.load(rows, np.asarray(got["embeddings"], dtype=np.float32))
        if self._snapdir is not None and not self.read_only:
            snapshot.save(self._snapdir, part, heads=done, embedding=self.embedder.name, collection_id=str(col.id))
            self._saved[key] = part.version
        return part, done

    def _save_snapshot(self, key: PartitionKey, part: Partition) -> None:
        if self._snapdir is None or self.read_only or self._saved.get(key) == part.version:
            return
        col = self.collection(key[0], create=False)
        with self._mutex:
            state = self._state.get(key[0])
            heads = dict(state.seen) if state is not None else None
        if col is None or heads is None:
            return
        snapshot.save(self._snapdir, part, heads=heads, embedding=self.embedder.name, collection_id=str(col.id))
        self._saved[key] = part.version

    def _enforce_budget(self, protect: set[PartitionKey]) -> None:
        if self.cache_bytes is None:
            return
        evicted: list[tuple[PartitionKey, Partition]] = []
        with self._mutex:
            total = sum(p.nbytes() for p in self._parts.values())
            for key in list(self._parts):
                if total <= self.cache_bytes:
                    break
                if key in protect:
                    continue
                part = self._parts[key]
                evicted.append((key, part))
                total -= part.nbytes()
        for key, part in evicted:
            with self._space_locks[key[0]]:
                with contextlib.suppress(StoreError):
                    self._save_snapshot(key, part)
                with self._mutex:
                    self._parts.pop(key, None)
                    self.evictions += 1
                    if not any(k[0] == key[0] for k in self._parts):
                        self._state.pop(key[0], None)

    def views(self, scope: Scope) -> list[PartitionView]:
        """Snapshots of the scope's two partitions, for a query."""
        priv, shared = self.scope_keys(scope)
        with self.operation():
            return [self.partition(priv).view(), self.partition(shared).view()]

    def refresh(self, memory_space_id: str | None = None) -> None:
        """Drop in-process partitions so they are rebuilt from Chroma (never needed for coherence)."""
        with self._mutex:
            for key in [k for k in self._parts if memory_space_id in (None, k[0])]:
                del self._parts[key]
            for space in [s for s in self._state if memory_space_id in (None, s)]:
                del self._state[space]

    def cached_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Partitions of a space currently held in process."""
        with self._mutex:
            return {k for k in self._parts if k[0] == memory_space_id}

    def cached_bytes(self) -> int:
        """Estimated bytes of the partitions held in process."""
        with self._mutex:
            return sum(p.nbytes() for p in self._parts.values())

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
        return set(chroma_call("list ids", lambda: col.get(include=[]), retries=READ_RETRIES)["ids"])

    def partition_keys(self, memory_space_id: str) -> set[PartitionKey]:
        """Every partition Chroma holds for a space."""
        col = self.collection(memory_space_id, create=False)
        if col is None:
            return set()
        metas = chroma_call("list partitions", lambda: col.get(include=["metadatas"]), retries=READ_RETRIES)
        return {_key_of(memory_space_id, m) for m in metas["metadatas"]}

    def chroma_vector_channel(
        self, scope: Scope, views: Sequence[PartitionView], qv: NDArray[np.float32], n: int
    ) -> tuple[list[str], list[float]]:
        """The vector ranking from Chroma's own index, with the scope in ``where`` (R1)."""
        total = sum(len(v.ids) for v in views)
        if total == 0:
            return [], []
        got = self._read(
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
        pairs = [(m, 1.0 - float(d)) for m, d in zip(got["ids"][0], got["distances"][0], strict=True) if m in known]
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
        view = self.partition(partition_key(record)).view()
        if not view.ids:
            return []
        sims = view.similarities(vector)
        order = np.argsort(-sims)[: max(1, limit)]
        return [(view.records[i], float(sims[i])) for i in order if sims[i] >= threshold]

    def same_attribute(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active memories of the partition with the record's entity and attribute (L1)."""
        found = self.partition(partition_key(record)).select(
            lambda r: r.field("entity") == record.entity
            and r.field("attribute") == record.attribute
            and r.field("superseded_by") is None
            and r.mid != record.id
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
            with self._space_locks[space]:
                self._commit_space(space, [upserts[i] for i in idx], vecs, list(dict.fromkeys(del_by_space.get(space, []))))

    def _commit_space(
        self, space: str, records: list[MemoryRecord], vectors: NDArray[np.float32], dels: list[str]
    ) -> None:
        col = self.collection(space, create=True)
        encoded = [encode_record(r) for r in records]
        if self._guard is not None:
            payload = int(vectors.nbytes) + 64 * len(dels)
            payload += sum(len(d.encode("utf-8", "surrogatepass")) + len(json.dumps(m)) for d, m in encoded)
            self._guard.check("upsert" if records else "delete", payload)
        previous = self._locate(col, [r.id for r in records] + dels)
        if dels and self._snapdir is not None:
            # Snapshots hold text: gone before the memories are (erasure, L2).
            with self._mutex:
                cached = {k for k, p in self._parts.items() if k[0] == space and any(m in p for m in dels)}
            for key in {previous[m] for m in dels if m in previous} | cached:
                snapshot.remove(self._snapdir, key)
                self._saved.pop(key, None)
        seq = self.feed.next_seq()
        self.feed.begin(space, seq, deletes=dels)
        try:
            if records:
                metas = [{**m, W_KEY: self.feed.writer, SEQ_KEY: seq} for _, m in encoded]
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
            with self._mutex:
                parts = {k: p for k, p in self._parts.items() if k[0] == space}
            for mid in dels:
                for part in parts.values():
                    part.remove([mid])
            for rec, vec in zip(records, vectors, strict=True):
                key = partition_key(rec)
                old = previous.get(rec.id)
                if old is not None and old != key and old in parts:
                    parts[old].remove([rec.id])
                part = parts.get(key)
                if part is not None:
                    part.upsert([StoredRow(rec)], vec[None, :])
        except Exception:
            # Chroma has the truth, and a failed call (a timeout, say) may still have been
            # applied: drop the space's partitions, rebuilt from Chroma on next use.
            with self._mutex:
                for key in [k for k in self._parts if k[0] == space]:
                    del self._parts[key]
                self._state.pop(space, None)
            raise
        self.feed.end(space, seq)
        with self._mutex:
            state = self._state.get(space)
            if state is not None:
                state.seen[self.feed.writer] = seq
        self._enforce_budget({partition_key(r) for r in records})

    def _locate(self, col: Any, ids: Sequence[str]) -> dict[str, PartitionKey]:
        if not ids:
            return {}
        got = chroma_call(
            "locate", lambda: col.get(ids=list(ids), include=["metadatas"]), retries=READ_RETRIES
        )
        return {
            mid: _key_of(str(meta.get("memory_space_id", "")), meta)
            for mid, meta in zip(got["ids"], got["metadatas"], strict=True)
        }
