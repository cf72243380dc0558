"""A value said again after it was corrected is current again (L1, W2).

"Use the small model" (A), corrected to "the large model" (B), then "the small model" once more:
the words give A's derived id, and a merge into A — superseded — would change nothing. The write
gate makes A current again instead: A supersedes the head of its correction chain, and every
version between them stops listing A in ``supersedes`` (the recall gate reads those lists, and a
version that still listed A would hide it).
"""

from __future__ import annotations

from datetime import datetime

from ..model import MemoryRecord
from .batch import Batch
from .target import WriteTarget

__all__ = ["revived"]

_MAX_CHAIN = 1000


def _version(target: WriteTarget, batch: Batch, mid: str, space: str) -> MemoryRecord | None:
    """The version of a memory a batch sees: its pending update, else the stored one."""
    found = batch.upserts.get(mid)
    if found is not None:
        return found
    got = target.get([mid], memory_space_id=space)
    return batch.upserts.get(got[0].id, got[0]) if got else None


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
    retired = head.model_copy(
        update={
            "superseded_by": old.id,
            "valid_to": min(head.valid_to, now) if head.valid_to is not None else now,
            "updated_at": now,
            "supersedes": tuple(x for x in head.supersedes if x != old.id),
        }
    )
    out = [current, retired]
    seen = {old.id, head.id}
    step = batch.upserts.get(old.id, old).superseded_by
    while step is not None and step not in seen and len(seen) < _MAX_CHAIN:
        seen.add(step)
        version = _version(target, batch, step, old.memory_space_id)
        if version is None:
            break
        if old.id in version.supersedes:
            out.append(version.model_copy(update={"supersedes": tuple(x for x in version.supersedes if x != old.id)}))
        step = version.superseded_by
    return out
