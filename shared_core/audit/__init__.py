"""Audit records and sinks (R9): ids, reasons, scope and config hash, never memory text.

Shipped sinks: :class:`JsonlSink` (append-only, hash-chained JSON lines), :class:`LoggingSink`
(the standard ``logging`` module) and plain callables. :func:`capture_audit` collects the records
emitted in the current context, for tests and notebooks.
"""

from __future__ import annotations

from .jsonl import GENESIS, JsonlSink, verify_chain
from .record import AuditRecord, AuditSink, RejectedEntry, count_reasons, deletion_record, query_hash
from .sinks import LoggingSink, capture_audit, emit

__all__ = [
    "GENESIS",
    "AuditRecord",
    "AuditSink",
    "JsonlSink",
    "LoggingSink",
    "RejectedEntry",
    "capture_audit",
    "count_reasons",
    "deletion_record",
    "emit",
    "query_hash",
    "verify_chain",
]
