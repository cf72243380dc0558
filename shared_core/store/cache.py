"""The partition cache of one store: coherent with the change feed, bounded by a byte budget (H2, H3).

Each partition a query or the write gate touches is held in process
(:class:`~shared_core.retrieval.partition.Partition`), loaded from its snapshot (:mod:`.snapshot`)
or from Chroma on first use, and kept current with the change feed (:mod:`.sync`): before a
partition of a space is used, the space's heads are read (one small round trip) and what moved is
re-read from Chroma and routed into the partitions held (:meth:`PartitionCache.sync`). Within one
store call (:meth:`PartitionCache.operation`) a space is checked once. A space's check, its loads
and the commits into it hold that space's lock, so a delta can never be applied over a newer write.

With ``cache_bytes``, the partitions held stay under that many (estimated) bytes, least recently
used out; an evicted partition is saved as a snapshot (writer) and reloads on next use.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import StoreError
from ..model import partition_where
from ..retrieval.bm25 import BM25Engine
from ..retrieval.partition import Partition, PartitionKey, StoredRow
from . import snapshot
from .collections import Collections
from .sync import ChangeFeed, Head, changed_where

__all__ = ["PartitionCache", "key_of"]

_FETCH_CHUNK = 2000
_SMALL_DELTA = 500


def key_of(space: str, meta: dict[str, Any]) -> PartitionKey:
    """The partition of a stored memory, from its metadata."""
    return (space, str(meta.get("rg_route", "")), str(meta.get("rg_bucket", "")))


@dataclass
class _SpaceState:
    """What of a space's change feed the cached partitions reflect."""

    seen: dict[str, int] = field(default_factory=dict)  # writer -> done seq applied
    polled_ns: int = 0  # monotonic start of the last completed poll


def _ids_where(col: Any, *, where: dict[str, Any]) -> Any:
    return col.get(where=where, include=[])


def _full_by_ids(col: Any, *, ids: list[str]) -> Any:
    return col.get(ids=ids, include=["embeddings", "documents", "metadatas"])


class PartitionCache:
    """Coherent, bounded in-process partitions of one store (see module docstring).

    Args:
        cols: the store's collections.
        feed: the store's change feed.
        dimension: the embedding's dimension.
        engine: BM25 engine of the partitions.
        snapshots: folder of partition snapshots (embedded stores), or ``None``.
        cache_bytes: byte budget; ``None``: unbounded.
    """

    def __init__(
        self,
        cols: Collections,
        feed: ChangeFeed,
        *,
        dimension: int,
        engine: BM25Engine,
        snapshots: Path | None = None,
        cache_bytes: int | None = None,
    ) -> None:
        self.cols = cols
        self.feed = feed
        self.dimension = dimension
        self.bm25_engine: BM25Engine = engine
        self.read_only = cols.read_only
        self.cache_bytes = cache_bytes
        self._snapdir = snapshots
        self._parts: OrderedDict[PartitionKey, Partition] = OrderedDict()
        self._state: dict[str, _SpaceState] = {}
        self._saved: dict[PartitionKey, int] = {}  # partition version its snapshot holds
        self._space_locks: dict[str, threading.RLock] = defaultdict(threading.RLock)
        self._mutex = threading.RLock()
        self._local = threading.local()
        self.evictions = 0

    def clear(self) -> None:
        """Drop every partition and change-feed state."""
        with self._mutex:
            self._parts.clear()
            self._state.clear()

    def close(self) -> None:
        """Save the snapshots of changed partitions (the writer of an embedded store), then clear."""
        if self._snapdir is not None and not self.read_only:
            with self._mutex:
                items = list(self._parts.items())
            for key, part in items:
                with contextlib.suppress(StoreError):
                    self._save_snapshot(key, part)
        self.clear()

    def space_lock(self, space: str) -> threading.RLock:
        """The lock of a space (its checks, loads and commits)."""
        with self._mutex:
            return self._space_locks[space]

    def held(self, space: str) -> dict[PartitionKey, Partition]:
        """The partitions of a space held in process."""
        with self._mutex:
            return {k: p for k, p in self._parts.items() if k[0] == space}

    def drop_space(self, space: str) -> None:
        """Forget a space's partitions (rebuilt from Chroma on next use)."""
        with self._mutex:
            for key in [k for k in self._parts if k[0] == space]:
                del self._parts[key]
            self._state.pop(space, None)

    def committed(self, space: str, seq: int) -> None:
        """This writer's commit ``seq`` is applied to the partitions held."""
        with self._mutex:
            state = self._state.get(space)
            if state is not None:
                state.seen[self.feed.writer] = seq

    def forget_snapshots(self, keys: set[PartitionKey]) -> None:
        """Remove partitions' snapshots (they hold text) before their memories are deleted.

        Raises:
            StoreError: if one cannot be removed.
        """
        if self._snapdir is None:
            return
        for key in keys:
            snapshot.remove(self._snapdir, key)
            self._saved.pop(key, None)

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
            changed = self.cols.read("read changes", space, partial(_ids_where, where=changed_where(w, lo)))
            ids = set(changed["ids"]) if changed else set()
            if len(ids) <= _SMALL_DELTA:
                wanted |= ids
            else:
                wanted |= {i for i in ids if any(i in t for t in targets)}
                for key in keys:
                    extra = {"rg_route": key[1], "rg_bucket": key[2]}
                    got = self.cols.read(
                        "read changes", space, partial(_ids_where, where=changed_where(w, lo, extra))
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
            got = self.cols.read("read changes", space, partial(_full_by_ids, ids=chunk))
            if not got:
                continue
            for mid, doc, meta, vec in zip(
                got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
            ):
                present.add(mid)
                row = StoredRow.stored(mid, doc, meta)
                key = key_of(space, meta)
                for t in targets:
                    if t.key == key:
                        t.upsert([row], np.asarray([vec], dtype=np.float32))
                    elif mid in t:
                        t.remove([mid])
        gone = [i for i in ids if i not in present]
        for t in targets:
            t.remove(gone)

    # -- partitions -----------------------------------------------------------------------------

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
        self.enforce_budget({key})
        return part

    def _load(self, key: PartitionKey) -> tuple[Partition, dict[str, int]]:
        space = key[0]
        part = Partition(key, self.dimension, engine=self.bm25_engine)
        col = self.cols.collection(space, create=False)
        if col is None:
            return part, {}
        heads = self.feed.heads(space)
        done = {w: h.done for w, h in heads.items()}
        if self._snapdir is not None:
            snap = snapshot.load(
                self._snapdir,
                key,
                dimension=self.dimension,
                engine=self.bm25_engine,
                embedding=self.cols.embedder.name,
                collection_id=str(col.id),
            )
            if snap is not None and all(w in heads and heads[w].done >= s for w, s in snap.heads.items()):
                self._saved[key] = snap.partition.version
                self._catch_up(space, [snap.partition], snap.heads, heads)
                return snap.partition, done
        got = self.cols.read(
            "load partition",
            space,
            lambda c: c.get(
                where=partition_where(key[1] or None, key[2]),
                include=["embeddings", "documents", "metadatas"],
            ),
        )
        if got and got["ids"]:
            rows = [
                StoredRow.stored(i, d, m)
                for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
            ]
            part.load(rows, np.asarray(got["embeddings"], dtype=np.float32))
        if self._snapdir is not None and not self.read_only:
            snapshot.save(
                self._snapdir, part, heads=done, embedding=self.cols.embedder.name, collection_id=str(col.id)
            )
            self._saved[key] = part.version
        return part, done

    def _save_snapshot(self, key: PartitionKey, part: Partition) -> None:
        if self._snapdir is None or self.read_only or self._saved.get(key) == part.version:
            return
        col = self.cols.collection(key[0], create=False)
        with self._mutex:
            state = self._state.get(key[0])
            heads = dict(state.seen) if state is not None else None
        if col is None or heads is None:
            return
        snapshot.save(
            self._snapdir, part, heads=heads, embedding=self.cols.embedder.name, collection_id=str(col.id)
        )
        self._saved[key] = part.version

    def enforce_budget(self, protect: set[PartitionKey]) -> None:
        """Evict least recently used partitions (not those in ``protect``) until under the budget."""
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
