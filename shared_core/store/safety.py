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
  store checks its sources again and runs the forget once more (it is idempotent).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import InputError, ScopeError
from ..model import Hit, Scope
from ..write import lifecycle
from ..write.candidate import WriteDecision
from ..write.gate import WriteGate
from .ledger import ChromaLedger

__all__ = ["MAX_CANDIDATES", "MAX_QUERY_CHARS", "check_query", "drop_tombstoned", "settle_late_writes"]

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
    """Forget again every source a stored decision names that is tombstoned now; returns the decisions."""
    sources: set[str] = set()
    for d in decisions:
        if not d.stored or d.dry_run:
            continue
        src = d.record.source_record_id if d.record is not None else None
        if src is None and d.candidate is not None:
            src = d.candidate.source_record_id
        if src:
            sources.add(src)
    if sources:
        late, _ = ledger.tombstoned_among(sorted(sources))
        for src in sorted(late):
            lifecycle.forget(gate, src)
    return list(decisions)
