"""The core write gate in front of a foreign LangChain vector store (private).

The decisions come from :func:`shared_core.write_gate.decide_writes`, the store-independent part
of the write gate (size, screens, PII masking, trust, W3-W5). What a foreign store cannot have:
tombstones (no ledger, L2), dedup against stored memories and supersede links to them (W2, L1:
they need the memory store's scoped neighbour search), a quarantine area (W6: held candidates
are reported, not kept; use ``GatedVectorStore.from_store`` for review workflows).

The records to store and the write audit record come from the core as well
(:func:`~shared_core.write_gate.decide_writes` with ``now=``, and
:func:`~shared_core.write_gate.write_audit_record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared_core import ConfigBook, MemoryRecord
from shared_core.audit import AuditSink, emit
from shared_core.timeutil import Clock, to_utc
from shared_core.write import WriteDecision, WritePolicy, decide_writes, write_audit_record

__all__ = ["foreign_write"]


def foreign_write(
    candidates: Sequence[Mapping[str, Any]],
    *,
    policy: WritePolicy | ConfigBook | None,
    sinks: Sequence[AuditSink],
    clock: Clock,
    dry_run: bool,
) -> tuple[list[WriteDecision], list[tuple[int, MemoryRecord]]]:
    """Decide every candidate with the core write gate; build the records of those to write.

    Returns:
        One decision per candidate (``write`` ones carry the memory id) and ``(input index,
        record)`` for each record to write to the foreign store, in input order (none on a dry run). The write audit record goes
        to ``sinks`` (and :func:`shared_core.capture_audit`).
    """
    now = to_utc(clock())
    book = policy if isinstance(policy, ConfigBook) else ConfigBook(write_default=policy or WritePolicy())
    decisions = decide_writes(candidates, policy=book, dry_run=dry_run, now=now, build=True)
    records = [] if dry_run else [(d.index, d.record) for d in decisions if d.record is not None]
    emit(write_audit_record(decisions, now=now, config_hash=book.config_hash(), dry_run=dry_run), sinks)
    return decisions, records
