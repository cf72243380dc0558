"""``WriteTarget``: what the write gate needs from the place memories live (W1, W2, L1, L2).

The write gate decides; a target holds the memories. :class:`~shared_core.store.MemoryStore`'s
Chroma backend is one target; each adapter's write filter wraps the user's own vector store in
another, so a foreign store gets the same dedup, supersede, quarantine, tombstones and lineage as
the built-in one (one write path, P1). A target never decides anything: it looks up, embeds and
applies what the gate decided, both indexes or neither.

Partitions: a memory lives in ``(memory_space_id, route or "", bucket)``, the bucket being
``"shared"`` or its owner (:func:`shared_core.model.bucket_of`). Dedup, supersede and the
split-injection check only ever look inside the candidate's own partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from ..model import MemoryRecord, bucket_of

__all__ = ["PartitionKey", "WriteTarget", "owner_of", "partition_key"]

PartitionKey = tuple[str, str, str]
"""``(memory_space_id, route or "", bucket)``."""


def partition_key(record: MemoryRecord) -> PartitionKey:
    """The partition a record lives in."""
    return (
        record.memory_space_id,
        record.route_id or "",
        bucket_of(record.user_id, record.agent_id, record.visibility),
    )


def owner_of(record: MemoryRecord) -> tuple[str, str, str, str | None]:
    """Who wrote a memory: ``(memory_space_id, user_id, agent_id, route_id)``; shared ones too."""
    return (record.memory_space_id, record.user_id, record.agent_id, record.route_id)


@runtime_checkable
class WriteTarget(Protocol):
    """The place memories live, as the write gate sees it (implemented by stores, not by users)."""

    def embed_records(self, records: Sequence[MemoryRecord]) -> NDArray[np.float32]:
        """Unit embeddings of records' indexed text (title and body), one row per record."""
        ...

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Stored records by id, from any partition of the space (missing ids are left out)."""
        ...

    def vector_of(self, record: MemoryRecord) -> NDArray[np.float32]:
        """The stored vector of a record (recomputed if the target keeps none)."""
        ...

    def neighbours(
        self, record: MemoryRecord, vector: NDArray[np.float32], *, threshold: float, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        """Memories of the record's partition with cosine >= ``threshold``, best first."""
        ...

    def neighbours_many(
        self,
        records: Sequence[MemoryRecord],
        vectors: NDArray[np.float32],
        *,
        thresholds: Sequence[float],
        limit: int,
    ) -> list[list[tuple[MemoryRecord, float]]] | None:
        """:meth:`neighbours` of each record at once (``None``: ask per record).

        ``None`` when the target has no cheaper way than one search per record: the gate then asks
        for a record's neighbours only when it needs them.
        """
        ...

    def same_attribute(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active memories of the record's partition with its ``entity`` and ``attribute``."""
        ...

    def latest_body(self, key: PartitionKey) -> str | None:
        """Body of the partition's newest memory (by creation time), or ``None``."""
        ...

    def ids_of_source(self, source_record_id: str) -> list[tuple[str, str]]:
        """``(memory_space_id, id)`` of every memory derived from a source record (L2)."""
        ...

    def expired(self, now: datetime) -> list[tuple[str, str]]:
        """``(memory_space_id, id)`` of memories whose ``expires_at`` has passed (L3)."""
        ...

    def records_of_space(self, memory_space_id: str) -> list[MemoryRecord]:
        """Every memory of a space (batch reconciliation, W7)."""
        ...

    def commit(
        self,
        upserts: Sequence[MemoryRecord],
        vectors: NDArray[np.float32] | None,
        deletes: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Apply upserts (with their vectors) and ``(memory_space_id, id)`` deletes: all or none."""
        ...
