"""The in-process view of one scope partition: records, vectors, tokens and a BM25 index.

Derived from Chroma (the source of truth) and rebuildable from it at any time (H2). A partition is
``(memory space, route, owner bucket)``. Writes change a partition incrementally (the tokens of a
memory are computed once, when it is written); the immutable :class:`PartitionView` that queries
read (id list, vector matrix, BM25 index) is rebuilt lazily on the next query after a change, and a
write to one partition never touches another.

Why an in-process view and not Chroma's HNSW for every query: a scope usually holds hundreds to
thousands of memories, where an exact dot product over the partition's matrix is both faster and
exact, and BM25 needs the partition's tokens in memory anyway. Stores configured with
``vector_search="chroma"`` ask Chroma for the vector ranking instead (with the scope in ``where``).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..model import MemoryRecord
from ..text import tokenize
from .bm25 import BM25Engine, BM25Partition

__all__ = ["Partition", "PartitionKey", "PartitionView", "record_text"]

PartitionKey = tuple[str, str, str]
"""(memory_space_id, route or "", bucket)."""


def record_text(record: MemoryRecord) -> str:
    """The text that is embedded and indexed for a record: title and body."""
    return f"{record.title}\n{record.body}" if record.title else record.body


@dataclass(frozen=True)
class PartitionView:
    """An immutable snapshot of a partition that queries read without locks."""

    ids: tuple[str, ...]
    records: tuple[MemoryRecord, ...]
    matrix: NDArray[np.float32]
    bm25: BM25Partition
    version: int
    pos: dict[str, int] = field(default_factory=dict)

    def similarities(self, vector: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine of every memory with a unit ``vector`` (rows are unit vectors).

        ``einsum`` rather than ``matrix @ vector``: the BLAS matrix-vector product starts
        OpenBLAS threads, which on a small, busy machine cost ~20x more than the product itself
        (measured 8 ms vs 0.4 ms for 5k x 384, benchmarks/README.md).
        """
        sims: NDArray[np.float32] = np.einsum("ij,j->i", self.matrix, vector)
        return sims

    @property
    def doc_sets(self) -> list[frozenset[str]]:
        """Token set of each memory (for the bounded lexical score)."""
        return self.bm25.doc_sets

    @property
    def df(self) -> Counter[str]:
        """Document frequency per term in this partition."""
        return self.bm25.df


class Partition:
    """Mutable state of one partition; thread-safe."""

    def __init__(self, key: PartitionKey, dimension: int, *, engine: BM25Engine) -> None:
        self.key = key
        self.dimension = dimension
        self.engine: BM25Engine = engine
        self._records: dict[str, MemoryRecord] = {}
        self._vectors: dict[str, NDArray[np.float32]] = {}
        self._tokens: dict[str, list[str]] = {}
        self._version = 0
        self._view: PartitionView | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    def ids(self) -> set[str]:
        """Ids currently in the partition."""
        with self._lock:
            return set(self._records)

    def get(self, mid: str) -> tuple[MemoryRecord, NDArray[np.float32]] | None:
        """A memory and its vector, if present."""
        with self._lock:
            rec = self._records.get(mid)
            return None if rec is None else (rec, self._vectors[mid])

    def records(self) -> list[MemoryRecord]:
        """All memories of the partition."""
        with self._lock:
            return list(self._records.values())

    def upsert(self, records: Sequence[MemoryRecord], vectors: NDArray[np.float32]) -> None:
        """Add or replace memories (vectors must be L2-normalised, aligned with ``records``)."""
        with self._lock:
            for rec, vec in zip(records, vectors, strict=True):
                self._records[rec.id] = rec
                self._vectors[rec.id] = np.asarray(vec, dtype=np.float32)
                self._tokens[rec.id] = tokenize(record_text(rec))
            self._version += 1
            self._view = None

    def remove(self, ids: Iterable[str]) -> int:
        """Remove memories by id; returns how many were present."""
        with self._lock:
            n = 0
            for mid in ids:
                if self._records.pop(mid, None) is not None:
                    n += 1
                self._vectors.pop(mid, None)
                self._tokens.pop(mid, None)
            if n:
                self._version += 1
                self._view = None
            return n

    def view(self) -> PartitionView:
        """The current snapshot, rebuilt if the partition changed since the last one."""
        with self._lock:
            if self._view is None:
                ids = tuple(sorted(self._records))
                matrix = (
                    np.stack([self._vectors[i] for i in ids]).astype(np.float32, copy=False)
                    if ids
                    else np.zeros((0, self.dimension), dtype=np.float32)
                )
                bm25 = BM25Partition(ids, [self._tokens[i] for i in ids], engine=self.engine)
                self._view = PartitionView(
                    ids=ids,
                    records=tuple(self._records[i] for i in ids),
                    matrix=matrix,
                    bm25=bm25,
                    version=self._version,
                    pos={mid: i for i, mid in enumerate(ids)},
                )
            return self._view
