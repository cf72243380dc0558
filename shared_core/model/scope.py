"""``Scope``: who is asking, the partition every query and write is confined to (R1, R2)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ..errors import ScopeError
from .fields import check_key, error_fields

__all__ = ["Scope", "coerce_scope"]


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
        return check_key(value, info.field_name)

    @field_validator("route_id")
    @classmethod
    def _route(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        return check_key(value, "route_id")

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
        fields = error_fields(exc)
        raise ScopeError(f"invalid scope: problem with {fields}") from None
