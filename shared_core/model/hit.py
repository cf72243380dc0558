"""``Hit`` (a retrieved memory with channel scores and ranks) and ``Rejection`` (R8, R12)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .enums import Reason
from .fields import StrTuple
from .record import MemoryRecord

__all__ = ["Hit", "Rejection", "finite_or_none"]


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
