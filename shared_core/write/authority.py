"""Write authority: who owns a memory and how much it is trusted follow from the write path (W3, R1).

A :class:`WritePath` is the authority of one way into memory — a write filter, an MCP server, a CLI
call, the Python API. It is configured by whoever opened that way (the application, the operator),
never read from the data. A record that passes through it:

- **owner and place** (``user_id``, ``agent_id``, ``memory_space_id``, ``route_id``): when the path
  pins a scope, a record that names another one is rejected as ``scope_mismatch`` (never re-homed);
  a record that names none gets the path's;
- **trust** (``origin``, ``tier``, ``visibility: shared``, ``cited``, ``confirmations``,
  ``evidence_count``, ``verification_status``): a record may *lower* it, never raise it. A claim
  above the path's level is lowered to the path's (reason ``trust_lowered``), not rejected.

Two kinds of path:

- :meth:`WritePath.operator` — the Python API's and the operator's default (``store.add``,
  ``recall-gate add``): records name their owners (an export of many users imports as it is) and
  their claims are honoured, because the caller vouches for the file. Pass ``scope=`` to pin one
  owner.
- :meth:`WritePath.pinned` — an agent-facing path (MCP, a framework write filter): one scope, an
  origin ceiling (default ``agent_inferred``), no shared writes unless allowed, and no trust claims
  from the data.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..model import Origin, Scope, Tier, Visibility, coerce_scope

__all__ = ["ORIGIN_TRUST", "TIER_TRUST", "AuthorityResult", "WritePath", "apply_authority"]

ORIGIN_TRUST: dict[Origin, int] = {
    Origin.EXTERNAL_UNVERIFIED: 0,
    Origin.AGENT_SUMMARY: 1,
    Origin.AGENT_INFERRED: 2,
    Origin.EXTERNAL_VERIFIED: 3,
    Origin.USER_EXPLICIT: 4,
}
"""How much each origin is trusted, lowest first (a record may claim an origin at or below its path's)."""

TIER_TRUST: dict[Tier, int] = {Tier.TENTATIVE: 0, Tier.CONFIRMED: 1, Tier.WORKING: 2}
"""Tiers by how much they assert, lowest first."""

_ORIGINS = frozenset(o.value for o in Origin)
_TIERS = frozenset(t.value for t in Tier)
_SCOPE_FIELDS = ("user_id", "agent_id", "memory_space_id", "route_id")
_CLAIMS = ("confirmations", "evidence_count", "cited", "verification_status")


class WritePath(BaseModel):
    """The authority of one way into memory (see the module docstring).

    Attributes:
        name: a label for audit records (``"api"``, ``"cli"``, ``"mcp"``, ``"langchain"``...).
        scope: the pinned scope; ``None``: records name their owner (operator import).
        origin: the origin of this path, the ceiling of what a record may claim; ``None``: a
            record's own origin is honoured.
        tier: the highest tier a record may ask for; ``None``: no ceiling (the write policy still
            decides which origins may set a tier).
        allow_shared: records may be written ``shared`` (visible to the whole memory space).
        trust_claims: honour ``cited``, ``confirmations``, ``evidence_count`` and
            ``verification_status`` from records.
        cited: the grounding this path vouches for when ``trust_claims`` is off.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "api"
    scope: Scope | None = None
    origin: Origin | None = None
    tier: Tier | None = None
    allow_shared: bool = True
    trust_claims: bool = True
    cited: bool = False

    @classmethod
    def operator(cls, *, name: str = "api", scope: Scope | Mapping[str, Any] | None = None) -> WritePath:
        """The caller vouches for its records: owners and claims as given (optionally one scope)."""
        return cls(name=name, scope=None if scope is None else coerce_scope(scope))

    @classmethod
    def pinned(
        cls,
        scope: Scope | Mapping[str, Any],
        *,
        name: str = "agent",
        origin: Origin | str = Origin.AGENT_INFERRED,
        tier: Tier | str | None = None,
        allow_shared: bool = False,
        cited: bool = False,
    ) -> WritePath:
        """One scope, an origin ceiling, no trust claims from records (agent-facing paths)."""
        return cls(
            name=name,
            scope=coerce_scope(scope),
            origin=Origin(origin),
            tier=None if tier is None else Tier(tier),
            allow_shared=allow_shared,
            trust_claims=False,
            cited=cited,
        )


class AuthorityResult(BaseModel):
    """A record after the path's authority: the fields to validate, or the problems that reject it."""

    model_config = ConfigDict(frozen=True)

    fields: dict[str, Any] | None = None
    claimed: dict[str, Any] | None = None  # the record with the path's scope, before any claim was lowered
    mismatched: tuple[str, ...] = ()  # "<field>: not the caller's"
    lowered: tuple[str, ...] = ()  # the claims lowered to the path's level


def _norm(value: object) -> object:
    return None if value == "" else value


def apply_authority(raw: Mapping[str, Any], path: WritePath) -> AuthorityResult:
    """Apply ``path`` to one record mapping (see the module docstring); values are never inspected.

    Returns the mapping to validate, with scope and trust set by the path (and, in ``claimed``,
    the record as it came, so that a malformed claim is still rejected naming its field even
    when the path would have dropped it), or the scope fields the record claimed against the
    pinned scope. Unknown or malformed values are left for
    validation, which names the field.
    """
    fields = dict(raw)
    lowered: list[str] = []
    if path.scope is not None:
        pinned = path.scope.model_dump()
        mismatched = tuple(
            f"{key}: not the caller's"
            for key in _SCOPE_FIELDS
            if key in fields and _norm(fields[key]) is not None and _norm(fields[key]) != pinned[key]
        )
        if mismatched:
            return AuthorityResult(mismatched=mismatched)
        fields.update(pinned)
    as_given = dict(fields)
    if path.origin is not None:
        claimed = _norm(fields.get("origin"))
        if claimed is None:
            fields["origin"] = path.origin.value
        elif claimed in _ORIGINS and ORIGIN_TRUST[Origin(claimed)] > ORIGIN_TRUST[path.origin]:
            fields["origin"] = path.origin.value
            lowered.append("origin")
        # any other value is left for validation, which names the field
    claimed_tier = _norm(fields.get("tier"))
    if (
        path.tier is not None
        and claimed_tier in _TIERS
        and TIER_TRUST[Tier(claimed_tier)] > TIER_TRUST[path.tier]
    ):
        fields["tier"] = path.tier.value
        lowered.append("tier")
    if not path.allow_shared and fields.get("visibility") == Visibility.SHARED.value:
        fields["visibility"] = Visibility.PRIVATE.value
        lowered.append("visibility")
    if not path.trust_claims:
        for key in _CLAIMS:
            if key in fields and fields[key] not in (None, "", 0, False):
                lowered.append(key)
            fields.pop(key, None)
        fields["cited"] = path.cited
    return AuthorityResult(fields=fields, claimed=as_given, lowered=tuple(lowered))
