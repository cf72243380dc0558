"""Audit through LlamaIndex instrumentation (R9): one event per gate run, write or deletion.

Every :class:`~shared_core.audit.AuditRecord` the core produces for this adapter is also
dispatched as a :class:`RecallGateAuditEvent` through ``get_dispatcher(__name__)``. The event is
created inside the component's span (``retrieve``, ``_postprocess_nodes``, ``query``, ``add``), so
its ``span_id`` ties it to the retrieval that caused it, and any ``BaseEventHandler`` attached to
the root dispatcher (or to this module's) receives it.

The event wraps the audit record itself (``event.record``): ids, reasons, counts, the scope, the
query hash, the config hash and the dry-run flag — never a memory's title or body — and every
field the core adds to it later.

Example:
    >>> from llama_index.core.instrumentation import get_dispatcher
    >>> from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    >>> class Operators(BaseEventHandler):
    ...     def handle(self, event, **kwargs):
    ...         if isinstance(event, RecallGateAuditEvent):
    ...             print(event.record.accepted_ids, event.record.counts)
    >>> get_dispatcher().add_event_handler(Operators())
"""

from __future__ import annotations

from llama_index.core.instrumentation.events import BaseEvent
from llama_index_instrumentation import get_dispatcher  # what llama_index.core.instrumentation re-exports

from shared_core.audit import AuditRecord

__all__ = ["RecallGateAuditEvent", "dispatch_audit"]

dispatcher = get_dispatcher(__name__)


class RecallGateAuditEvent(BaseEvent):
    """The audit record of one recall-gate decision, as a LlamaIndex instrumentation event.

    Attributes:
        record: the core's audit record (``record.event`` is ``"recall"``, ``"write"`` or
            ``"delete"``).
        component: the adapter class that ran it (``GatedRetriever``, ``GatedVectorStore``, ...).
    """

    record: AuditRecord
    component: str = ""

    @classmethod
    def class_name(cls) -> str:
        """Name of the event class (LlamaIndex convention)."""
        return "RecallGateAuditEvent"


def dispatch_audit(record: AuditRecord, *, component: str) -> None:
    """Dispatch ``record`` as a :class:`RecallGateAuditEvent` in the active span."""
    dispatcher.event(RecallGateAuditEvent(record=record, component=component))
