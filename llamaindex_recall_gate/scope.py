"""Per-request scope for LlamaIndex components whose standard methods take no scope (R1).

LlamaIndex calls ``retrieve(query)``, ``postprocess_nodes(nodes, query_bundle)`` and
``vector_store.query(query)`` without any notion of *who is asking*. The components of this package
take a scope at construction, and :func:`recall_scope` sets one for everything called inside a
``with`` block (a query engine, a chat engine, a fusion retriever...). It is a
:class:`contextvars.ContextVar`, so concurrent requests (threads, asyncio tasks) each see their own.

The per-request scope wins over the constructor's. With neither, the core raises
:class:`shared_core.ScopeError` before any retrieval work: there is no unscoped search.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from shared_core import Scope, coerce_scope

__all__ = ["current_scope", "recall_scope", "resolve_scope"]

ScopeLike = Scope | Mapping[str, Any]

_SCOPE: ContextVar[Scope | None] = ContextVar("recall_gate_scope", default=None)


@contextmanager
def recall_scope(scope: ScopeLike) -> Iterator[Scope]:
    """Run the block on behalf of ``scope``: every gated component called inside uses it.

    Example:
        >>> with recall_scope({"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}):
        ...     response = query_engine.query("when do we post?")

    Raises:
        ScopeError: if ``scope`` is missing or incomplete.
    """
    scope_obj = coerce_scope(scope)
    token = _SCOPE.set(scope_obj)
    try:
        yield scope_obj
    finally:
        _SCOPE.reset(token)


def current_scope() -> Scope | None:
    """The scope set by the innermost active :func:`recall_scope`, if any."""
    return _SCOPE.get()


def resolve_scope(default: Scope | None) -> Scope:
    """The scope of this call: the per-request one, else ``default``.

    Raises:
        ScopeError: if there is neither (never an unscoped search).
    """
    return coerce_scope(_SCOPE.get() or default)
