"""Per-request scope for LlamaIndex components whose standard methods take no scope (R1).

LlamaIndex calls ``retrieve(query)``, ``postprocess_nodes(nodes, query_bundle)`` and
``vector_store.query(query)`` without any notion of *who is asking*. The components of this package
take a scope at construction, and :func:`recall_scope` sets one for everything called inside a
``with`` block (a query engine, a chat engine, a fusion retriever...). It is a
:class:`contextvars.ContextVar`, so concurrent requests (threads, asyncio tasks) each see their own.

The per-request scope wins over the constructor's. With neither, the core raises
:class:`shared_core.ScopeError` before any retrieval work: there is no unscoped search.

**Fail closed.** A thread-pool worker does not inherit a context variable unless the code that
started it copied the context (``contextvars.copy_context().run``). So while any
:func:`recall_scope` block is active in the process, and once a component has served a
per-request scope, a call that finds no per-request scope raises ``ScopeError`` instead of using
the component's constructor scope (another identity): propagate the context to your workers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from shared_core import Scope, coerce_scope
from shared_core.interop import ScopeSource

__all__ = ["ScopeLike", "current_scope", "per_request_active", "recall_scope", "scope_source"]

ScopeLike = Scope | Mapping[str, Any]

_SCOPE: ContextVar[Scope | None] = ContextVar("recall_gate_scope", default=None)
_active = 0
_active_lock = threading.Lock()


@contextmanager
def recall_scope(scope: ScopeLike) -> Iterator[Scope]:
    """Run the block on behalf of ``scope``: every gated component called inside uses it.

    Example:
        >>> with recall_scope({"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}):
        ...     response = query_engine.query("when do we post?")

    Raises:
        ScopeError: if ``scope`` is missing or incomplete.
    """
    global _active
    scope_obj = coerce_scope(scope)
    token = _SCOPE.set(scope_obj)
    with _active_lock:
        _active += 1
    try:
        yield scope_obj
    finally:
        with _active_lock:
            _active -= 1
        _SCOPE.reset(token)


def current_scope() -> Scope | None:
    """The scope set by the innermost active :func:`recall_scope` of this context, if any."""
    return _SCOPE.get()


def per_request_active() -> bool:
    """True while a :func:`recall_scope` block is active anywhere in the process."""
    return _active > 0


def scope_source(default: ScopeLike | None) -> ScopeSource:
    """A component's scope source: per request (:func:`recall_scope`), else ``default``, failing closed."""
    return ScopeSource(default, active=per_request_active)
