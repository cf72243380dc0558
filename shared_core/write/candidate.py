"""What a write asks for and what the write gate decided: candidates, decisions, reasons, ids."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from enum import Enum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError
from ..model import MemoryRecord, Origin, Scope, Status, Tier, Visibility
from ..model.fields import Key, OptDatetime, OptKey, StrTuple
from ..text import normalize

__all__ = [
    "CANDIDATE_FIELDS",
    "MemoryCandidate",
    "WriteAction",
    "WriteDecision",
    "WriteReason",
    "candidate_from_mapping",
    "memory_id",
    "parse_candidate",
    "validation_problems",
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
    OWNER_REQUEST = "owner_request"  # orders to the assistant, written: the user's own request (W5)
    QUOTED_ATTACK = "quoted_attack"  # an order quoted in the user's own note about an attack, written (W5)
    UNTRUSTED = "untrusted"
    DUPLICATE = "duplicate"
    SUPERSEDES = "supersedes"
    PROMOTED = "promoted"
    SCOPE_MISMATCH = "scope_mismatch"
    NOT_OWNER = "not_owner"
    CHANGED_FACT = "changed_fact"
    REBASED = "rebased"
    TRUST_LOWERED = "trust_lowered"


class MemoryCandidate(BaseModel):
    """A memory someone wants to store; the write gate decides what becomes of it.

    The one record contract of every way in (``store.add``, ``recall-gate add``, MCP
    ``memory_save``, both adapters' write filters): every field of
    :class:`~shared_core.model.MemoryRecord` a memory system can export (``created_at``,
    ``updated_at``, ``valid_from``/``valid_to``, ``supersedes`` as one id or a list,
    ``superseded_by``, ``tier``, ``evidence_count``, ...), plus two write-only claims: ``cited``
    (grounded in a source) and ``confirmations`` (independent confirmations seen). Fields are
    normalised once, here: times to aware UTC, a single id to a one-element tuple, ``""`` to
    ``None``. Whether a claim that *raises* trust (origin, tier, visibility, confirmations,
    evidence, citation) is honoured is the write path's decision (:mod:`shared_core.write.authority`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    title: str = ""
    body: str
    user_id: Key
    agent_id: Key
    memory_space_id: Key
    route_id: OptKey = None
    visibility: Visibility = Visibility.PRIVATE
    status: Status = Status.APPROVED
    tier: Tier | None = None
    origin: Origin | None = None
    cited: bool = False
    confirmations: int = Field(default=0, ge=0, le=1_000_000)
    evidence_count: int | None = Field(default=None, ge=0, le=1_000_000)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    sensitivity: str | None = None
    verification_status: str | None = None
    source: str = ""
    tags: StrTuple = ()
    source_record_id: OptKey = None
    entity: str | None = None
    attribute: str | None = None
    created_at: OptDatetime = None
    updated_at: OptDatetime = None
    valid_from: OptDatetime = None
    valid_to: OptDatetime = None
    expires_at: OptDatetime = None
    deleted_at: OptDatetime = None
    supersedes: StrTuple = ()
    superseded_by: OptKey = None
    id: OptKey = None

    @property
    def scope(self) -> Scope:
        """The scope the memory will belong to."""
        return Scope(
            user_id=self.user_id,
            agent_id=self.agent_id,
            memory_space_id=self.memory_space_id,
            route_id=self.route_id,
        )


CANDIDATE_FIELDS = frozenset(MemoryCandidate.model_fields)
"""Every field name of the record contract."""

_PROBLEMS = {
    "missing": "required",
    "extra_forbidden": "unknown field",
    "datetime_type": "not a datetime",
    "datetime_parsing": "not a datetime",
    "datetime_from_date_parsing": "not a datetime",
    "datetime_object_invalid": "not a datetime",
    "string_type": "not a string",
    "string_too_short": "empty",
    "string_too_long": "too long",
    "string_pattern_mismatch": "empty or holds control characters",
    "enum": "not an allowed value",
    "bool_type": "not a boolean",
    "bool_parsing": "not a boolean",
    "int_type": "not an integer",
    "int_parsing": "not an integer",
    "int_from_float": "not an integer",
    "float_type": "not a number",
    "float_parsing": "not a number",
    "finite_number": "not a finite number",
    "greater_than_equal": "out of range",
    "less_than_equal": "out of range",
    "tuple_type": "not a list",
    "dict_type": "not an object",
    "model_type": "not an object",
}


def validation_problems(exc: ValidationError) -> tuple[str, ...]:
    """``"<field>: <problem>"`` for each error of a validation, never the offending value."""
    out: list[str] = []
    for err in exc.errors(include_input=False, include_url=False):
        loc = [str(p) for p in err.get("loc", ())]
        field = loc[0] if loc else "record"
        problem = _PROBLEMS.get(str(err.get("type")), "invalid")
        item = f"{field}: {problem}"
        if item not in out:
            out.append(item)
    return tuple(out)


def parse_candidate(raw: object) -> MemoryCandidate | tuple[str, ...]:
    """A candidate from a mapping (or a candidate), else the problems naming each bad field."""
    if isinstance(raw, MemoryCandidate):
        return raw
    if not isinstance(raw, Mapping):
        return (f"record: not an object ({type(raw).__name__})",)
    if any(not isinstance(k, str) for k in raw):
        return ("record: a field name is not a string",)
    try:
        return MemoryCandidate.model_validate(dict(raw))
    except ValidationError as exc:
        return validation_problems(exc)


class WriteDecision(BaseModel):
    """What happened to one candidate. ``id`` is the memory (or quarantine) id, if any."""

    model_config = ConfigDict(frozen=True)

    index: int
    action: WriteAction
    id: str | None = None
    reasons: tuple[WriteReason, ...] = ()
    findings: tuple[str, ...] = ()  # rule names of screen findings, never matched text
    detail: tuple[str, ...] = ()  # "<field>: <problem>" for invalid input, never the value
    existing_id: str | None = None
    dry_run: bool = False
    candidate: MemoryCandidate | None = Field(default=None, exclude=True, repr=False)
    record: MemoryRecord | None = Field(default=None, exclude=True, repr=False)

    @property
    def stored(self) -> bool:
        """True when the candidate's content is now in long-term memory (written or updated)."""
        return self.action in (WriteAction.WRITE, WriteAction.UPDATE)


def _canonical(text: str) -> str:
    """Normalised text with whitespace collapsed: trailing or doubled spaces make no new memory."""
    return " ".join(normalize(text).split())


@lru_cache(maxsize=512)
def memory_id(scope: Scope, title: str, body: str) -> str:
    """Deterministic id: the same normalised text in the same scope gets the same id.

    Cached (a few hundred entries): one write asks for the id of the same text several times
    (contract, tombstones, dedup, commit), and the repeats are free.
    """
    key = "\x1f".join(
        [
            scope.memory_space_id,
            scope.route_id or "",
            scope.user_id,
            scope.agent_id,
            _canonical(title),
            _canonical(body),
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
        raise InputError(f"invalid memory: {'; '.join(validation_problems(exc))}") from None
