"""Where a component's scope comes from (fail closed, R1)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ScopeError
from ..model import (
    Scope,
    coerce_scope,
)

__all__ = ["ScopeSource"]

# -- scopes -----------------------------------------------------------------------------------


class ScopeSource:
    """The scope of one call of a component: explicit, else the request's, else the constructor's (R1).

    An *explicit* scope is an argument of the call (``invoke(q, scope=...)``,
    ``vector_store_kwargs={"scope": ...}``). An *ambient* one travels with the request's context
    (LangChain's ``config["configurable"]["scope"]``, LlamaIndex's ``recall_scope``), and a
    context is lost where a thread pool does not copy it. So once a component has served an
    ambient scope, or while ``active()`` says one is in use elsewhere (a ``recall_scope`` block in
    another thread), a call that finds neither raises :class:`~shared_core.ScopeError` instead of
    using the constructor's scope: a worker that lost its request must not answer as another
    identity.

    Args:
        default: the constructor's scope (``None``: per call or per request only).
        active: whether an ambient scope mechanism is in use anywhere.
    """

    def __init__(self, default: Any, *, active: Callable[[], bool] = lambda: False) -> None:
        self.default: Scope | None = coerce_scope(default) if default is not None else None
        self._active = active
        self._ambient_seen = False

    def resolve(self, explicit: Any = None, ambient: Any = None) -> Scope:
        """The scope of this call: ``explicit``, else ``ambient``, else the constructor's.

        Raises:
            ScopeError: with no scope at all, an incomplete one, or no ambient scope where one
                is in use (see the class docstring).
        """
        if explicit is not None:
            return coerce_scope(explicit)
        if ambient is not None:
            scope = coerce_scope(ambient)
            self._ambient_seen = True
            return scope
        if self.default is None:
            raise ScopeError(
                "no scope: give scope= to the component, or one per request (there is no unscoped search)"
            )
        if self._ambient_seen or self._active():
            raise ScopeError(
                "no per-request scope found for this call, while this component serves per-request "
                "scopes; it does not fall back to its constructor scope (a worker thread or task that "
                "did not copy the request's context?)"
            )
        return self.default
