"""Audit records and sinks (R9).

Every gate run produces one :class:`AuditRecord`: time, query hash (the text only when the config
says so), scope, accepted ids, rejected ids with reasons, the dry-run flag, the config hash and
timing. **No memory body or title ever goes into an audit record** (bodies can hold personal data).

A sink is any callable taking the record. Shipped sinks: :class:`JsonlSink` (append-only JSON
lines, one ``write`` per line on a file opened with ``O_APPEND``, optional ``fsync``),
:class:`LoggingSink` (the standard ``logging`` module) and plain callables. :func:`capture_audit`
collects every record emitted in the process while it is active — for tests and notebooks.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AuditRecord",
    "AuditSink",
    "JsonlSink",
    "LoggingSink",
    "RejectedEntry",
    "capture_audit",
    "deletion_record",
    "emit",
    "query_hash",
]

_log = logging.getLogger("recall_gate.audit")


@dataclass(frozen=True, slots=True)
class RejectedEntry:
    """One rejected hit in an audit record: id and reasons only."""

    id: str
    reason: str
    reasons: tuple[str, ...]


class AuditRecord(BaseModel):
    """What one gate run (or write decision, or deletion) decided, without any memory text."""

    model_config = ConfigDict(frozen=True)

    event: str = "recall"
    at: str
    query_hash: str | None = None
    query: str | None = None
    scope: dict[str, str | None]
    accepted_ids: tuple[str, ...] = ()
    rejected: tuple[RejectedEntry, ...] = ()
    counts: dict[str, int] = Field(default_factory=dict)
    input_count: int = 0
    dry_run: bool = False
    config_hash: str
    elapsed_ms: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def rejected_count(self) -> int:
        """How many hits were rejected."""
        return len(self.rejected)

    def summary(self) -> dict[str, Any]:
        """The operator summary of R11: ``rejected_count`` and counts by reason."""
        return {"rejected_count": self.rejected_count, "reasons": dict(self.counts)}

    def _repr_html_(self) -> str:
        """Rich display in Jupyter (ids and reasons only, like the record itself)."""
        from .display import audit_html

        return audit_html(self)

    def to_json(self) -> str:
        """One line of JSON."""
        return self.model_dump_json(exclude_none=False)


def deletion_record(
    *,
    at: str,
    source_record_id: str | None,
    ids: Sequence[str],
    counts: dict[str, int],
    config_hash: str = "",
) -> AuditRecord:
    """The audit record of a deletion (L2): which ids went, how many of each kind; no text."""
    return AuditRecord.model_construct(
        event="delete",
        at=at,
        query_hash=None,
        query=None,
        scope={},
        accepted_ids=(),
        rejected=(),
        counts=dict(counts),
        input_count=sum(counts.values()),
        dry_run=False,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"source_record_id": source_record_id, "ids": sorted(ids), "tombstoned": True},
    )


def count_reasons(reasons: Iterable[str]) -> dict[str, int]:
    """Counts by reason, sorted by reason name."""
    return dict(sorted(Counter(reasons).items()))


def query_hash(query: str | None) -> str | None:
    """sha256 (first 16 hex digits) of the query text, so equal queries can be grouped."""
    if query is None:
        return None
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:16]


AuditSink = Callable[[AuditRecord], None]


class JsonlSink:
    """Append audit records to a JSON-lines file.

    Each record is one ``os.write`` of one line to a descriptor opened with ``O_APPEND``, so lines
    from threads or processes do not interleave. ``fsync=True`` forces each line to disk (slower,
    survives power loss); the default leaves flushing to the OS (survives a process crash).
    """

    def __init__(self, path: str | Path, *, fsync: bool = False) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._lock = threading.Lock()

    def __call__(self, record: AuditRecord) -> None:
        """Append ``record`` as one line."""
        line = (record.to_json() + "\n").encode("utf-8")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)

    def read(self) -> list[AuditRecord]:
        """All records in the file (for tests and the command line)."""
        if not self.path.exists():
            return []
        with self.path.open(encoding="utf-8") as fh:
            return [AuditRecord.model_validate(json.loads(line)) for line in fh if line.strip()]


class LoggingSink:
    """Log each record as JSON on a :mod:`logging` logger (default ``recall_gate.audit``)."""

    def __init__(self, logger: logging.Logger | None = None, *, level: int = logging.INFO) -> None:
        self.logger = logger or _log
        self.level = level

    def __call__(self, record: AuditRecord) -> None:
        """Log ``record``."""
        self.logger.log(self.level, "recall-gate %s %s", record.event, record.to_json())


_taps: list[list[AuditRecord]] = []
_taps_lock = threading.Lock()


def emit(record: AuditRecord, sinks: Sequence[AuditSink]) -> None:
    """Send ``record`` to ``sinks`` and to every active :func:`capture_audit`.

    A failing sink is logged (type of error only) and does not stop the others.
    """
    for sink in sinks:
        try:
            sink(record)
        except Exception as exc:
            _log.error("audit sink %r failed: %s", sink, type(exc).__name__)
    if _taps:
        with _taps_lock:
            for tap in _taps:
                tap.append(record)


@contextmanager
def capture_audit() -> Iterator[list[AuditRecord]]:
    """Collect every audit record emitted in this process while the block runs.

    Example:
        >>> with capture_audit() as records:
        ...     gate.evaluate(hits, scope=scope)
        >>> records[0].accepted_ids
    """
    tap: list[AuditRecord] = []
    with _taps_lock:
        _taps.append(tap)
    try:
        yield tap
    finally:
        with _taps_lock:
            _taps.remove(tap)
