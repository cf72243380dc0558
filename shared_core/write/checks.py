"""Batch checks of the write gate before anything is written or held: tombstones and ownership (L2, R1).

Both run once per batch against the ledger or the target, so their cost does not grow with one
lookup per candidate.
"""

from __future__ import annotations

from .candidate import MemoryCandidate, WriteAction, WriteDecision, WriteReason, memory_id
from .ledger import Ledger
from .target import WriteTarget, owner_of

__all__ = ["check_ownership", "check_tombstones"]


def check_tombstones(ledger: Ledger, decided: list[WriteDecision]) -> list[WriteDecision]:
    """The tombstone rule of :mod:`.ledger` for a whole batch, in one ledger lookup (L2).

    A candidate naming a forgotten source, or with no source and a deleted id, is ``tombstoned``.
    The refused decision keeps its candidate: the store settles what an earlier attempt of the
    same write may have left (:func:`shared_core.store.safety.settle_late_writes`).
    """
    live = [
        d
        for d in decided
        if d.candidate is not None and d.action in (WriteAction.WRITE, WriteAction.QUARANTINE)
    ]
    if not live:
        return decided

    def own_id(c: MemoryCandidate) -> str:
        return c.id or memory_id(c.scope, c.title, c.body)

    sources = sorted(
        {d.candidate.source_record_id for d in live if d.candidate and d.candidate.source_record_id}
    )
    ids = sorted({own_id(d.candidate) for d in live if d.candidate and not d.candidate.source_record_id})
    found = ledger.tombstoned(sources=sources, memories=ids)
    if not found:
        return decided
    out = []
    for d in decided:
        c = d.candidate
        hit = (
            c is not None
            and d in live
            and (f"src:{c.source_record_id}" in found if c.source_record_id else f"mem:{own_id(c)}" in found)
        )
        if hit:
            d = d.model_copy(
                update={
                    "action": WriteAction.REJECT,
                    "reasons": (*d.reasons, WriteReason.TOMBSTONED),
                }
            )
        out.append(d)
    return out


def check_ownership(
    target: WriteTarget, decided: list[WriteDecision], *, known_links_only: bool = False
) -> list[WriteDecision]:
    """Refuse, before anything is written or held, a candidate naming another owner's memory.

    An explicit ``id`` or a ``supersedes`` link to a stored memory of another writer is
    ``not_owner`` (R1, W3): such a candidate is neither written nor put in quarantine, where
    an approval would later try to overwrite or retire someone else's memory. With
    ``known_links_only`` (agent-facing paths), a ``supersedes`` link to an id that does not
    exist gets the same answer, so the answer never tells whether someone else's id exists;
    an operator's import keeps forward links to records later in the file.
    """
    wanted: dict[str, set[str]] = {}
    for d in decided:
        c = d.candidate
        if c is not None and d.action in (WriteAction.WRITE, WriteAction.QUARANTINE):
            wanted.setdefault(c.memory_space_id, set()).update([*([c.id] if c.id else []), *c.supersedes])
    stored = {
        (space, r.id): r
        for space, ids in wanted.items()
        for r in target.get(sorted(ids), memory_space_id=space)
    }
    out = []
    for d in decided:
        c = d.candidate
        if c is None or d.action not in (WriteAction.WRITE, WriteAction.QUARANTINE):
            out.append(d)
            continue
        owner = (c.memory_space_id, c.user_id, c.agent_id, c.route_id)
        bad = [
            f"{name}: not the caller's memory"
            for name, ids in (("id", [c.id] if c.id else []), ("supersedes", list(c.supersedes)))
            if any(
                ((s := stored.get((c.memory_space_id, i))) is not None and owner_of(s) != owner)
                or (s is None and known_links_only and name == "supersedes")
                for i in ids
            )
        ]
        if bad:
            d = d.model_copy(
                update={
                    "action": WriteAction.REJECT,
                    "reasons": (*d.reasons, WriteReason.NOT_OWNER),
                    "detail": (*d.detail, *bad),
                    "candidate": None,
                }
            )
        out.append(d)
    return out
