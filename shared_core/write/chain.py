"""Correction chains: a memory retired by its successor, and a value said again after it was corrected (L1, W2).

:func:`retire` is the one way a memory is superseded (the write gate's dedup, ``supersedes`` links
and same entity + attribute, and :func:`revived`). :func:`revived`: "Use the small model" (A),
corrected to "the large model" (B), then "the small model" once more: the words give A's derived
id, and a merge into A — superseded — would change nothing. A is made current again instead: it
supersedes the head of its chain, and every version between them stops listing A in
``supersedes`` (the recall gate reads those lists, and a version that still listed A would hide it).
"""

from __future__ import annotations

from datetime import datetime

from ..model import MemoryRecord
from .batch import Batch
from .target import WriteTarget

__all__ = ["MAX_CHAIN", "retire", "revived", "version"]

MAX_CHAIN = 1000
"""Longest correction chain followed (a longer one is treated as a cycle)."""


def version(target: WriteTarget, batch: Batch, mid: str, space: str) -> MemoryRecord | None:
    """The version of a memory a batch sees: its pending update, else the stored one (``None``: gone)."""
    found = batch.upserts.get(mid)
    if found is not None:
        return found
    got = target.get([mid], memory_space_id=space)
    return batch.upserts.get(got[0].id, got[0]) if got else None


def retire(record: MemoryRecord, successor: str, ended: datetime, now: datetime) -> MemoryRecord:
    """``record`` superseded by ``successor``: valid until ``ended`` at the latest, no longer listing it."""
    return record.model_copy(
        update={
            "superseded_by": successor,
            "valid_to": min(record.valid_to, ended) if record.valid_to is not None else ended,
            "updated_at": now,
            # a memory said again under an id this one had replaced: no loop of supersedes
            "supersedes": tuple(x for x in record.supersedes if x != successor),
        }
    )


def revived(
    target: WriteTarget, batch: Batch, old: MemoryRecord, head: MemoryRecord, now: datetime
) -> list[MemoryRecord]:
    """The records to upsert: ``old`` current again, ``head`` retired by it, the versions between without ``old``."""
    current = old.model_copy(
        update={
            "superseded_by": None,
            "valid_to": None,
            "updated_at": now,
            "supersedes": (*(x for x in old.supersedes if x != head.id), head.id),
        }
    )
    out = [current, retire(head, old.id, now, now)]
    seen = {old.id, head.id}
    step = batch.upserts.get(old.id, old).superseded_by
    while step is not None and step not in seen and len(seen) < MAX_CHAIN:
        seen.add(step)
        between = version(target, batch, step, old.memory_space_id)
        if between is None:
            break
        if old.id in between.supersedes:
            out.append(between.model_copy(update={"supersedes": tuple(x for x in between.supersedes if x != old.id)}))
        step = between.superseded_by
    return out
