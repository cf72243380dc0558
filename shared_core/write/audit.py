"""The audit records of write calls (R9): ids, actions and reason codes; never text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from ..audit import AuditRecord, RejectedEntry, count_reasons
from ..timeutil import to_utc
from .candidate import WriteDecision

__all__ = ["write_audit_record", "write_failure_record"]


def write_audit_record(
    decisions: Sequence[WriteDecision], *, now: datetime, config_hash: str, dry_run: bool = False
) -> AuditRecord:
    """The audit record of one write call: stored ids, other outcomes with reasons, counts (R9).

    Never text: ids, actions, reason codes and finding rule names only.
    """
    stored = tuple(d.id for d in decisions if d.stored and d.id)
    others = tuple(
        RejectedEntry(d.id or f"#{d.index}", d.action.value, tuple(r.value for r in d.reasons))
        for d in decisions
        if not d.stored
    )
    return AuditRecord.model_construct(
        event="write",
        at=to_utc(now).isoformat(),
        query_hash=None,
        query=None,
        scope={},
        accepted_ids=stored,
        rejected=others,
        counts=count_reasons(d.action.value for d in decisions),
        input_count=len(decisions),
        dry_run=dry_run,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"reasons": dict(Counter(r.value for d in decisions for r in d.reasons))},
    )


def write_failure_record(
    attempted: Sequence[str], error: BaseException, *, now: datetime, config_hash: str
) -> AuditRecord:
    """The audit record of a write call the store could not finish: which ids, which error type.

    ``attempted`` holds the memory ids being written and ``#index`` of the inputs being held;
    no text.
    """
    return AuditRecord.model_construct(
        event="write",
        at=to_utc(now).isoformat(),
        query_hash=None,
        query=None,
        scope={},
        accepted_ids=(),
        rejected=(),
        counts={"error": 1},
        input_count=len(attempted),
        dry_run=False,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"error": type(error).__name__, "attempted": list(attempted)},
    )
