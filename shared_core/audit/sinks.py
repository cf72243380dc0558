"""Audit sinks and delivery: :class:`LoggingSink`, :func:`emit`, and :func:`capture_audit` for tests.

A sink is any callable taking an :class:`~shared_core.audit.record.AuditRecord`.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from .record import AuditRecord, AuditSink

__all__ = ["LoggingSink", "capture_audit", "emit"]

_log = logging.getLogger("recall_gate.audit")


class LoggingSink:
    """Log each record as JSON on a :mod:`logging` logger (default ``recall_gate.audit``)."""

    def __init__(self, logger: logging.Logger | None = None, *, level: int = logging.INFO) -> None:
        self.logger = logger or _log
        self.level = level

    def __call__(self, record: AuditRecord) -> None:
        """Log ``record``."""
        self.logger.log(self.level, "recall-gate %s %s", record.event, record.to_json())


_taps: contextvars.ContextVar[tuple[list[AuditRecord], ...]] = contextvars.ContextVar(
    "recall_gate_audit_taps", default=()
)


def emit(record: AuditRecord, sinks: Sequence[AuditSink]) -> None:
    """Send ``record`` to ``sinks`` and to every :func:`capture_audit` active in this context.

    A failing sink is logged (type of error only) and does not stop the others.
    """
    for sink in sinks:
        try:
            sink(record)
        except Exception as exc:
            _log.error("audit sink %r failed: %s", sink, type(exc).__name__)
    for tap in _taps.get():
        tap.append(record)


@contextmanager
def capture_audit() -> Iterator[list[AuditRecord]]:
    """Collect the audit records emitted in this context while the block runs.

    Scoped by a context variable, not process-wide: a capture in one test, thread or asyncio task
    never sees another's records. Work the block starts in a copy of its context (asyncio tasks,
    LangChain's executor, ``contextvars.copy_context().run``) is captured; a bare
    ``threading.Thread`` started inside is not.

    Example:
        >>> with capture_audit() as records:
        ...     gate.evaluate(hits, scope=scope)
        >>> records[0].accepted_ids
    """
    tap: list[AuditRecord] = []
    token = _taps.set((*_taps.get(), tap))
    try:
        yield tap
    finally:
        _taps.reset(token)
