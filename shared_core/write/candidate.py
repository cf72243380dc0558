"""What a write asks for and what the write gate decided: candidates, decisions, reasons, ids."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from ..model import MemoryRecord, Origin, Scope, Status, Tier, Visibility, check_key
from ..text import normalize
from ..timeutil import parse_datetime

__all__ = [
    "MemoryCandidate",
    "WriteAction",
    "WriteDecision",
    "WriteReason",
    "candidate_from_mapping",
    "memory_id",
]


class WriteAction(str, Enum):
    """What the write gate did with a candidate."""

    WRITE = "write"
    UPDATE = "update"  # wrote a new memory that supersedes an existing one
    MERGE = "merge"  # duplicate: the existing memory gained evidence
    QUARANTINE = "quarantine"
    REJECT = "reject"


class WriteReason(str, Enum):
    """Closed set of reasons attached to write decisions."""

    INVALID = "invalid"
    TOO_LARGE = "too_large"
    TOMBSTONED = "tombstoned"
    SECRET = "secret"
    PII = "pii"
    PII_MASKED = "pii_masked"
    INJECTION = "injection"
    HIDDEN_TEXT = "hidden_text"
    UNTRUSTED = "untrusted"
    DUPLICATE = "duplicate"
    SUPERSEDES = "supersedes"
    PROMOTED = "promoted"


class MemoryCandidate(BaseModel):
    """A memory someone wants to store; the write gate decides what becomes of it."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    title: str = ""
    body: str
    user_id: str
    agent_id: str
    memory_space_id: str
    route_id: str | None = None
    visibility: Visibility = Visibility.PRIVATE
    status: Status = Status.APPROVED
    tier: Tier | None = None
    origin: Origin | None = None
    cited: bool = False
    confirmations: int = Field(default=0, ge=0)
    source: str = ""
    tags: tuple[str, ...] = ()
    source_record_id: str | None = None
    entity: str | None = None
    attribute: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    updated_at: datetime | None = None
    supersedes: tuple[str, ...] = ()
    id: str | None = None

    @field_validator("user_id", "agent_id", "memory_space_id")
    @classmethod
    def _keys(cls, value: str, info: Any) -> str:
        return check_key(value, info.field_name)

    @field_validator("id", "route_id", "source_record_id")
    @classmethod
    def _opt_keys(cls, value: str | None, info: Any) -> str | None:
        return None if value in (None, "") else check_key(value, info.field_name)

    @field_validator("valid_from", "valid_to", "expires_at", "updated_at", mode="before")
    @classmethod
    def _times(cls, value: object) -> object:
        return None if value in (None, "") else parse_datetime(value)

    @property
    def scope(self) -> Scope:
        """The scope the memory will belong to."""
        return Scope(
            user_id=self.user_id,
            agent_id=self.agent_id,
            memory_space_id=self.memory_space_id,
            route_id=self.route_id,
        )


class WriteDecision(BaseModel):
    """What happened to one candidate. ``id`` is the memory (or quarantine) id, if any."""

    model_config = ConfigDict(frozen=True)

    index: int
    action: WriteAction
    id: str | None = None
    reasons: tuple[WriteReason, ...] = ()
    findings: tuple[str, ...] = ()  # rule names of screen findings, never matched text
    existing_id: str | None = None
    dry_run: bool = False
    candidate: MemoryCandidate | None = Field(default=None, exclude=True, repr=False)
    record: MemoryRecord | None = Field(default=None, exclude=True, repr=False)

    @property
    def stored(self) -> bool:
        """True when the candidate's content is now in long-term memory (written or updated)."""
        return self.action in (WriteAction.WRITE, WriteAction.UPDATE)


def memory_id(scope: Scope, title: str, body: str) -> str:
    """Deterministic id: the same normalised text in the same scope gets the same id."""
    key = "\x1f".join(
        [
            scope.memory_space_id,
            scope.route_id or "",
            scope.user_id,
            scope.agent_id,
            normalize(title),
            normalize(body),
        ]
    )
    return "mem_" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def candidate_from_mapping(data: Mapping[str, Any]) -> MemoryCandidate:
    """Validate a mapping as a candidate.

    Raises:
        InputError: naming the invalid fields (never their values).
    """
    try:
        return MemoryCandidate.model_validate(dict(data))
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InputError(f"invalid memory: problem with {', '.join(fields) or 'input'}") from None
