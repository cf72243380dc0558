"""The foreign write target, the metadata of stored documents, and the filter dialect (see the package docstring)."""

from __future__ import annotations

import contextlib
import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import ValidationError

from ..embedding import Embedder
from ..model import (
    SHARED_BUCKET,
    MemoryRecord,
    Scope,
    Visibility,
    bucket_of,
    decode_metadata,
    encode_record,
    is_encoded,
    record_from_metadata,
)
from ..model.codec import RECORD_FIELDS
from ..retrieval.partition import record_text
from ..write.candidate import CANDIDATE_FIELDS
from ..write.ledger import Ledger
from ..write.target import PartitionKey, partition_key

__all__ = [
    "BOOKKEEPING_KEYS",
    "PROVENANCE_KEY",
    "RESERVED_KEYS",
    "ForeignTarget",
    "Stored",
    "Where",
    "conditions_of",
    "is_plain",
    "matches",
    "partition_filter",
    "plain_defaults",
    "read_fields",
    "staged_batch",
    "stored_document",
    "user_metadata",
    "visible_filter",
    "write_fields",
]

PROVENANCE_KEY = "recall_gate"
"""Metadata key of an accepted document's provenance (R12)."""

Where = dict[str, Any]
"""An AND of conditions in Chroma's ``where`` syntax (see the module docstring)."""

Stored = tuple[str, str, Mapping[str, Any]]
"""What a store holds for one entry: ``(id, text, metadata)``."""


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

    def neighbours_many(
        self,
        records: Sequence[MemoryRecord],
        vectors: NDArray[np.float32],
        *,
        thresholds: Sequence[float],
        limit: int,
    ) -> None:
        """``None``: a foreign store answers one search per record, asked only for records that need it."""
        return None

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


@contextlib.contextmanager
def staged_batch(lock: Any, target: ForeignTarget | None, extras: Mapping[str, Any]) -> Iterator[None]:
    """One write batch of an adapter: under its write gate's lock, with the batch's extras staged.

    ``target`` is ``None`` when the adapter writes into a :class:`~shared_core.store.MemoryStore`
    (nothing foreign to stage).
    """
    with lock:
        if target is None:
            yield
        else:
            with target.staged(extras):
                yield

