"""Tombstones on the read path and after a write (L2): what makes a forget hold across clients.

Chroma has no multi-operation transactions and nothing orders two clients, so the store does not
rely on the deletes alone:

* :func:`drop_tombstoned` — before the recall gate, hits whose source or id is tombstoned are
  dropped (one read of the ledger and the mirror for the hits' keys). A forget is then effective
  for every client from the moment its tombstone is written: before its deletes land, after a
  crash between the two, while another process races a write of the same source, and after a
  restore brought the memory back (the mirror).
* :func:`settle_late_writes` — a write that passed the tombstone check just before another
  client's forget wrote its tombstone may commit after that forget deleted; after each write the
  store checks its sources again and runs the forget once more (it is idempotent), and the
  write's decision says so (``reject``, ``tombstoned``). A retried write refused as
  ``tombstoned`` settles what its first attempt may have left.
* :class:`LateWrites` — the same step for one store, remembering what a settle that failed (the
  server went away after the commit) left to do: the store's next write-side call settles it
  first, so a correction or an approval retried after the outage cannot leave a memory of a
  forgotten source behind (found by the server load run).
* :func:`settle_tombstoned` — what no process remembers: a client killed between its commit and
  its settle. A store that shares its Chroma with other clients looks, when it opens for writing,
  for memories, lineage links and held candidates of forgotten sources (and memories with no
  source under a deleted id) and forgets them again.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InputError, RecallGateError, ScopeError
from ..model import Hit, Scope
from ..write import lifecycle
from ..write.candidate import WriteAction, WriteDecision, WriteReason, memory_id
from ..write.gate import WriteGate
from .ledger import ChromaLedger

if TYPE_CHECKING:
    from .backend import ChromaBackend

__all__ = [
    "MAX_CANDIDATES",
    "MAX_QUERY_CHARS",
    "LateWrites",
    "check_query",
    "delete_sourceless",
    "drop_tombstoned",
    "settle_late_writes",
    "settle_tombstoned",
]

MAX_QUERY_CHARS = 10_000
MAX_CANDIDATES = 10_000
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def check_query(query: object, scope: Scope, candidates: object) -> Scope:
    """Validate a search's arguments (returns the scope).

    Raises:
        InputError: if the query is not a string, is longer than 10,000 characters, or holds a
            lone surrogate, or ``candidates`` is not an integer from 1 to 10,000.
        ScopeError: if a scope field holds a lone surrogate.
    """
    if not isinstance(query, str):
        raise InputError(f"query must be a string, not {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise InputError(f"query is longer than {MAX_QUERY_CHARS} characters")
    if _LONE_SURROGATE.search(query):
        raise InputError("query is not valid Unicode (it holds a lone surrogate)")
    for name, value in scope.model_dump().items():
        if isinstance(value, str) and _LONE_SURROGATE.search(value):
            raise ScopeError(f"invalid scope: {name} is not valid Unicode (lone surrogate)")
    if candidates is not None and (
        isinstance(candidates, bool)
        or not isinstance(candidates, int)
        or not 1 <= candidates <= MAX_CANDIDATES
    ):
        raise InputError(f"candidates must be an integer from 1 to {MAX_CANDIDATES}")
    return scope


def drop_tombstoned(ledger: ChromaLedger, hits: list[Hit]) -> list[Hit]:
    """Hits without the tombstoned ones (the rule of :mod:`shared_core.write.ledger`), ranks renumbered."""
    if not hits:
        return hits
    sources, mems = ledger.tombstoned_among(
        [h.record.source_record_id or "" for h in hits],
        [h.record.id for h in hits if not h.record.source_record_id],
    )
    if not sources and not mems:
        return hits
    kept = [
        h
        for h in hits
        if not (h.record.source_record_id and h.record.source_record_id in sources)
        and not (not h.record.source_record_id and h.record.id in mems)
    ]
    return [h.model_copy(update={"fused_rank": i}) for i, h in enumerate(kept, start=1)]


def settle_late_writes(
    gate: WriteGate, ledger: ChromaLedger, decisions: Sequence[WriteDecision]
) -> list[WriteDecision]:
    """Finish, after a write call, every forget or delete the call's writes raced; returns the decisions.

    * A stored decision whose source is tombstoned now: the source is forgotten once more, and the
      decision returned is ``reject`` with ``tombstoned`` (the memory is not there: a caller told
      "written" would count a memory that a forget removed).
    * A stored decision with no source whose id is tombstoned now: the id is deleted once more
      (the decision likewise).
    * A write refused as ``tombstoned``: an earlier attempt of the same write may have landed and
      never reached this step (the server or the process went away between its commit and this
      check, and the caller retried). What the source still holds is forgotten, and a memory
      with no source under the refused id is deleted. A memory of a live source under that id is
      someone's memory and is left alone. When nothing is left over, nothing is done (re-sending
      a forgotten record costs one read per memory space, and no audit record).
    """
    sources: set[str] = set()
    loose: dict[str, set[str]] = {}  # space -> ids with no source, stored by this call
    refused_sources: set[str] = set()
    refused_loose: dict[str, set[str]] = {}
    for d in decisions:
        if d.dry_run:
            continue
        cand = d.candidate
        if d.stored:
            src = d.record.source_record_id if d.record is not None else None
            if src is None and cand is not None:
                src = cand.source_record_id
            if src:
                sources.add(src)
            elif d.id and d.record is not None:
                loose.setdefault(d.record.memory_space_id, set()).add(d.id)
        elif WriteReason.TOMBSTONED in d.reasons and cand is not None:
            if cand.source_record_id:
                refused_sources.add(cand.source_record_id)
            else:
                own = cand.id or memory_id(cand.scope, cand.title, cand.body)
                refused_loose.setdefault(cand.memory_space_id, set()).add(own)
    late: set[str] = set()
    if sources:
        late = set(ledger.tombstoned_among(sorted(sources))[0])
        for src in sorted(late):
            lifecycle.forget(gate, src)
    for src in sorted(refused_sources - sources):
        if gate.target.ids_of_source(src) or gate.ledger.linked(src):
            lifecycle.forget(gate, src)
    late_ids: set[str] = set()
    for space, ids in loose.items():
        _, gone = ledger.tombstoned_among(memories=sorted(ids))
        if gone:
            lifecycle.delete(gate, sorted(gone), memory_space_id=space)
            late_ids.update(gone)
    for space, ids in refused_loose.items():
        left = [r.id for r in gate.target.get(sorted(ids), memory_space_id=space) if not r.source_record_id]
        if left:
            lifecycle.delete(gate, left, memory_space_id=space)
    return [_undone(d) if _settled_away(d, late, late_ids) else d for d in decisions]


def _settled_away(d: WriteDecision, late: set[str], late_ids: set[str]) -> bool:
    if d.dry_run or not d.stored:
        return False
    src = (d.record.source_record_id if d.record is not None else None) or (
        d.candidate.source_record_id if d.candidate is not None else None
    )
    return src in late if src else d.id in late_ids


def _undone(d: WriteDecision) -> WriteDecision:
    return d.model_copy(
        update={
            "action": WriteAction.REJECT,
            "reasons": (*d.reasons, WriteReason.TOMBSTONED),
            "detail": (*d.detail, "source_record_id: forgotten while this write committed"),
            "record": None,
        }
    )


class LateWrites:
    """:func:`settle_late_writes` for one store, keeping what a failed settle left to do (L2).

    A settle fails when the store goes away between a call's commit and its check (a Chroma server
    killed, say): the call raises, the caller retries, and the retry of a correction or an approval
    fails differently ("no memory", "no quarantined candidate") and never settles. The decisions of
    a failed settle are kept here; :meth:`settle_pending` runs them again before the store's next
    write-side call (settling twice is harmless: every step is idempotent).
    """

    def __init__(self, gate: WriteGate, ledger: ChromaLedger) -> None:
        self._gate = gate
        self._ledger = ledger
        self._pending: list[WriteDecision] = []
        self._lock = threading.Lock()

    def settle(self, decisions: Sequence[WriteDecision]) -> list[WriteDecision]:
        """:func:`settle_late_writes`; on failure the decisions are kept for the next call and the error raised."""
        try:
            return settle_late_writes(self._gate, self._ledger, decisions)
        except RecallGateError:
            with self._lock:
                self._pending.extend(d for d in decisions if not d.dry_run)
            raise

    def settle_pending(self) -> None:
        """Settle what failed before (raises, keeping it, if it fails again)."""
        with self._lock:
            todo, self._pending = self._pending, []
        if todo:
            self.settle(todo)


def settle_tombstoned(gate: WriteGate, backend: ChromaBackend, ledger: ChromaLedger) -> list[str]:
    """Forget again what a client killed between its commit and its settle left behind (L2).

    :func:`settle_late_writes` runs in the process that wrote, and :class:`LateWrites` keeps a
    failed settle in that process only: a client that dies between a write's commit and its settle
    (a write racing another client's forget of its source) leaves the memory in Chroma. Recall is
    safe (:func:`drop_tombstoned` drops it before the gate) but its text stays on the server. This
    sweep reads every tombstone and, per chunk of 500 sources, asks each memory space, the lineage
    links and the quarantine which of them still hold something; each such source is forgotten once
    more (:func:`lifecycle.forget`: idempotent, audited), and memories with no source under a
    deleted id are deleted. Cost with no leftovers: one read of the tombstones, one read per memory
    space and chunk, two more per chunk. Returns the sources forgotten again.
    """
    keys = ledger.tombstone_keys()
    sources = [k[4:] for k in keys if k.startswith("src:")]
    left = (
        backend.sources_among(sources)
        | ledger.sources_among("lineage", sources)
        | ledger.sources_among("quarantine", sources)
    )
    for src in sorted(left):
        lifecycle.forget(gate, src)
    delete_sourceless(backend, ledger, [k[4:] for k in keys if k.startswith("mem:")])
    return sorted(left)


def delete_sourceless(backend: ChromaBackend, ledger: ChromaLedger, ids: Sequence[str]) -> list[tuple[str, str]]:
    """Delete the memories with no source under these deleted ids, in every space; returns ``(space, id)``.

    A deleted id tombstones only a memory with no source (the rule of :mod:`.ledger`): a live source's
    memory under the same id is someone's and stays.
    """
    loose = [
        (space, r.id)
        for space in (backend.spaces() if ids else [])
        for r in backend.get(list(ids), memory_space_id=space)
        if not r.source_record_id
    ]
    if loose:
        backend.commit([], None, loose)
        ledger.unlink_memories(loose)
    return loose
