"""Audit through LangChain callbacks (R9): a custom event per gate run, and a handler for sinks.

Every gated retrieval dispatches one custom event named :data:`AUDIT_EVENT`
(``"recall_gate.audit"``) whose data is the core :class:`~shared_core.AuditRecord` as a JSON-able
dict: time, query hash, scope, accepted ids, rejected ids with reasons, dry-run flag, config hash.
It never contains a memory body or title. The event is dispatched on the retriever run's child
callbacks, so it shows up:

* in ``astream_events(version="v2")`` as an ``on_custom_event`` event named ``recall_gate.audit``;
* in any callback handler's ``on_custom_event``, e.g. :class:`AuditCallbackHandler`, which
  forwards the records to shared_core sinks (:class:`~shared_core.JsonlSink`,
  :class:`~shared_core.LoggingSink`, any callable).

Example:
    >>> from shared_core import JsonlSink
    >>> handler = AuditCallbackHandler([JsonlSink("audit.jsonl")])
    >>> chain.invoke("question", config={"callbacks": [handler]})
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    BaseCallbackHandler,
    CallbackManagerForRetrieverRun,
    Callbacks,
    adispatch_custom_event,
    dispatch_custom_event,
)
from langchain_core.runnables.config import ensure_config, get_callback_manager_for_config

from shared_core import AuditRecord, AuditSink

__all__ = [
    "AUDIT_EVENT",
    "AuditCallbackHandler",
    "adispatch_audit",
    "adispatch_audit_to",
    "audit_payload",
    "dispatch_audit",
    "dispatch_audit_to",
]

AUDIT_EVENT = "recall_gate.audit"
"""Name of the custom event carrying an audit record."""

_log = logging.getLogger("recall_gate.audit")


def audit_payload(record: AuditRecord) -> dict[str, Any]:
    """The audit record as a JSON-able dict (ids, reasons, scope, hashes; never memory text)."""
    return record.model_dump(mode="json")


def dispatch_audit(record: AuditRecord, run_manager: CallbackManagerForRetrieverRun) -> None:
    """Dispatch ``record`` as a ``recall_gate.audit`` custom event under a retriever run."""
    dispatch_custom_event(AUDIT_EVENT, audit_payload(record), config={"callbacks": run_manager.get_child()})


async def adispatch_audit(record: AuditRecord, run_manager: AsyncCallbackManagerForRetrieverRun) -> None:
    """Async :func:`dispatch_audit`."""
    await adispatch_custom_event(
        AUDIT_EVENT, audit_payload(record), config={"callbacks": run_manager.get_child()}
    )


def dispatch_audit_to(record: AuditRecord, callbacks: Callbacks | None) -> bool:
    """Dispatch ``record`` on ``callbacks`` if they belong to a run (document compressors get these).

    Returns:
        Whether the event was dispatched (outside a run there is no parent to attach it to; the
        record still went to the gate's sinks).
    """
    config = ensure_config({"callbacks": callbacks})
    if get_callback_manager_for_config(config).parent_run_id is None:
        return False
    dispatch_custom_event(AUDIT_EVENT, audit_payload(record), config=config)
    return True


async def adispatch_audit_to(record: AuditRecord, callbacks: Callbacks | None) -> bool:
    """Async :func:`dispatch_audit_to`."""
    config = ensure_config({"callbacks": callbacks})
    if get_callback_manager_for_config(config).parent_run_id is None:
        return False
    await adispatch_custom_event(AUDIT_EVENT, audit_payload(record), config=config)
    return True


class AuditCallbackHandler(BaseCallbackHandler):
    """Forward ``recall_gate.audit`` custom events to shared_core audit sinks.

    Pass it wherever LangChain takes callbacks; each gated retrieval under that run sends its
    audit record to every sink. A failing sink is logged (error type only) and does not stop the
    others or the chain.

    Args:
        sinks: shared_core sinks, e.g. ``[JsonlSink("audit.jsonl"), LoggingSink()]`` or any
            callable taking an :class:`~shared_core.AuditRecord`.

    Example:
        >>> records = []
        >>> handler = AuditCallbackHandler([records.append])
        >>> retriever.invoke("question", config={"callbacks": [handler]})
        >>> records[0].rejected
    """

    run_inline = True  # sinks are cheap and thread-safe; keep events in order

    def __init__(self, sinks: Sequence[AuditSink]) -> None:
        self.sinks: tuple[AuditSink, ...] = tuple(sinks)

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Send a ``recall_gate.audit`` event's record to the sinks; ignore other events."""
        if name != AUDIT_EVENT:
            return
        record = AuditRecord.model_validate(data)
        for sink in self.sinks:
            try:
                sink(record)
            except Exception as exc:
                _log.error("audit sink %r failed: %s", sink, type(exc).__name__)
