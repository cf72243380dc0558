"""The closed vocabularies of recall-gate: approval status, visibility, tier, origin, reasons."""

from __future__ import annotations

from enum import Enum

__all__ = ["Origin", "Reason", "Status", "Tier", "Visibility"]


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
    INJECTION = "injection"  # accepted hits that, read together, form an instruction (W5)
    POLICY = "policy"
