"""The metadata codec: one flat encoding of a :class:`MemoryRecord` for every vector store.

Chroma, LangChain and LlamaIndex vector stores all hold scalar metadata only (str, int, float,
bool). A record is stored as its body (the document) plus flat metadata: every set record field
under its own name, tuples as JSON strings, timestamps as ISO strings plus epoch seconds
(``<field>_ts``, for range filters), and three bookkeeping keys:

``rg_route``
    the route or ``""`` (positive equality only: ``$ne``/``$nin`` would match records lacking it);
``rg_bucket``
    ``"shared"`` or the owner (``p:<len>:<user>:<agent>``): the partition inside a memory space;
``rg_schema``
    the codec version; its presence says "this metadata is a record the write gate built".

The same encoding is written by :class:`~shared_core.store.MemoryStore` and by both adapters'
write filters, so a collection written through one is readable through the others (P1).
Decoding ignores keys that are not record fields (framework bookkeeping such as LlamaIndex's
``_node_content``, user metadata), so records can be read from any store that kept the keys.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

from .enums import Visibility
from .record import MemoryRecord
from .scope import Scope

__all__ = [
    "RECORD_FIELDS",
    "SCHEMA_KEY",
    "SCHEMA_VERSION",
    "SHARED_BUCKET",
    "bucket_of",
    "decode_metadata",
    "encode_record",
    "is_encoded",
    "partition_where",
    "record_from_metadata",
    "scope_where",
    "with_clears",
]

SHARED_BUCKET = "shared"
SCHEMA_VERSION = 1
SCHEMA_KEY = "rg_schema"
RECORD_FIELDS = frozenset(MemoryRecord.model_fields)
_TIME_FIELDS = ("created_at", "updated_at", "valid_from", "valid_to", "deleted_at", "expires_at")
_TUPLE_FIELDS = ("tags", "supersedes")


def bucket_of(user_id: str, agent_id: str, visibility: Visibility) -> str:
    """The owner bucket of a memory: ``shared`` or an unambiguous user/agent key."""
    if visibility is Visibility.SHARED:
        return SHARED_BUCKET
    return f"p:{len(user_id)}:{user_id}:{agent_id}"


def partition_where(route_id: str | None, bucket: str) -> dict[str, Any]:
    """Chroma ``where`` for one partition (positive equality only)."""
    return {"$and": [{"rg_route": route_id or ""}, {"rg_bucket": bucket}]}


def scope_where(scope: Scope) -> dict[str, Any]:
    """Chroma ``where`` for everything a scope may see inside its space's collection (R1, R2)."""
    private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
    return {
        "$and": [
            {"rg_route": scope.route_id or ""},
            {"$or": [{"rg_bucket": private}, {"rg_bucket": SHARED_BUCKET}]},
        ]
    }


def encode_record(record: MemoryRecord) -> tuple[str, dict[str, Any]]:
    """The document (body) and flat metadata of a record (see the module docstring)."""
    data = record.model_dump(mode="json", exclude={"id", "body"})
    meta: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TUPLE_FIELDS:
            meta[key] = json.dumps(list(value), ensure_ascii=False)
        elif key in _TIME_FIELDS:
            if value is not None:
                meta[key] = value
                meta[f"{key}_ts"] = getattr(record, key).timestamp()
        elif value is None:
            continue
        else:
            meta[key] = value
    meta["rg_route"] = record.route_id or ""
    meta["rg_bucket"] = bucket_of(record.user_id, record.agent_id, record.visibility)
    meta[SCHEMA_KEY] = SCHEMA_VERSION
    return record.body, meta


_CLEARABLE = tuple(
    k
    for f in sorted(RECORD_FIELDS - {"id", "body"})
    for k in ((f, f"{f}_ts") if f in _TIME_FIELDS else (f,))
)


def with_clears(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` with ``None`` for every record field it leaves out: what an upsert over an earlier version sends.

    Chroma merges an upsert's metadata into the stored one (a key left out keeps its old value, a
    key set to ``None`` is removed), and :func:`encode_record` leaves out the fields that are
    ``None``: without the clears, a correction deleted from under the memory it superseded
    would leave that memory's ``superseded_by`` and ``valid_to`` in Chroma, and a rewrite without
    ``expires_at`` would keep the old expiry. Sent for new memories too it would cost ~10% of an
    upsert, so the backend sends it for memories that may exist already.
    """
    return {**{k: None for k in _CLEARABLE if k not in meta}, **meta}


def is_encoded(meta: Mapping[str, Any]) -> bool:
    """True when ``meta`` holds a record written by :func:`encode_record`."""
    return SCHEMA_KEY in meta


def decode_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The record fields held in flat metadata, unvalidated (the caller validates).

    Keys that are not record fields are ignored; tuple fields stored as JSON strings are decoded
    (left as they are when they are not JSON: validation then names the field).
    """
    data: dict[str, Any] = {}
    for key, value in meta.items():
        if key not in RECORD_FIELDS or key in ("id", "body"):
            continue
        if key in _TUPLE_FIELDS and isinstance(value, str) and value.startswith("["):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        data[key] = value
    return data


def record_from_metadata(mid: str, document: str | None, meta: Mapping[str, Any]) -> MemoryRecord:
    """Rebuild a record from what :func:`encode_record` stored.

    Raises:
        pydantic.ValidationError: if the stored metadata is not a valid record.
    """
    return MemoryRecord.model_validate({**decode_metadata(meta), "id": mid, "body": document or ""})
