"""``MemoryRecord``: one memory with its scope, status and lifecycle (the seeds' schema).

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

from pydantic import BaseModel, ConfigDict, Field

from .enums import Origin, Status, Tier, Visibility
from .fields import Key, OptDatetime, OptKey, ReqDatetime, StrTuple
from .scope import Scope

__all__ = ["MemoryRecord"]


class MemoryRecord(BaseModel):
    """One memory: one fact with its scope, status and lifecycle (the seeds' schema)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    id: Key
    title: str = ""
    body: str
    user_id: Key
    agent_id: Key
    memory_space_id: Key
    route_id: OptKey = None
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
    superseded_by: OptKey = None
    deleted_at: OptDatetime = None
    expires_at: OptDatetime = None
    sensitivity: str = "low"
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    evidence_count: int = Field(default=1, ge=0)
    source_record_id: OptKey = None
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
