"""Chroma plumbing: clients, one collection per memory space, record <-> metadata, errors.

Chroma is the source of truth (H2). Each memory space gets its own collection (cosine space), so
a scoped query's cost follows the scope, not the whole store (FACTS: a ``where`` filter on one big
shared collection grows with the collection). Inside a collection, the partition of a memory is
two metadata fields compared with positive equality only (``$ne``/``$nin`` would match records that
lack the key): ``rg_route`` (the route or ``""``) and ``rg_bucket`` (``"shared"`` or the owner).

Metadata values must be str/int/float/bool, so timestamps are stored as ISO strings plus epoch
seconds (``*_ts``) and tuples as JSON strings. The collection records the embedding model's name and
dimension, and a store refuses to mix models in one collection.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .errors import EmbeddingError, StoreError, StoreUnavailableError
from .models import MemoryRecord, Scope, Visibility
from .timeutil import parse_datetime

__all__ = [
    "SHARED_BUCKET",
    "bucket_of",
    "chroma_call",
    "collection_name",
    "partition_where",
    "record_from_chroma",
    "record_to_chroma",
    "scope_where",
]

SHARED_BUCKET = "shared"
SCHEMA_VERSION = 1
_TIME_FIELDS = ("created_at", "updated_at", "valid_from", "valid_to", "deleted_at", "expires_at")
_TUPLE_FIELDS = ("tags", "supersedes")
_OPTIONAL_STR = (
    "route_id",
    "origin",
    "superseded_by",
    "source_record_id",
    "verification_status",
    "entity",
    "attribute",
)

T = TypeVar("T")


def collection_name(prefix: str, memory_space_id: str) -> str:
    """A valid, stable Chroma collection name for a memory space."""
    slug = re.sub(r"[^a-zA-Z0-9]", "", memory_space_id)[:24]
    digest = hashlib.sha256(memory_space_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}-{slug}-{digest}" if slug else f"{prefix}-{digest}"


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


def record_to_chroma(record: MemoryRecord) -> tuple[str, dict[str, Any]]:
    """The Chroma document (body) and metadata of a record."""
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
    meta["rg_schema"] = SCHEMA_VERSION
    return record.body, meta


def record_from_chroma(mid: str, document: str | None, meta: Mapping[str, Any]) -> MemoryRecord:
    """Rebuild a record from what :func:`record_to_chroma` stored.

    Raises:
        pydantic.ValidationError: if the stored metadata is not a valid record.
    """
    data: dict[str, Any] = {"id": mid, "body": document or ""}
    for key, value in meta.items():
        if key.startswith("rg_") or key.endswith("_ts"):
            continue
        if key in _TUPLE_FIELDS and isinstance(value, str):
            data[key] = json.loads(value)
        elif key in _TIME_FIELDS:
            data[key] = parse_datetime(value)
        else:
            data[key] = value
    return MemoryRecord.model_validate(data)


def check_collection_embedding(meta: Mapping[str, Any] | None, name: str, dimension: int, space: str) -> None:
    """Refuse to use a collection built with another embedding model or dimension.

    Raises:
        EmbeddingError: naming both models.
    """
    meta = meta or {}
    have_name, have_dim = meta.get("rg_embedding"), meta.get("rg_dim")
    if have_name is None:
        return
    if have_name != name or int(have_dim or 0) != dimension:
        raise EmbeddingError(
            f"memory space {space!r} was indexed with embedding {have_name!r} (dim {have_dim}); "
            f"this store uses {name!r} (dim {dimension}). Use the same model or a new store."
        )


def _is_unavailable(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    text = " ".join(str(e) for e in _chain(exc)).lower()
    return bool(
        names & {"ConnectError", "ConnectTimeout", "ReadTimeout", "RemoteProtocolError", "ConnectionError"}
        or isinstance(exc, (ConnectionError, TimeoutError))
        or "connection refused" in text
        or "could not connect" in text
    )


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def chroma_call(what: str, fn: Callable[[], T], *, retries: int = 0) -> T:
    """Run a Chroma call, mapping its failures to the project's typed errors.

    Args:
        what: the operation, named in error messages.
        fn: the call.
        retries: extra attempts after an internal Chroma error, for idempotent reads only: a
            ``chroma run`` server can fail a read that races a write from another client
            ("Error finding id") and answer the same read a moment later.

    Raises:
        StoreUnavailableError: the server cannot be reached (retryable).
        StoreError: any other Chroma failure (message names the operation and error type only).
    """
    for attempt in range(retries + 1):
        try:
            return fn()
        except (StoreError, EmbeddingError):
            raise
        except Exception as exc:
            if _is_unavailable(exc):
                raise StoreUnavailableError(
                    f"Chroma is unreachable during {what} ({type(exc).__name__})"
                ) from None
            if attempt < retries and type(exc).__name__ == "InternalError":
                time.sleep(0.02 * (attempt + 1))
                continue
            raise StoreError(f"Chroma failed during {what} ({type(exc).__name__})") from None
    raise AssertionError("unreachable")  # pragma: no cover
