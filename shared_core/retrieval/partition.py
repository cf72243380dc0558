"""The in-process view of one scope partition: records, vectors and an incremental BM25 index.

Derived from Chroma (the source of truth) and rebuildable from it at any time (H2). A partition is
``(memory space, route, owner bucket)``; a write to one partition never touches another.

**Incremental** (issue 14): a write, a correction or a forget changes the partition in place, in
time proportional to the memories it touches: vectors live in a row buffer with spare capacity;
BM25 postings (term -> rows, term frequencies), document lengths and frequencies are updated per
memory, IDF and length norms computed at query time; records are kept as stored (document + flat
metadata) and decoded only when a query or the write gate needs one.

**Snapshots.** Queries read an immutable :class:`PartitionView` without locks. A view shares the
partition's buffers: appends write past the rows a view sees, and an in-place change (a row
replaced or moved) first copies a buffer a view was handed (copy-on-write).

**Exactly rank-bm25's scores.** :class:`~.postings.PostingsBM25` reproduces ``LuceneBM25Okapi`` of
:mod:`.bm25` (``K1``, ``B``, ``lucene_idf`` from there) term by term with the same floating-point
expression, bit for bit (tested against ``BM25Partition`` under random writes and deletes). It
lives here because ``BM25Partition`` has no incremental API yet; the ``bm25s`` engine keeps the
rebuild-on-change path.

Why an in-process view and not Chroma's HNSW for every query: a scope usually holds hundreds to
thousands of memories, where an exact dot product is both faster and exact, and BM25 needs the
postings in memory anyway (``vector_search="chroma"`` asks Chroma for the vector ranking instead).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..model import MemoryRecord, encode_record, record_from_metadata
from ..text import tokenize
from .bm25 import BM25Engine, BM25Partition
from .nearest import nearest
from .postings import EMPTY_TOKEN, Postings, PostingsBM25, Room, append_postings

__all__ = [
    "Partition",
    "PartitionKey",
    "PartitionView",
    "PostingsBM25",
    "StoredRow",
    "record_text",
]

PartitionKey = tuple[str, str, str]
"""(memory_space_id, route or "", bucket)."""



def record_text(record: MemoryRecord) -> str:
    """The text that is embedded and indexed for a record: title and body."""
    return f"{record.title}\n{record.body}" if record.title else record.body


class StoredRow:
    """One memory as stored: a decoded record, or the document and flat metadata to decode lazily.

    Args:
        record: the record, if already decoded.
        mid: its id (with ``document`` and ``meta``, when not decoded).
        document: the stored document (the body).
        meta: the stored flat metadata (:mod:`shared_core.model.codec`).
    """

    __slots__ = ("_doc", "_meta", "_record", "_sets", "_size", "mid")

    def __init__(
        self,
        record: MemoryRecord | None = None,
        *,
        mid: str | None = None,
        document: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self._record = record
        self.mid: str = record.id if record is not None else str(mid)
        self._doc = document
        self._meta = meta
        self._sets: frozenset[str] | None = None
        self._size = -1

    @classmethod
    def stored(cls, mid: str, document: str | None, meta: Mapping[str, Any]) -> StoredRow:
        """A row from Chroma's (or a snapshot's) id, document and metadata."""
        return cls(mid=mid, document=document or "", meta=meta)

    @property
    def record(self) -> MemoryRecord:
        """The decoded record (validated once, then kept)."""
        if self._record is None:
            self._record = record_from_metadata(self.mid, self._doc, self._meta or {})
        return self._record

    def field(self, name: str) -> Any:
        """A record field without decoding the record (raw stored value when not decoded)."""
        if self._record is not None:
            value = getattr(self._record, name)
            return getattr(value, "value", value)
        if name == "body":
            return self._doc or ""
        if name == "supersedes":
            raw = (self._meta or {}).get("supersedes")
            if not isinstance(raw, str) or raw == "[]" or not raw.startswith("["):
                return ()
            return tuple(json.loads(raw))
        return (self._meta or {}).get(name)

    def time(self, name: str) -> float:
        """Epoch seconds of a time field (``created_at`` / ``updated_at``), 0.0 when unset."""
        if self._record is not None:
            value = getattr(self._record, name)
            return float(value.timestamp()) if value is not None else 0.0
        raw = (self._meta or {}).get(f"{name}_ts")
        return float(raw) if isinstance(raw, (int, float)) else 0.0

    def text(self) -> str:
        """Title and body, as :func:`record_text` gives them."""
        if self._record is not None:
            return record_text(self._record)
        title = (self._meta or {}).get("title") or ""
        return f"{title}\n{self._doc or ''}" if title else (self._doc or "")

    def tokens(self) -> list[str]:
        """The BM25 tokens of the row's text."""
        return tokenize(self.text())

    def token_set(self) -> frozenset[str]:
        """The distinct tokens (kept once computed: only hits ask for it)."""
        if self._sets is None:
            self._sets = frozenset(self.tokens())
        return self._sets

    def keep_token_set(self, tokens: list[str]) -> None:
        """Keep the distinct tokens already computed (a bulk load tokenises every row anyway)."""
        if self._sets is None:
            self._sets = frozenset(tokens)

    def encoded(self) -> tuple[str, dict[str, Any]]:
        """The document and flat metadata to store (the codec's, or as loaded)."""
        if self._meta is not None:
            return self._doc or "", dict(self._meta)
        return encode_record(self.record)

    def owner(self) -> tuple[Any, ...]:
        """``(space, user, agent, route)`` of the memory."""
        return tuple(self.field(f) for f in ("memory_space_id", "user_id", "agent_id", "route_id"))

    def nbytes(self) -> int:
        """A rough, stable size in process memory (text, metadata, room for the decoded record)."""
        if self._size < 0:
            if self._record is not None:
                self._size = 1800 + 2 * (len(self._record.body) + len(self._record.title))
            else:
                self._size = 1800 + 2 * len(self._doc or "") + 120 * len(self._meta or ())
        return self._size


class _RecordSeq(Sequence[MemoryRecord]):
    """The records of a view, decoded on access; supersede links derived from successors (L1).

    A memory that another memory of the same partition and owner lists in ``supersedes`` is
    superseded even if its own ``superseded_by`` was lost to a race between two writers (Chroma
    has no multi-record transactions): the link only ever lowers a memory, never raises one.
    """

    def __init__(self, rows: list[StoredRow], succ: Mapping[str, str], pos: Mapping[str, int]) -> None:
        self._rows = rows
        self._succ = succ
        self._pos = pos

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        row = self._rows[i]
        rec = row.record
        if rec.superseded_by is None and self._succ:
            nxt = self._succ.get(rec.id)
            j = self._pos.get(nxt) if nxt is not None else None
            if j is not None and self._rows[j].owner() == row.owner():
                return rec.model_copy(update={"superseded_by": nxt})
        return rec

    def __iter__(self) -> Iterator[MemoryRecord]:
        for i in range(len(self._rows)):
            yield self[i]


@dataclass(frozen=True)
class PartitionView:
    """An immutable snapshot of a partition that queries read without locks."""

    ids: Sequence[str]
    records: Sequence[MemoryRecord]
    matrix: NDArray[np.float32]
    bm25: Any  # PostingsBM25, or BM25Partition for the bm25s engine (same interface)
    version: int
    pos: Mapping[str, int] = field(default_factory=dict)

    def similarities(self, vector: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine of every memory with a unit ``vector`` (rows are unit vectors).

        ``einsum`` rather than ``matrix @ vector``: the BLAS matrix-vector product starts
        OpenBLAS threads, which on a small, busy machine cost ~20x more than the product itself
        (measured 8 ms vs 0.4 ms for 5k x 384, benchmarks/README.md).
        """
        sims: NDArray[np.float32] = np.einsum("ij,j->i", self.matrix, vector)
        return sims

    @property
    def doc_sets(self) -> Sequence[frozenset[str]]:
        """Token set of each memory (for the bounded lexical score)."""
        sets: Sequence[frozenset[str]] = self.bm25.doc_sets
        return sets

    @property
    def df(self) -> Mapping[str, int]:
        """Document frequency per term in this partition."""
        df: Mapping[str, int] = self.bm25.df
        return df


class Partition:
    """Mutable state of one partition, changed in place; thread-safe (see module docstring).

    Args:
        key: the partition.
        dimension: the embedding's dimension.
        engine: ``"rank_bm25"`` (incremental postings) or ``"bm25s"`` (rebuilt after a change).
    """

    def __init__(self, key: PartitionKey, dimension: int, *, engine: BM25Engine) -> None:
        self.key = key
        self.dimension = dimension
        self.engine: BM25Engine = engine
        self._ids: list[str] = []
        self._rows: list[StoredRow] = []
        self._pos: dict[str, int] = {}
        self._buf = np.zeros((0, dimension), dtype=np.float32)
        self._dl = np.zeros(0, dtype=np.float64)
        self._total = 0
        self._post: Postings = {}
        self._pending: dict[str, tuple[list[int], list[float]]] = {}  # indexed, not yet in _post
        # term -> buffers with room to grow whose first entries are ``_post[term]`` (see _flush_postings)
        self._room: Room = {}
        self._succ: dict[str, str] = {}
        self._attr: dict[tuple[Any, Any], set[str]] = {}  # (entity, attribute) -> ids (L1 supersede)
        self._rbytes = 0
        self._published = False  # a view shares the buffers: copy before an in-place change
        self._post_published = False
        self._version = 0
        self._view: PartitionView | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, mid: object) -> bool:
        return mid in self._pos

    @property
    def version(self) -> int:
        """Incremented by every change."""
        return self._version

    def ids(self) -> set[str]:
        """Ids currently in the partition."""
        with self._lock:
            return set(self._ids)

    def get(self, mid: str) -> tuple[MemoryRecord, NDArray[np.float32]] | None:
        """A memory and its vector, if present."""
        with self._lock:
            i = self._pos.get(mid)
            return None if i is None else (self._rows[i].record, self._buf[i].copy())

    def with_attribute(
        self, entity: str, attribute: str, predicate: Callable[[StoredRow], bool] = lambda _row: True
    ) -> list[MemoryRecord]:
        """Records with this ``entity`` and ``attribute`` that a predicate on stored fields accepts.

        Looked up in an index kept with the rows, not by a pass over the partition (L1 supersede
        asks for every structured memory written: that pass was linear in the partition).
        """
        with self._lock:
            rows = [self._rows[self._pos[m]] for m in sorted(self._attr.get((entity, attribute), ()))]
        return [r.record for r in rows if predicate(r)]

    def newest(self) -> MemoryRecord | None:
        """The memory with the latest creation time (``created_at``, else ``updated_at``; then id)."""
        with self._lock:
            rows = list(self._rows)
        best = max(rows, key=lambda r: (r.time("created_at") or r.time("updated_at"), r.mid), default=None)
        return best.record if best is not None else None

    def nbytes(self) -> int:
        """A rough size of the partition in process memory (vectors, postings, rows), kept up to date."""
        with self._lock:
            post = 32 * self._total + 150 * len(self._post)  # 16 bytes a row, and room for as many
            return int(self._buf.nbytes + self._dl.nbytes + post + self._rbytes + 100 * len(self._ids))

    # -- bulk load and snapshots ----------------------------------------------------------------

    def load(self, rows: Sequence[StoredRow], vectors: NDArray[np.float32]) -> None:
        """Fill an empty partition in one pass (postings built in bulk, not row by row)."""
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(rows), self.dimension)
        rows_t: dict[str, list[int]] = {}
        tfs_t: dict[str, list[float]] = {}
        dl = np.zeros(max(16, len(rows)), dtype=np.float64)
        total = 0
        for i, row in enumerate(rows):
            raw = row.tokens()
            row.keep_token_set(raw)
            toks = raw or [EMPTY_TOKEN]
            dl[i] = float(len(toks))
            total += len(toks)
            if self.engine == "rank_bm25":
                for term, tf in Counter(toks).items():
                    rows_t.setdefault(term, []).append(i)
                    tfs_t.setdefault(term, []).append(float(tf))
        postings = {
            t: (np.asarray(rows_t[t], dtype=np.int64), np.asarray(tfs_t[t], dtype=np.float64)) for t in rows_t
        }
        self.restore(rows, vecs, dl[: len(rows)], total, postings)

    def restore(
        self,
        rows: Sequence[StoredRow],
        vectors: NDArray[np.float32],
        doc_len: NDArray[np.float64],
        total: int,
        postings: Postings,
    ) -> None:
        """Fill an empty partition from its parts (a snapshot, or :meth:`load`)."""
        with self._lock:
            if self._ids:
                raise ValueError("restore() needs an empty partition")
            n = len(rows)
            cap = max(16, n + n // 8)
            self._buf = np.zeros((cap, self.dimension), dtype=np.float32)
            self._buf[:n] = vectors
            self._dl = np.zeros(cap, dtype=np.float64)
            self._dl[:n] = doc_len
            self._total = total
            self._post = postings
            self._room = {}
            self._rows = list(rows)
            self._rbytes = sum(r.nbytes() for r in self._rows)
            self._ids = [r.mid for r in self._rows]
            self._pos = {m: i for i, m in enumerate(self._ids)}
            if len(self._pos) != n:
                raise ValueError("duplicate ids in a partition")
            for row in self._rows:
                self._link(row)
            self._changed()

    def export(
        self,
    ) -> tuple[list[str], NDArray[np.float32], list[StoredRow], NDArray[np.float64], int, Postings]:
        """Ids, vectors, rows, document lengths, total length and postings (copies; for snapshots)."""
        with self._lock:
            n = len(self._ids)
            return (
                list(self._ids),
                self._buf[:n].copy(),
                list(self._rows),
                self._dl[:n].copy(),
                self._total,
                dict(self._post),
            )

    # -- changes --------------------------------------------------------------------------------

    def upsert(self, records: Sequence[MemoryRecord | StoredRow], vectors: NDArray[np.float32]) -> None:
        """Add or replace memories (vectors L2-normalised, aligned with ``records``)."""
        rows = [r if isinstance(r, StoredRow) else StoredRow(r) for r in records]
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(rows), self.dimension)
        with self._lock:
            self._reserve(len(self._ids) + len(rows))
            for row, vec in zip(rows, vecs, strict=True):
                i = self._pos.get(row.mid)
                if i is not None:
                    old = self._rows[i]
                    same_text = old.text() == row.text()
                    if not np.array_equal(self._buf[i], vec):
                        self._own_buffers()
                        self._buf[i] = vec
                    if not same_text:
                        self._unindex(i, old.tokens())
                        self._index(i, row.tokens())
                    self._unlink(old)
                    self._rbytes += row.nbytes() - old.nbytes()
                    self._rows[i] = row
                else:
                    i = len(self._ids)
                    self._ids.append(row.mid)
                    self._rows.append(row)
                    self._rbytes += row.nbytes()
                    self._pos[row.mid] = i
                    self._buf[i] = vec
                    self._dl[i] = 0.0
                    self._index(i, row.tokens())
                self._link(row)
            self._flush_postings()
            self._changed()

    def remove(self, ids: Iterable[str]) -> int:
        """Remove memories by id; returns how many were present."""
        n = 0
        with self._lock:
            for mid in ids:
                i = self._pos.get(mid)
                if i is None:
                    continue
                n += 1
                self._own_buffers()
                row = self._rows[i]
                self._rbytes -= row.nbytes()
                self._unindex(i, row.tokens())
                self._unlink(row)
                last = len(self._ids) - 1
                if i != last:  # move the last row into the hole
                    moved = self._rows[last]
                    self._buf[i] = self._buf[last]
                    self._renumber(last, i, moved.tokens())
                    self._dl[i] = self._dl[last]
                    self._ids[i], self._rows[i] = moved.mid, moved
                    self._pos[moved.mid] = i
                self._ids.pop()
                self._rows.pop()
                del self._pos[mid]
            if n:
                self._changed()
        return n

    def view(self) -> PartitionView:
        """The current snapshot (a new one only after a change)."""
        with self._lock:
            if self._view is None:
                n = len(self._ids)
                ids = tuple(self._ids)
                rows = list(self._rows)
                pos = dict(self._pos)
                matrix = self._buf[:n]
                if self.engine == "rank_bm25":
                    bm25: Any = PostingsBM25(ids, rows, self._post, self._dl[:n], self._total)
                    self._post_published = True
                else:
                    bm25 = BM25Partition(ids, [r.tokens() for r in rows], engine=self.engine)
                self._published = True
                self._view = PartitionView(
                    ids=ids,
                    records=_RecordSeq(rows, dict(self._succ), pos),
                    matrix=matrix,
                    bm25=bm25,
                    version=self._version,
                    pos=pos,
                )
            return self._view

    def neighbours(
        self, vectors: NDArray[np.float32], *, thresholds: Sequence[float], limit: int
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """For each unit vector, the memories with cosine >= its threshold, best first (W2).

        At most ``limit`` each (at least one), ties in partition order. No view is built: a view
        per write cost a copy of the partition's ids, positions and postings map (linear in its
        size). The vectors are compared outside the lock, as a view's would be (the buffer is
        marked shared, so a rewrite copies it first); if the partition changed meanwhile (a sync
        from another process), they are compared again under the lock (:func:`.nearest.nearest`).
        """
        vecs = np.asarray(vectors, dtype=np.float32).reshape(-1, self.dimension)
        with self._lock:
            if not self._ids or not len(vecs):
                return [[] for _ in vecs]
            matrix, version = self._buf[: len(self._ids)], self._version
            self._published = True
        sims, orders = nearest(matrix, vecs, thresholds, limit)
        with self._lock:
            if self._version != version:
                sims, orders = nearest(self._buf[: len(self._ids)], vecs, thresholds, limit)
            records = _RecordSeq(self._rows, self._succ, self._pos)
            return [[(records[i], float(row[i])) for i in order] for row, order in zip(sims, orders, strict=True)]

    # -- internals (called with the lock held) --------------------------------------------------

    def _changed(self) -> None:
        self._version += 1
        self._view = None

    def _reserve(self, n: int) -> None:
        cap = self._buf.shape[0]
        if n <= cap:
            return
        new_cap = max(n, 16, cap * 2)
        buf = np.zeros((new_cap, self.dimension), dtype=np.float32)
        buf[: len(self._ids)] = self._buf[: len(self._ids)]
        dl = np.zeros(new_cap, dtype=np.float64)
        dl[: len(self._ids)] = self._dl[: len(self._ids)]
        self._buf, self._dl = buf, dl
        self._published = False  # views keep the old buffers

    def _own_buffers(self) -> None:
        if self._published:
            self._buf = self._buf.copy()
            self._dl = self._dl.copy()
            self._published = False

    def _own_postings(self) -> None:
        if self._post_published:
            self._post = dict(self._post)
            self._post_published = False

    def _index(self, i: int, tokens: list[str]) -> None:
        toks = tokens or [EMPTY_TOKEN]
        if self._published and self._dl[i] != 0.0:
            self._own_buffers()
        self._dl[i] = float(len(toks))
        self._total += len(toks)
        if self.engine != "rank_bm25":
            return
        for term, tf in Counter(toks).items():
            rows, tfs = self._pending.setdefault(term, ([], []))
            rows.append(i)
            tfs.append(float(tf))

    def _flush_postings(self) -> None:
        """Append the rows indexed since the last flush (:func:`.postings.append_postings`)."""
        if not self._pending:
            return
        self._own_postings()
        append_postings(self._post, self._room, self._pending)
        self._pending = {}

    def _unindex(self, i: int, tokens: list[str]) -> None:
        toks = tokens or [EMPTY_TOKEN]
        self._total -= len(toks)
        if self.engine != "rank_bm25":
            return
        self._flush_postings()
        self._own_postings()
        for term in set(toks):
            got = self._post.get(term)
            if got is None:
                continue
            keep = got[0] != i
            if keep.all():
                continue
            self._room.pop(term, None)  # the new arrays are not the start of those buffers
            if not keep.any():
                del self._post[term]
            else:
                self._post[term] = (got[0][keep], got[1][keep])

    def _renumber(self, old: int, new: int, tokens: list[str]) -> None:
        if self.engine != "rank_bm25":
            return
        self._flush_postings()
        self._own_postings()
        for term in set(tokens or [EMPTY_TOKEN]):
            got = self._post.get(term)
            if got is None:
                continue
            rows = got[0].copy()
            rows[rows == old] = new
            self._room.pop(term, None)
            self._post[term] = (rows, got[1])

    def _link(self, row: StoredRow) -> None:
        for old in row.field("supersedes") or ():
            self._succ[str(old)] = row.mid
        entity, attribute = row.field("entity"), row.field("attribute")
        if entity and attribute:
            self._attr.setdefault((entity, attribute), set()).add(row.mid)

    def _unlink(self, row: StoredRow) -> None:
        for old in row.field("supersedes") or ():
            if self._succ.get(str(old)) == row.mid:
                del self._succ[str(old)]
        key = (row.field("entity"), row.field("attribute"))
        ids = self._attr.get(key)
        if ids is not None:
            ids.discard(row.mid)
            if not ids:
                del self._attr[key]
