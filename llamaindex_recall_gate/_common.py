"""Framework-neutral glue of the adapters: the foreign write target, scopes, feedback (P1, A1, A2).

**This file is identical in ``langchain_recall_gate`` and ``llamaindex_recall_gate``** (a test
compares the two byte for byte); neither adapter may import the other's framework, and the core
(:mod:`shared_core`) is where it belongs next: it imports no framework either. Nothing here
decides anything: every decision is the core's.

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

import contextlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from shared_core import GateConfig, GateResult, RecallGate, Scope, ScopeError, coerce_scope
from shared_core.config import SEED_MIN_SCORE
from shared_core.embedding import Embedder, as_embedder
from shared_core.errors import ConfigError
from shared_core.model import (
    SHARED_BUCKET,
    MemoryRecord,
    Visibility,
    bucket_of,
    decode_metadata,
    encode_record,
    is_encoded,
    record_from_metadata,
)
from shared_core.model.codec import RECORD_FIELDS
from shared_core.retrieval.partition import record_text
from shared_core.write import WriteAction, WriteDecision
from shared_core.write.candidate import CANDIDATE_FIELDS
from shared_core.write.ledger import Ledger
from shared_core.write.target import PartitionKey, partition_key

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
    "stored_document",
    "user_metadata",
    "visible_filter",
    "write_feedback",
    "write_fields",
]

PROVENANCE_KEY = "recall_gate"
"""Metadata key of an accepted document's provenance (R12)."""

Where = dict[str, Any]
"""An AND of conditions in Chroma's ``where`` syntax (see the module docstring)."""

Stored = tuple[str, str, Mapping[str, Any]]
"""What a store holds for one entry: ``(id, text, metadata)``."""

PlainMode = Literal["reject", "owned"]
PLAIN_MODES: tuple[str, ...] = ("reject", "owned")

_TIME_FIELDS = ("created_at", "updated_at", "valid_from", "valid_to", "deleted_at", "expires_at")
BOOKKEEPING_KEYS = frozenset({"rg_route", "rg_bucket", "rg_schema", *(f"{t}_ts" for t in _TIME_FIELDS)})
"""Keys the codec writes besides the record fields (partition keys, schema, epoch times)."""

_WRITE_FIELDS = frozenset(CANDIDATE_FIELDS) - {"id", "body"}
RESERVED_KEYS = (frozenset(RECORD_FIELDS) - {"id", "body"}) | _WRITE_FIELDS | BOOKKEEPING_KEYS
"""Metadata keys that belong to the record, not to the user (``id`` and ``body`` stay the user's)."""

_SCOPE_KEYS = ("user_id", "agent_id", "memory_space_id")
_TUPLE_FIELDS = ("tags", "supersedes")


# -- metadata ---------------------------------------------------------------------------------


def user_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The user's own keys of a document's metadata (record, bookkeeping and provenance keys removed)."""
    return {k: v for k, v in meta.items() if k not in RESERVED_KEYS and k != PROVENANCE_KEY}


def stored_document(record: MemoryRecord, user: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The text and flat metadata to store for a record: the user's own keys plus the codec's."""
    text, meta = encode_record(record)
    return text, {**user_metadata(user), **meta}


def write_fields(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The write-candidate fields a document's metadata names (list fields decoded from JSON)."""
    out = {k: v for k, v in meta.items() if k in _WRITE_FIELDS}
    for key in _TUPLE_FIELDS:
        value = out.get(key)
        if isinstance(value, str) and value.startswith("["):
            with contextlib.suppress(ValueError):  # left as is: validation names the field
                out[key] = json.loads(value)
    return out


def is_plain(meta: Mapping[str, Any]) -> bool:
    """True for a document that carries no record at all (not encoded, and names no owner)."""
    return not is_encoded(meta) and not any(meta.get(k) not in (None, "") for k in _SCOPE_KEYS)


def read_fields(
    meta: Mapping[str, Any],
    *,
    keep: Sequence[str | None] = (),
    plain: Mapping[str, Any] | None = None,
) -> Mapping[str, Any]:
    """The record fields the recall gate reads from a document's metadata.

    A document the write gate stored is read from the codec's keys only (user keys cannot change
    its record); another document in the seeds' flat ``MemoryHit`` shape; a plain document (see
    :func:`is_plain`) from ``plain`` when given (the ``plain_documents="owned"`` defaults), else as
    it is (the gate rejects it as ``invalid``). Keys in ``keep`` (score keys) are kept as given.
    """
    if is_encoded(meta):
        fields: dict[str, Any] = decode_metadata(meta)
    elif plain is not None and is_plain(meta):
        fields = {**meta, **plain}
    else:
        return meta
    for key in keep:
        if key is not None and key in meta:
            fields[key] = meta[key]
    return fields


def plain_defaults(owner: Scope, now: datetime) -> dict[str, Any]:
    """Record fields of a plain document under ``plain_documents="owned"``: the owner's approved, confirmed memory, current now."""
    return {
        **owner.model_dump(),
        "status": "approved",
        "tier": "confirmed",
        "visibility": Visibility.PRIVATE.value,
        "updated_at": now.isoformat(),
    }


# -- filters ----------------------------------------------------------------------------------


def _and(conditions: Sequence[Where]) -> Where:
    return conditions[0] if len(conditions) == 1 else {"$and": list(conditions)}


def conditions_of(where: Where) -> list[Where]:
    """The conditions of an AND filter."""
    return list(where["$and"]) if "$and" in where else [where]


def partition_filter(key: PartitionKey) -> Where:
    """The filter of one partition ``(memory_space_id, route or "", bucket)``."""
    space, route, bucket = key
    return _and([{"memory_space_id": space}, {"rg_route": route}, {"rg_bucket": bucket}])


def visible_filter(scope: Scope) -> Where:
    """Everything a scope may see: its space and route, its private bucket and the shared one (R1, R2)."""
    private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
    return _and(
        [
            {"memory_space_id": scope.memory_space_id},
            {"rg_route": scope.route_id or ""},
            {"rg_bucket": {"$in": [private, SHARED_BUCKET]}},
        ]
    )


def matches(where: Where, meta: Mapping[str, Any]) -> bool:
    """Evaluate a filter of the module's dialect on one metadata mapping."""
    for cond in conditions_of(where):
        [(key, test)] = cond.items()
        value = meta.get(key)
        if isinstance(test, Mapping):
            if "$in" in test and value not in test["$in"]:
                return False
            if "$lte" in test and not (
                isinstance(value, (int, float)) and not isinstance(value, bool) and value <= test["$lte"]
            ):
                return False
        elif value != test:
            return False
    return True


# -- the write target -------------------------------------------------------------------------


class ForeignTarget(ABC):
    """The write gate's :class:`~shared_core.write.target.WriteTarget` over a user's vector store.

    Subclasses supply the storage primitives (``_fetch``, ``_scan``, ``_nearest``, ``_write``,
    ``_remove``); this class converts records with the core's codec and answers the write gate.
    Ids are global in a foreign store: an id held in another memory space counts as another
    owner's (the write gate then refuses it as ``not_owner``). A store that cannot be scanned by
    metadata gives no supersede by ``entity`` + ``attribute``, no split-injection window from
    stored memories and no expiry; its source lineage is kept in the ledger instead. A store
    with no nearest-neighbour search gives no dedup against stored memories (W2).

    Args:
        embedder: the embedding used for dedup cosines (the records' title and body).
        ledger: the write gate's ledger (lineage of stores that cannot be scanned).
        can_scan: whether ``_scan`` works for this store.
    """

    def __init__(self, embedder: Embedder, *, ledger: Ledger, can_scan: bool) -> None:
        self.embedder = embedder
        self.ledger = ledger
        self.can_scan = can_scan
        self._staged: dict[str, Any] = {}
        self._stage_lock = threading.RLock()

    # -- primitives (per framework) -------------------------------------------------------------

    @abstractmethod
    def _fetch(self, ids: Sequence[str]) -> list[Stored]:
        """Entries by id (missing ids left out)."""

    @abstractmethod
    def _scan(self, where: Where) -> list[Stored] | None:
        """Entries matching a filter, or ``None`` when the store cannot filter its contents."""

    @abstractmethod
    def _nearest(self, text: str, vector: NDArray[np.float32], n: int, where: Where) -> list[Stored] | None:
        """Up to ``n`` entries nearest to a record (its text and vector), or ``None`` when unsupported."""

    @abstractmethod
    def _write(self, records: Sequence[MemoryRecord], vectors: NDArray[np.float32] | None) -> None:
        """Upsert records (as :meth:`document` parts) with their vectors."""

    @abstractmethod
    def _remove(self, ids: Sequence[str]) -> None:
        """Delete entries by id (missing ids are no error)."""

    # -- what the adapter stages for one batch --------------------------------------------------

    @contextlib.contextmanager
    def staged(self, extras: Mapping[str, Any]) -> Iterator[None]:
        """Hold per-id extras (the framework's own document or user metadata) during one submit."""
        with self._stage_lock:
            self._staged = dict(extras)
            try:
                yield
            finally:
                self._staged = {}

    def extra_for(self, mid: str) -> Any:
        """The staged extra of an id in the current batch, or ``None``."""
        return self._staged.get(mid)

    def document(self, record: MemoryRecord, user: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The text and flat metadata to store for a record (see :func:`stored_document`)."""
        return stored_document(record, user)

    # -- conversion -----------------------------------------------------------------------------

    @staticmethod
    def records(entries: Sequence[Stored], where: Where | None = None) -> list[MemoryRecord]:
        """Records of the entries the write gate stored (others, and unreadable ones, left out)."""
        out = []
        for mid, text, meta in entries:
            if not is_encoded(meta) or (where is not None and not matches(where, meta)):
                continue
            with contextlib.suppress(ValidationError):
                out.append(record_from_metadata(mid, text, meta))
        return out

    # -- the WriteTarget protocol ---------------------------------------------------------------

    def embed_records(self, records: Sequence[MemoryRecord]) -> NDArray[np.float32]:
        """Unit embeddings of records' title and body."""
        return self.embedder.embed_documents([record_text(r) for r in records])

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Stored records by id, whatever their space (ids are global in a foreign store)."""
        return self.records(self._fetch(list(ids))) if ids else []

    def vector_of(self, record: MemoryRecord) -> NDArray[np.float32]:
        """The record's vector, recomputed (foreign stores need not return vectors)."""
        vec: NDArray[np.float32] = self.embed_records([record])[0]
        return vec

    def neighbours(
        self, record: MemoryRecord, vector: NDArray[np.float32], *, threshold: float, limit: int
    ) -> list[tuple[MemoryRecord, float]]:
        """Memories of the record's partition with cosine >= ``threshold``, best first (W2)."""
        where = partition_filter(partition_key(record))
        found = self._nearest(record_text(record), vector, max(4 * limit, 20), where)
        near = [r for r in self.records(found or [], where) if r.id != record.id]
        if not near:
            return []
        sims = self.embed_records(near) @ np.asarray(vector, dtype=np.float32)
        ranked = sorted(zip(near, sims.tolist(), strict=True), key=lambda p: -p[1])
        return [(r, float(s)) for r, s in ranked[: max(1, limit)] if s >= threshold]

    def _scan_records(self, where: Where) -> list[MemoryRecord]:
        return self.records(self._scan(where) or [], where)

    def same_attribute(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active memories of the partition with the record's entity and attribute (L1)."""
        if not record.entity or not record.attribute:
            return []
        where = _and(
            [
                *conditions_of(partition_filter(partition_key(record))),
                {"entity": record.entity},
                {"attribute": record.attribute},
            ]
        )
        found = [r for r in self._scan_records(where) if r.superseded_by is None and r.id != record.id]
        return sorted(found, key=lambda r: (r.updated_at, r.id), reverse=True)  # WriteTarget order

    def latest_body(self, key: PartitionKey) -> str | None:
        """Body of the partition's newest memory by creation time."""
        newest = max(
            self._scan_records(partition_filter(key)),
            key=lambda r: (r.created_at or r.updated_at, r.id),  # WriteTarget order
            default=None,
        )
        return newest.body if newest is not None else None

    def ids_of_source(self, source_record_id: str) -> list[tuple[str, str]]:
        """``(space, id)`` of memories derived from a source (a store that cannot filter: the ledger's links)."""
        found = self._scan_records({"source_record_id": source_record_id})
        return [(r.memory_space_id, r.id) for r in found]

    def expired(self, now: datetime) -> list[tuple[str, str]]:
        """``(space, id)`` of memories past their retention expiry (L3)."""
        found = self._scan_records({"expires_at_ts": {"$lte": now.timestamp()}})
        return [(r.memory_space_id, r.id) for r in found]

    def records_of_space(self, memory_space_id: str) -> list[MemoryRecord]:
        """Every memory of a space."""
        return self._scan_records({"memory_space_id": memory_space_id})

    def commit(
        self,
        upserts: Sequence[MemoryRecord],
        vectors: NDArray[np.float32] | None,
        deletes: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Upsert records and delete ids (a foreign store gives no transaction: upserts first)."""
        if upserts:
            if vectors is None:
                vectors = self.embed_records(upserts)
            self._write(list(upserts), vectors)
            if not self.can_scan:
                for rec in upserts:
                    if rec.source_record_id:
                        self.ledger.link(rec.source_record_id, rec.memory_space_id, rec.id)
        if deletes:
            self._remove(sorted({mid for _, mid in deletes}))


# -- scopes -----------------------------------------------------------------------------------


class ScopeSource:
    """The scope of one call of a component: explicit, else the request's, else the constructor's (R1).

    An *explicit* scope is an argument of the call (``invoke(q, scope=...)``,
    ``vector_store_kwargs={"scope": ...}``). An *ambient* one travels with the request's context
    (LangChain's ``config["configurable"]["scope"]``, LlamaIndex's ``recall_scope``), and a
    context is lost where a thread pool does not copy it. So once a component has served an
    ambient scope, or while ``active()`` says one is in use elsewhere (a ``recall_scope`` block in
    another thread), a call that finds neither raises :class:`~shared_core.ScopeError` instead of
    using the constructor's scope: a worker that lost its request must not answer as another
    identity.

    Args:
        default: the constructor's scope (``None``: per call or per request only).
        active: whether an ambient scope mechanism is in use anywhere.
    """

    def __init__(self, default: Any, *, active: Callable[[], bool] = lambda: False) -> None:
        self.default: Scope | None = coerce_scope(default) if default is not None else None
        self._active = active
        self._ambient_seen = False

    def resolve(self, explicit: Any = None, ambient: Any = None) -> Scope:
        """The scope of this call: ``explicit``, else ``ambient``, else the constructor's.

        Raises:
            ScopeError: with no scope at all, an incomplete one, or no ambient scope where one
                is in use (see the class docstring).
        """
        if explicit is not None:
            return coerce_scope(explicit)
        if ambient is not None:
            scope = coerce_scope(ambient)
            self._ambient_seen = True
            return scope
        if self.default is None:
            raise ScopeError("no scope: give scope= to the component, or one per request (there is no unscoped search)")
        if self._ambient_seen or self._active():
            raise ScopeError(
                "no per-request scope found for this call, while this component serves per-request "
                "scopes; it does not fall back to its constructor scope (a worker thread or task that "
                "did not copy the request's context?)"
            )
        return self.default


# -- options ----------------------------------------------------------------------------------


def positive_int(name: str, value: object, *, allow_none: bool = True) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a positive integer (or ``None``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer")


def check_plain(mode: object, default: Scope | None) -> None:
    """Validate a ``plain_documents`` option."""
    if mode not in PLAIN_MODES:
        raise ConfigError(f"plain_documents must be one of {list(PLAIN_MODES)}, not {mode!r}")
    if mode == "owned" and default is None:
        raise ConfigError("plain_documents='owned' needs scope=: plain documents belong to that scope")


def core_embedder(obj: Any) -> Embedder:
    """The core :class:`Embedder` of an embedding (the bundled model's wrappers unwrap to it)."""
    inner = getattr(obj, "core_embedder", None)
    if isinstance(inner, Embedder):
        return inner
    return as_embedder(obj)


def calibrated_min_score(*objs: Any) -> float:
    """The calibrated threshold of the first object that has one, else the seeds' 0.78."""
    for obj in objs:
        value = getattr(obj, "recommended_min_score", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return SEED_MIN_SCORE


def default_gate(gate: RecallGate | None, *embeddings: Any, **kwargs: Any) -> RecallGate:
    """``gate``, else a gate at the calibrated threshold of the embedding in use (``kwargs``: sinks, clock)."""
    if gate is not None:
        return gate
    return RecallGate(GateConfig(min_score=calibrated_min_score(*embeddings)), **kwargs)


# -- feedback ---------------------------------------------------------------------------------


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))


def recall_feedback(
    result: GateResult, component: str, *, plain: int = 0, semantic: bool = True
) -> str | None:
    """The warning line for a gate run that accepted nothing from a non-empty list, else ``None``.

    Args:
        result: the gate result.
        component: the component's name.
        plain: how many candidates carried no record metadata.
        semantic: whether a semantic score was computed (an embedding or ``score_key``).
    """
    audit = result.audit
    if result.accepted or audit.input_count == 0:
        return None
    line = f"{component} accepted 0 of {audit.input_count} candidates ({_counts(audit.counts)})"
    hints = []
    if plain:
        hints.append(
            f"{plain} carry no record metadata: add user_id, agent_id, memory_space_id, updated_at "
            "(ISO 8601) and status to their metadata, write them through GatedVectorStore, or pass "
            "plain_documents='owned'"
        )
    if audit.counts.get("low_score") and not semantic:
        hints.append("no semantic score was computed: pass an embedding (or score_key=)")
    return "; ".join([line, *hints])


def write_feedback(decisions: Sequence[WriteDecision], component: str) -> str | None:
    """The warning line for a write batch that stored nothing, else ``None``."""
    kept = (WriteAction.WRITE, WriteAction.UPDATE, WriteAction.MERGE)
    if not decisions or any(d.action in kept for d in decisions):
        return None
    actions: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for d in decisions:
        actions[d.action.value] = actions.get(d.action.value, 0) + 1
        for r in d.reasons:
            reasons[r.value] = reasons.get(r.value, 0) + 1
    line = f"{component} stored 0 of {len(decisions)} documents ({_counts(actions)}; reasons {_counts(reasons)})"
    hints = []
    if "quarantine" in actions:
        hints.append(
            "held ones wait for review (quarantine_list, quarantine_approve); for a user's own "
            "statements set origin='user_explicit' on the write filter"
        )
    if "scope_mismatch" in reasons:
        hints.append("metadata naming another owner is refused: the write filter's scope is the owner")
    return "; ".join([line, *hints])
