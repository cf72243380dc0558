"""Framework-neutral support for the adapters: the foreign write target, scopes, options, feedback (P1, A1, A2).

Both ``langchain_recall_gate`` and ``llamaindex_recall_gate`` import this package; it imports no
framework. Nothing here decides anything: every decision is the core's.

- :class:`ForeignTarget` — the :class:`~shared_core.write.target.WriteTarget` over a user's
  vector store, written once: each adapter supplies five storage primitives (fetch by id, scan
  by a filter, nearest neighbours, upsert, delete) and this class turns them into what the write
  gate needs. Records are stored with the core's flat codec
  (:func:`shared_core.model.encode_record`), so a collection written through one adapter is
  readable through the other and through :class:`~shared_core.store.MemoryStore`.
- :class:`ScopeSource` — where a component's scope comes from: the request's, else the
  constructor's, and never the constructor's once the component serves per-request scopes
  (fail closed, R1).
- :func:`recall_feedback` / :func:`write_feedback` — the one warning line when a gate run accepts
  nothing, or a write batch stores nothing (counts by reason, never text).

Filters (:data:`Where`) use a small dialect every store understands: an AND of conditions
``{key: value}``, ``{key: {"$in": [...]}}`` or ``{key: {"$lte": x}}`` (Chroma's ``where``
syntax, hence passed as is to Chroma; translated for other stores; evaluated here by
:func:`matches` as a recheck and for stores that cannot filter).
"""

from __future__ import annotations

from .feedback import recall_feedback, write_feedback
from .foreign import (
    BOOKKEEPING_KEYS,
    PROVENANCE_KEY,
    RESERVED_KEYS,
    ForeignTarget,
    Stored,
    Where,
    conditions_of,
    is_plain,
    matches,
    partition_filter,
    plain_defaults,
    read_fields,
    staged_batch,
    stored_document,
    user_metadata,
    visible_filter,
    write_fields,
)
from .options import (
    PLAIN_MODES,
    PlainMode,
    calibrated_min_score,
    check_plain,
    core_embedder,
    default_gate,
    positive_int,
)
from .scoping import ScopeSource

__all__ = [
    "BOOKKEEPING_KEYS",
    "PLAIN_MODES",
    "PROVENANCE_KEY",
    "RESERVED_KEYS",
    "ForeignTarget",
    "PlainMode",
    "ScopeSource",
    "Stored",
    "Where",
    "calibrated_min_score",
    "check_plain",
    "conditions_of",
    "core_embedder",
    "default_gate",
    "is_plain",
    "matches",
    "partition_filter",
    "plain_defaults",
    "positive_int",
    "read_fields",
    "recall_feedback",
    "staged_batch",
    "stored_document",
    "user_metadata",
    "visible_filter",
    "write_feedback",
    "write_fields",
]
