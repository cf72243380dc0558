"""Pydantic models shared by every part of recall-gate.

The record schema follows the seeds (``MemoryHit`` / ``MemoryRecord``, snake_case): scope fields,
approval ``status``, ``tier``, ``visibility``, origin, tags, timestamps, validity window,
supersede links, deletion and retention, sensitivity, confidence, evidence count and the
``source_record_id`` that deletion lineage follows.

Scores carried by a :class:`Hit` (see DESIGN "Scores"; bounded and query-independent):

``score``
    semantic similarity, cosine in ``[-1, 1]`` between the query and memory embeddings (the
    store computes it itself), or, for hits imported from elsewhere, the similarity the exporter
    measured (the seeds' meaning of ``score``).
``lexical_score``
    keyword-match score in ``[0, 1]``: the IDF-weighted share of query terms the memory contains.

Raw channel values (BM25 score, vector distance, ranks, fused RRF value) are provenance only;
the gate never thresholds on them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from .errors import ScopeError
from .timeutil import to_utc

__all__ = [
    "Hit",
    "MemoryRecord",
    "Origin",
    "Reason",
    "Rejection",
    "Scope",
    "Status",
    "Tier",
    "Visibility",
]


class Status(str, Enum):
    """Approval status of a memory (R5)."""

    APPROVED = "approved"
    DRAFT = "draft"
    REJECTED = "rejected"
    QUARANTINED = "quarantined"


class Visibility(str, Enum):
    """Who may see a memory inside its memory space (R2)."""

    PRIVATE = "private"
    SHARED = "shared"


class Tier(str, Enum):
    """Confidence tier of a memory (W7, R7)."""

    TENTATIVE = "tentative"
    CONFIRMED = "confirmed"
    WORKING = "working"


class Origin(str, Enum):
    """Where a memory came from (W3)."""

    USER_EXPLICIT = "user_explicit"
    AGENT_INFERRED = "agent_inferred"
    EXTERNAL_VERIFIED = "external_verified"
    EXTERNAL_UNVERIFIED = "external_unverified"
    AGENT_SUMMARY = "agent_summary"


class Reason(str, Enum):
    """Closed set of reasons a hit is rejected (R8).

    ``policy`` is the reason of rules a user adds without a reason of their own.
    """

    INVALID = "invalid"
    DELETED = "deleted"
    QUARANTINED = "quarantined"
    SCOPE_MISMATCH = "scope_mismatch"
    EXPIRED = "expired"
    LOW_SCORE = "low_score"
    STALE = "stale"
    NOT_APPROVED = "not_approved"
    SUPERSEDED = "superseded"
    TIER_EXCLUDED = "tier_excluded"
    OVER_BUDGET = "over_budget"
    POLICY = "policy"


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_MAX_ID = 256


def _check_key(value: str, field: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string")
    if not value.strip():
        raise ValueError(f"{field} must not be empty")
    if len(value) > _MAX_ID:
        raise ValueError(f"{field} is longer than {_MAX_ID} characters")
    if _CONTROL.search(value):
        raise ValueError(f"{field} contains control characters")
    return value


def _empty_to_none(value: object) -> object:
    return None if value == "" else value


def _aware_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)


def _req_aware_utc(value: datetime) -> datetime:
    return to_utc(value)


def _str_tuple(value: object) -> object:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    return value


# Parsing is pydantic's own (ISO 8601 strings, "Z", epoch numbers); then naive -> UTC, aware -> UTC.
OptDatetime = Annotated[datetime | None, BeforeValidator(_empty_to_none), AfterValidator(_aware_utc)]
ReqDatetime = Annotated[datetime, AfterValidator(_req_aware_utc)]
# Scope keys: non-empty, at most 256 characters, no control characters (checked in pydantic-core).
Key = Annotated[
    str,
    StringConstraints(
        min_length=1, max_length=_MAX_ID, pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$"
    ),
]
StrTuple = Annotated[tuple[str, ...], BeforeValidator(_str_tuple)]


class Scope(BaseModel):
    """Who is asking: the partition every query and write is confined to (R1).

    ``route_id`` (optional) separates channels or accounts of one agent; a memory with a route
    is only visible to queries with the same route, and a memory without one only to queries
    without one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    user_id: str
    agent_id: str
    memory_space_id: str
    route_id: str | None = None

    @field_validator("user_id", "agent_id", "memory_space_id")
    @classmethod
    def _non_empty(cls, value: str, info: Any) -> str:
        return _check_key(value, info.field_name)

    @field_validator("route_id")
    @classmethod
    def _route(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        return _check_key(value, "route_id")

    @classmethod
    def parse(cls, text: str) -> Scope:
        """Parse ``user=U,agent=A,space=S[,route=R]`` (the command-line form).

        Raises:
            ScopeError: if a field is missing, unknown, repeated or empty.
        """
        names = {"user": "user_id", "agent": "agent_id", "space": "memory_space_id", "route": "route_id"}
        values: dict[str, str] = {}
        for part in (p for p in text.split(",") if p.strip()):
            key, sep, val = part.partition("=")
            key = key.strip()
            if not sep or key not in names:
                raise ScopeError(f"scope part {key!r} is not one of user=, agent=, space=, route=")
            if names[key] in values:
                raise ScopeError(f"scope field {key!r} given twice")
            values[names[key]] = val.strip()
        return coerce_scope(values)

    def where(self) -> dict[str, Any]:
        """The scope as positive equality filters (memory space, route and owner or shared)."""
        return {
            "memory_space_id": self.memory_space_id,
            "route_id": self.route_id or "",
            "user_id": self.user_id,
            "agent_id": self.agent_id,
        }


def coerce_scope(value: Scope | Mapping[str, Any] | None) -> Scope:
    """Return a :class:`Scope` from a scope or a mapping.

    Raises:
        ScopeError: if there is no scope or it is incomplete (never an unscoped search).
    """
    if isinstance(value, Scope):
        return value
    if value is None:
        raise ScopeError(
            "a scope (user_id, agent_id, memory_space_id) is required; unscoped search is refused"
        )
    if not isinstance(value, Mapping):
        raise ScopeError(f"a scope must be a Scope or a mapping, not {type(value).__name__}")
    try:
        return Scope.model_validate(dict(value))
    except Exception as exc:  # pydantic.ValidationError; names fields only
        fields = _error_fields(exc)
        raise ScopeError(f"invalid scope: problem with {fields}") from None


def _error_fields(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        locs = sorted({".".join(str(p) for p in e.get("loc", ())) or "value" for e in errors()})
        return ", ".join(locs) or "input"
    return "input"


class MemoryRecord(BaseModel):
    """One memory: one fact with its scope, status and lifecycle (the seeds' schema)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: Key
    title: str = ""
    body: str
    user_id: Key
    agent_id: Key
    memory_space_id: Key
    route_id: Annotated[Key | None, BeforeValidator(_empty_to_none)] = None
    visibility: Visibility = Visibility.PRIVATE
    status: Status = Status.APPROVED
    tier: Tier = Tier.CONFIRMED
    source: str = ""
    origin: Origin | None = None
    tags: StrTuple = ()
    created_at: OptDatetime = None
    updated_at: ReqDatetime
    valid_from: OptDatetime = None
    valid_to: OptDatetime = None
    supersedes: StrTuple = ()
    superseded_by: Annotated[Key | None, BeforeValidator(_empty_to_none)] = None
    deleted_at: OptDatetime = None
    expires_at: OptDatetime = None
    sensitivity: str = "low"
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    evidence_count: int = Field(default=1, ge=0)
    source_record_id: Annotated[Key | None, BeforeValidator(_empty_to_none)] = None
    verification_status: str | None = None
    entity: str | None = None
    attribute: str | None = None

    @property
    def scope(self) -> Scope:
        """The scope this memory belongs to."""
        return Scope(
            user_id=self.user_id,
            agent_id=self.agent_id,
            memory_space_id=self.memory_space_id,
            route_id=self.route_id,
        )


_HIT_FIELDS = frozenset(
    {
        "score",
        "lexical_score",
        "vector_rank",
        "keyword_rank",
        "vector_distance",
        "bm25_score",
        "fused_score",
        "fused_rank",
        "channels",
        "channel_ranks",
    }
)


class Hit(BaseModel):
    """A retrieved memory with its channel scores and ranks (the provenance of R12)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    record: MemoryRecord
    score: float | None = Field(default=None, ge=-1.0, le=1.0)
    lexical_score: float | None = Field(default=None, ge=0.0, le=1.0)
    vector_rank: int | None = Field(default=None, ge=1)
    keyword_rank: int | None = Field(default=None, ge=1)
    vector_distance: float | None = None
    bm25_score: float | None = None
    fused_score: float | None = None
    fused_rank: int | None = Field(default=None, ge=1)
    channels: StrTuple = ()
    channel_ranks: dict[str, int] | None = None

    @property
    def id(self) -> str:
        """The memory id."""
        return self.record.id

    @model_validator(mode="before")
    @classmethod
    def _reject_bool_scores(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for key in ("score", "lexical_score"):
                if isinstance(data.get(key), bool):
                    raise ValueError(f"{key} must be a number, not a boolean")
        return data

    @classmethod
    def from_flat(cls, data: Mapping[str, Any]) -> Hit:
        """Build a hit from the seeds' flat ``MemoryHit`` shape (record fields plus ``score``).

        Raises:
            pydantic.ValidationError: if a field is missing or invalid.
        """
        record = {k: v for k, v in data.items() if k not in _HIT_FIELDS}
        hit = {k: v for k, v in data.items() if k in _HIT_FIELDS}
        return cls.model_validate({"record": record, **hit})

    def provenance(self) -> dict[str, Any]:
        """Where this hit came from: channels, ranks, scores, validity and source (R12)."""
        r = self.record
        return {
            "channels": list(self.channels),
            "semantic_score": self.score,
            "lexical_score": self.lexical_score,
            "vector_rank": self.vector_rank,
            "vector_distance": self.vector_distance,
            "keyword_rank": self.keyword_rank,
            "bm25_score": self.bm25_score,
            "fused_score": self.fused_score,
            "fused_rank": self.fused_rank,
            "channel_ranks": dict(self.channel_ranks) if self.channel_ranks else None,
            "valid_from": r.valid_from.isoformat() if r.valid_from else None,
            "valid_to": r.valid_to.isoformat() if r.valid_to else None,
            "verification_status": r.verification_status,
            "source_record_id": r.source_record_id,
        }


def finite_or_none(value: float | None) -> bool:
    """True when ``value`` is None or a finite real number (not a bool)."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Rejection:
    """A hit the gate did not accept, with the primary reason and every failed rule (R8).

    ``title`` is for operators' displays; audit records carry only ``id`` and reasons.
    ``rules`` names the failed rules (or ``parse:<field>`` for a hit that could not be parsed).
    """

    id: str
    title: str
    reason: Reason
    reasons: tuple[Reason, ...]
    rules: tuple[str, ...] = ()
    hit: Hit | None = field(default=None, repr=False, compare=False)
