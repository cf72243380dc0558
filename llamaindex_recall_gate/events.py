"""Audit through LlamaIndex instrumentation (R9): one event per gate run, write or deletion.

Every :class:`~shared_core.audit.AuditRecord` the core produces for this adapter is also
dispatched as a :class:`RecallGateAuditEvent` through ``get_dispatcher(__name__)``. The event is
created inside the component's span (``retrieve``, ``_postprocess_nodes``, ``query``, ``add``), so
its ``span_id`` ties it to the retrieval that caused it, and any ``BaseEventHandler`` attached to
the root dispatcher (or to this module's) receives it.

Like the audit record it copies, the event holds ids, reasons, counts, the scope, the query hash
(the query text only when the gate config sets ``audit_query_text``), the config hash and the
dry-run flag — never a memory's title or body.

Example:
    >>> from llama_index.core.instrumentation import get_dispatcher
    >>> from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    >>> class Operators(BaseEventHandler):
    ...     def handle(self, event, **kwargs):
    ...         if isinstance(event, RecallGateAuditEvent):
    ...             print(event.accepted_ids, event.counts)
    >>> get_dispatcher().add_event_handler(Operators())
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation.events import BaseEvent
from llama_index_instrumentation import get_dispatcher  # what llama_index.core.instrumentation re-exports

from shared_core.audit import AuditRecord

__all__ = ["RecallGateAuditEvent", "dispatch_audit"]

dispatcher = get_dispatcher(__name__)


class RecallGateAuditEvent(BaseEvent):
    """The audit record of one recall-gate decision, as a LlamaIndex instrumentation event.

    Attributes:
        event: ``"recall"`` (a gate run), ``"write"`` (write-gate decisions) or ``"delete"``.
        component: the adapter class that ran it (``GatedRetriever``, ``GatedVectorStore``, ...).
        at: decision time, ISO 8601 UTC.
        query_hash: sha256 prefix of the query text (``None`` for writes and deletions).
        query: the query text, only when the gate config sets ``audit_query_text``.
        scope: the scope of the query.
        accepted_ids: accepted memory ids in order (stored ids for writes).
        rejected: one ``{"id", "reason", "reasons"}`` per rejected hit (per unstored candidate for
            writes, with the write action as ``reason``).
        counts: counts by primary reason (by action for writes).
        input_count: how many hits or candidates were decided.
        dry_run: whether this was a preview (R10).
        config_hash: hash of the gate config (or of the write policy).
        elapsed_ms: time the gate took.
        extra: text-free details (timings, channel names, deleted ids).
    """

    event: str = "recall"
    component: str = ""
    at: str = ""
    query_hash: str | None = None
    query: str | None = None
    scope: dict[str, str | None] = Field(default_factory=dict)
    accepted_ids: list[str] = Field(default_factory=list)
    rejected: list[dict[str, Any]] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    input_count: int = 0
    dry_run: bool = False
    config_hash: str = ""
    elapsed_ms: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def class_name(cls) -> str:
        """Name of the event class (LlamaIndex convention)."""
        return "RecallGateAuditEvent"

    @classmethod
    def from_record(cls, record: AuditRecord, *, component: str) -> RecallGateAuditEvent:
        """Copy a core audit record into an event (no field holds memory text)."""
        return cls(
            event=record.event,
            component=component,
            at=record.at,
            query_hash=record.query_hash,
            query=record.query,
            scope=dict(record.scope),
            accepted_ids=list(record.accepted_ids),
            rejected=[{"id": r.id, "reason": r.reason, "reasons": list(r.reasons)} for r in record.rejected],
            counts=dict(record.counts),
            input_count=record.input_count,
            dry_run=record.dry_run,
            config_hash=record.config_hash,
            elapsed_ms=record.elapsed_ms,
            extra=dict(record.extra),
        )


def dispatch_audit(record: AuditRecord, *, component: str) -> None:
    """Dispatch ``record`` as a :class:`RecallGateAuditEvent` in the active span."""
    dispatcher.event(RecallGateAuditEvent.from_record(record, component=component))
