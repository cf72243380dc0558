"""The write side: nothing enters long-term memory without passing the write gate (W1-W8, L1-L3).

- :mod:`.candidate` — what a write asks for (:class:`MemoryCandidate`) and what was decided
  (:class:`WriteDecision`, :class:`WriteAction`, :class:`WriteReason`);
- :mod:`.decide` — the pure, store-independent decision (:func:`decide_writes`, :func:`build_record`);
- :mod:`.gate` — :class:`WriteGate`: dedup, supersede and commit against a write target;
- :mod:`.lifecycle` — forget, delete, correct, history, expiry, reconcile (any target);
- :mod:`.review` — quarantine review: list, approve, reject, purge;
- :mod:`.audit` — the write audit records.
"""

from __future__ import annotations

from ..config import TrustAction, WritePolicy
from .audit import write_audit_record, write_failure_record
from .candidate import (
    MemoryCandidate,
    WriteAction,
    WriteDecision,
    WriteReason,
    candidate_from_mapping,
    memory_id,
)
from .decide import SPLIT_WINDOW, build_record, decide_writes, split_injection, trust_action
from .gate import WriteGate

__all__ = [
    "SPLIT_WINDOW",
    "MemoryCandidate",
    "TrustAction",
    "WriteAction",
    "WriteDecision",
    "WriteGate",
    "WritePolicy",
    "WriteReason",
    "build_record",
    "candidate_from_mapping",
    "decide_writes",
    "memory_id",
    "split_injection",
    "trust_action",
    "write_audit_record",
    "write_failure_record",
]
