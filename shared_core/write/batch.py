"""What one commit of the write gate writes, and what it has seen earlier in the batch (W2, L1).

:class:`Batch` holds the records and vectors a commit will write, the new memories of each
partition (dedup compares every record with the committed neighbours and with these), and the
lineage links to record after the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..model import MemoryRecord
from .target import PartitionKey, partition_key

__all__ = ["Batch"]


@dataclass
class Batch:
    """What one commit writes: records and vectors by id, plus what was seen earlier in the batch."""

    upserts: dict[str, MemoryRecord] = field(default_factory=dict)
    vectors: dict[str, NDArray[np.float32]] = field(default_factory=dict)
    by_text: dict[str, str] = field(default_factory=dict)  # normalised-text id -> id written
    by_attr: dict[tuple[str, ...], MemoryRecord] = field(default_factory=dict)
    links: list[tuple[str, str, str]] = field(default_factory=list)  # (source, space, id)
    repeats_are_evidence: bool = True  # a repeat without a new source counts (operator paths)

    fresh: dict[PartitionKey, list[str]] = field(default_factory=dict)  # new memories per partition
    # the vectors of ``fresh``, one row per entry, in a buffer that doubles (appending is O(1), so
    # a batch of n costs O(n) copies, not the O(n^2) of stacking the rows again for every record)
    _rows: dict[PartitionKey, NDArray[np.float32]] = field(default_factory=dict)

    def set_vector(self, mid: str, vector: NDArray[np.float32], key: PartitionKey) -> None:
        """A memory of this batch rewritten: its vector, in partition ``key`` (its rows in :attr:`fresh` follow).

        A new memory rewritten into another partition (private -> shared) moves there: dedup in its
        old partition no longer sees it, as when the two writes come in two batches.
        """
        self.vectors[mid] = vector
        moved = False
        for k in list(self.fresh):
            ids = self.fresh[k]
            if mid not in ids:
                continue
            if k == key:
                for i, other in enumerate(ids):
                    if other == mid:
                        self._rows[k][i] = vector
                continue
            keep = [i for i, other in enumerate(ids) if other != mid]
            self._rows[k] = self._rows[k][keep]
            self.fresh[k] = [ids[i] for i in keep]
            moved = True
        if moved:
            self.add_fresh(key, mid, vector)

    def add_fresh(self, key: PartitionKey, mid: str, vector: NDArray[np.float32]) -> None:
        """A new memory of this batch, in partition ``key``, written with ``vector``."""
        self.vectors[mid] = vector
        ids = self.fresh.setdefault(key, [])
        rows = self._rows.get(key)
        if rows is None or len(ids) == len(rows):
            grown = np.empty((max(8, 2 * len(ids)), len(vector)), dtype=np.float32)
            if rows is not None:
                grown[: len(ids)] = rows
            rows = self._rows[key] = grown
        rows[len(ids)] = vector
        ids.append(mid)

    def near(
        self, record: MemoryRecord, vector: NDArray[np.float32], *, threshold: float, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        """Memories written earlier in this batch, in the record's partition, with cosine >= ``threshold``.

        The store's neighbours are the committed ones; without these, two near-duplicates in one
        batch would both be written while the same two in two batches merge (dedup would depend
        on batch boundaries).
        """
        key = partition_key(record)
        ids = self.fresh.get(key, [])
        if not ids:
            return []
        sims = self._rows[key][: len(ids)] @ vector
        order = np.argsort(-sims)[:limit]
        return [(self.upserts[ids[i]], float(sims[i])) for i in order if sims[i] >= threshold]

    def counts_as_evidence(self, new: MemoryRecord, old: MemoryRecord) -> bool:
        """Whether ``new`` repeating ``old`` is more evidence: another source, or a trusted path's repeat."""
        if new.source_record_id and new.source_record_id != old.source_record_id:
            return True
        return self.repeats_are_evidence and new.source_record_id is None
