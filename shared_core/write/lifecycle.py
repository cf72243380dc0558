"""Lifecycle through the write gate: forget, delete, correct, history, expiry, reconcile (L1-L3, W7).

The same for every target (the memory store and any vector store an adapter wraps): each function
takes a :class:`~.gate.WriteGate` and works through its target and ledger, under its lock, so no
write can revive what a forget deletes.

**Forget is resumable** (L2). ``forget(S)``: (1) a journal entry with the ids to delete, (2)
tombstones for ``S`` and those ids, (3) the deletes in the target, (4) the held candidates of
``S`` discarded, (5) the journal entry ends, (6) a ``delete`` audit record with counts. A process
killed at any step leaves the journal entry or the tombstones: :func:`resume` (called when a store
opens) finishes every forget begun and not ended, so a forgotten source is never recallable again
— the tombstone blocks re-ingest from step 2, and step 3 is repeated until it is done.

**Ownership.** ``delete`` and ``correct`` by id touch only memories the caller's scope owns (its
private memories, and the shared ones it wrote); any other id is refused as ``not_owner`` without
revealing whether it exists. An operator path (no scope) may delete any id of a space.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..audit import deletion_record, emit
from ..errors import InputError
from ..model import MemoryRecord, Scope, Tier, check_key, coerce_scope
from .authority import WritePath
from .candidate import WriteDecision
from .gate import WriteGate
from .ledger import resolve_aliases
from .review import purge_quarantine
from .target import owner_of, partition_key

__all__ = [
    "correct",
    "delete",
    "forget",
    "history",
    "purge_expired",
    "reconcile",
    "resume",
]

_JOURNAL_FORGET = "forget:"


def _owns(scope: Scope, record: MemoryRecord) -> bool:
    return owner_of(record) == (scope.memory_space_id, scope.user_id, scope.agent_id, scope.route_id)


def forget(gate: WriteGate, source_record_id: str) -> dict[str, Any]:
    """Delete everything derived from a source record, tombstone it, audit the counts (L2).

    Derived: the memories the source wrote and those its duplicates were merged into. The lineage
    links to what is deleted go with it, so the same words written again later by a live source
    are a new memory of that source alone.

    Returns:
        ``{"source_record_id", "memories", "quarantined", "ids"}`` (counts and ids, no text).

    Raises:
        StoreError: if the target or ledger fails (the forget is then finished by :func:`resume`
            or by calling ``forget`` again; the tombstone already blocks re-ingest).
    """
    gate.check_writable()
    try:
        check_key(source_record_id, "source_record_id")
    except ValueError as exc:
        raise InputError(str(exc)) from None
    with gate.lock:
        try:
            return _forget(gate, source_record_id)
        except Exception as exc:
            failed = deletion_record(
                at=gate.now().isoformat(), source_record_id=source_record_id, ids=[], counts={}
            )
            extra = {**failed.extra, "tombstoned": None, "error": type(exc).__name__}
            emit(failed.model_copy(update={"extra": extra}), gate.sinks)
            raise


def _forget(
    gate: WriteGate,
    source_record_id: str,
    *,
    planned: Sequence[tuple[str, str]] = (),
    reopen: Sequence[Sequence[str | None]] = (),
) -> dict[str, Any]:
    now = gate.now()
    found = {*gate.target.ids_of_source(source_record_id), *gate.ledger.linked(source_record_id)}
    deletes = sorted(found | {(s, m) for s, m in planned})
    plan = [*(list(x) for x in reopen), *_reopening(gate, deletes)]
    key = _JOURNAL_FORGET + source_record_id
    gate.ledger.journal_begin(
        key, {"source_record_id": source_record_id, "ids": [list(x) for x in deletes], "reopen": plan}
    )
    gate.ledger.tombstone(
        sources=[source_record_id], memories=[m for _, m in deletes], at=now, counts=len(deletes)
    )
    if deletes:
        _commit_deletes(gate, deletes, plan, now)
        gate.ledger.unlink_memories(deletes)  # after the commit: a crash here leaves links, not memories
    held = gate.ledger.held_of_source(source_record_id)
    if held:
        gate.ledger.release(held)
    gate.ledger.journal_end(key)
    ids = sorted(m for _, m in deletes)
    emit(
        deletion_record(
            at=now.isoformat(),
            source_record_id=source_record_id,
            ids=ids,
            counts={"memories": len(deletes), "quarantined": len(held)},
        ),
        gate.sinks,
    )
    return {
        "source_record_id": source_record_id,
        "memories": len(deletes),
        "quarantined": len(held),
        "ids": ids,
    }


def _reopening(gate: WriteGate, deletes: Sequence[tuple[str, str]]) -> list[list[str | None]]:
    """What the memories about to be deleted superseded, to make current again (L1, L2).

    A correction deleted (its source forgotten, or by id) takes its supersede with it: the memory
    it replaced is current again, as if the correction had never been written, unless the
    correction was itself superseded by a memory that stays (the chain then skips it). Returns
    ``[space, id, deleted successor, successor that stays or None, start of the deleted one]``
    per replaced memory (ids and times only: the plan is journaled so a resumed forget applies it).
    """
    gone = set(deletes)
    by_space: dict[str, list[str]] = defaultdict(list)
    for space, mid in deletes:
        by_space[space].append(mid)
    plan: list[list[str | None]] = []
    for space, mids in by_space.items():
        dead = {r.id: r for r in gate.target.get(mids, memory_space_id=space)}
        for d in dead.values():
            successor, seen = d.superseded_by, {d.id}
            while successor in dead and successor not in seen:  # skip successors deleted too
                seen.add(successor)
                successor = dead[successor].superseded_by
            if successor is not None and (space, successor) in gone:
                successor = None
            start = min(t for t in (d.valid_from, d.created_at, d.updated_at) if t is not None)
            plan.extend(
                [space, old, d.id, successor, start.isoformat()] for old in d.supersedes if (space, old) not in gone
            )
    return plan


def _commit_deletes(
    gate: WriteGate, deletes: Sequence[tuple[str, str]], plan: Sequence[Sequence[str | None]], now: datetime
) -> None:
    """Delete memories and, in the same commit, make current again what they had superseded."""
    reopened: dict[tuple[str, str], MemoryRecord] = {}
    for space, old_id, dead, successor, start in plan:
        if space is None or old_id is None or start is None or (space, old_id) in reopened:
            continue  # a resumed forget plans what its journal planned once more
        got = gate.target.get([old_id], memory_space_id=space)
        if not got or got[0].superseded_by != dead:
            continue  # gone, or superseded by something else since
        old = got[0]
        update: dict[str, Any] = {"superseded_by": successor, "updated_at": now}
        if successor is None and old.valid_to is not None and old.valid_to >= datetime.fromisoformat(start):
            update["valid_to"] = None  # its validity ended when the deleted correction began
        reopened[(space, old_id)] = old.model_copy(update=update)
        if successor is not None:  # the successor that stays lists it, so a later delete of that one reopens it
            head = reopened.get((space, successor)) or next(iter(gate.target.get([successor], memory_space_id=space)), None)
            if head is not None and old_id not in head.supersedes:
                reopened[(space, successor)] = head.model_copy(update={"supersedes": (*head.supersedes, old_id)})
    records = list(reopened.values())
    vectors = np.stack([gate.target.vector_of(r) for r in records]) if records else None
    gate.target.commit(records, vectors, deletes)


def resume(gate: WriteGate) -> list[str]:
    """Finish every forget begun and not ended (after a crash); returns their source record ids."""
    if gate.read_only:
        return []
    done: list[str] = []
    with gate.lock:
        for key, payload in gate.ledger.journal_pending():
            if not key.startswith(_JOURNAL_FORGET):
                continue
            source = str(payload.get("source_record_id") or key[len(_JOURNAL_FORGET) :])
            planned = [(str(s), str(m)) for s, m in payload.get("ids", [])]
            _forget(gate, source, planned=planned, reopen=payload.get("reopen", []))
            done.append(source)
    return done


def delete(
    gate: WriteGate,
    ids: Sequence[str],
    *,
    memory_space_id: str,
    scope: Scope | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Delete memories by id, with tombstones so they cannot come back (L2).

    Args:
        gate: the write gate.
        ids: memory ids; an id the gate merged into another memory as a duplicate (the write was
            stored under that memory's id) deletes that memory, as ``forget`` does for a source.
        memory_space_id: their memory space.
        scope: the caller; only memories it owns are deleted (``None``: an operator, any id).

    Returns:
        ``{"deleted": [memory ids], "not_owner": [ids]}``; ``not_owner`` also lists ids that do not
        exist (the caller cannot tell the two apart).
    """
    gate.check_writable()
    caller = None if scope is None else coerce_scope(scope)
    if caller is not None and caller.memory_space_id != memory_space_id:
        return {"deleted": [], "not_owner": sorted(set(ids))}
    with gate.lock:
        wanted = list(dict.fromkeys(ids))
        found = {r.id: r for r in gate.target.get(wanted, memory_space_id=memory_space_id)}
        # an id the gate merged into another memory deletes that memory, as forget does a source
        merged = resolve_aliases(gate.ledger, [m for m in wanted if m not in found], memory_space_id)
        into = sorted({m for ms in merged.values() for m in ms} - set(found))
        if into:
            found.update({r.id: r for r in gate.target.get(into, memory_space_id=memory_space_id)})
        mine = sorted(m for m, r in found.items() if caller is None or _owns(caller, r))
        gone = set(mine)
        refused = sorted(
            m for m in set(ids) if m not in gone and not (m in merged and gone.issuperset(merged[m]))
        )
        now = gate.now()
        if mine:
            deletes = [(memory_space_id, m) for m in mine]
            plan = _reopening(gate, deletes)
            gate.ledger.tombstone(memories=mine, at=now, counts=len(mine))
            _commit_deletes(gate, deletes, plan, now)
            gate.ledger.unlink_memories(deletes)
        emit(
            deletion_record(
                at=now.isoformat(), source_record_id=None, ids=mine, counts={"memories": len(mine)}
            ),
            gate.sinks,
        )
    return {"deleted": mine, "not_owner": refused}


def correct(
    gate: WriteGate,
    memory_id: str,
    *,
    memory_space_id: str,
    body: str,
    title: str | None = None,
    scope: Scope | Mapping[str, Any] | None = None,
    **fields: Any,
) -> WriteDecision:
    """Correct a memory: a new memory supersedes it, through the write gate (L1).

    A memory that is already superseded is corrected at the current end of its chain (the
    decision says ``rebased``), so two corrections never fork the history.

    Raises:
        InputError: if the memory does not exist or the caller does not own it (one message).
    """
    caller = None if scope is None else coerce_scope(scope)
    got = gate.target.get([memory_id], memory_space_id=memory_space_id)
    if not got or (caller is not None and not _owns(caller, got[0])):
        raise InputError(f"no memory {memory_id!r} of this caller in space {memory_space_id!r}")
    old = got[0]
    cand = {
        "title": old.title if title is None else title,
        "body": body,
        "user_id": old.user_id,
        "agent_id": old.agent_id,
        "memory_space_id": old.memory_space_id,
        "route_id": old.route_id,
        "visibility": old.visibility.value,
        "status": old.status.value,
        "tier": old.tier.value,
        "origin": fields.pop("origin", "user_explicit"),
        "cited": fields.pop("cited", True),
        "tags": old.tags,
        "source_record_id": old.source_record_id,
        "entity": old.entity,
        "attribute": old.attribute,
        "supersedes": (memory_id,),
        **fields,
    }
    path = (
        WritePath.operator(name="correct")
        if caller is None
        else WritePath.operator(name="correct", scope=caller)
    )
    return gate.submit([cand], path=path)[0]


def history(gate: WriteGate, memory_id: str, *, memory_space_id: str) -> list[MemoryRecord]:
    """The correction chain through a memory, oldest first along the links (L1: history on request).

    Versions are ordered by their ``supersedes`` / ``superseded_by`` links (a version comes after
    the ones it supersedes), times breaking ties; at most 1,000 versions are followed.
    """
    seen: dict[str, MemoryRecord] = {}
    frontier = [memory_id]
    while frontier and len(seen) < 1000:
        mid = frontier.pop()
        if mid in seen:
            continue
        got = gate.target.get([mid], memory_space_id=memory_space_id)
        if not got:
            continue
        rec = got[0]
        seen[mid] = rec
        frontier.extend(rec.supersedes)
        if rec.superseded_by:
            frontier.append(rec.superseded_by)
    before: dict[str, set[str]] = {mid: set() for mid in seen}  # id -> versions that come before it
    for rec in seen.values():
        before[rec.id].update(s for s in rec.supersedes if s in seen)
        if rec.superseded_by in seen:
            before[rec.superseded_by].add(rec.id)
    order: list[MemoryRecord] = []
    placed: set[str] = set()
    while len(order) < len(seen):
        ready = [seen[m] for m in seen if m not in placed and before[m] <= placed]
        if not ready:  # a cycle in imported links: fall back to time order for the rest
            ready = [seen[m] for m in seen if m not in placed]
        nxt = min(ready, key=lambda r: (r.created_at or r.updated_at, r.id))
        order.append(nxt)
        placed.add(nxt.id)
    return order


def purge_expired(gate: WriteGate) -> int:
    """Delete memories past their retention expiry (L3) and expired quarantine; returns how many."""
    gate.check_writable()
    with gate.lock:
        deletes = gate.target.expired(gate.now())
        if deletes:
            gate.target.commit([], None, deletes)
            gate.ledger.unlink_memories(deletes)
        return len(deletes) + purge_quarantine(gate)


def reconcile(gate: WriteGate, memory_space_id: str) -> dict[str, int]:
    """Batch tier reconciliation (W7): promote by evidence, demote contradicted memories.

    Active memories of one partition sharing an ``entity`` + ``attribute`` contradict each other:
    the newest keeps its tier and the others are demoted to ``tentative``.
    """
    gate.check_writable()
    with gate.lock:
        records = gate.target.records_of_space(memory_space_id)
        changed: dict[str, MemoryRecord] = {}
        promote_at = gate.policy_for(memory_space_id).promote_at
        for r in records:
            if r.tier is Tier.TENTATIVE and r.evidence_count >= promote_at:
                changed[r.id] = r.model_copy(update={"tier": Tier.CONFIRMED})
        groups: dict[tuple[str, ...], list[MemoryRecord]] = defaultdict(list)
        for r in records:
            if r.entity and r.attribute and r.superseded_by is None:
                key = (*partition_key(r), r.entity, r.attribute)
                groups[key].append(r)
        demoted = 0
        for members in groups.values():
            if len(members) < 2:
                continue
            members.sort(key=lambda r: (r.updated_at, r.id))
            for r in members[:-1]:
                if r.tier is not Tier.TENTATIVE:
                    changed[r.id] = changed.get(r.id, r).model_copy(update={"tier": Tier.TENTATIVE})
                    demoted += 1
        if changed:
            recs = list(changed.values())
            gate.target.commit(recs, np.stack([gate.target.vector_of(r) for r in recs]).astype(np.float32))
        promoted = sum(1 for r in changed.values() if r.tier is Tier.CONFIRMED)
        return {"promoted": promoted, "demoted": demoted}
