"""The audit records of write calls (R9): ids, actions, reason codes and the writer's scope; never text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ..audit import AuditRecord, RejectedEntry, count_reasons
from ..timeutil import to_utc
from .authority import WritePath
from .candidate import WriteDecision

__all__ = ["write_audit_record", "write_failure_record"]

_MAX_SCOPES = 50


def _scopes(
    decisions: Sequence[WriteDecision], path: WritePath | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The writer's scope: the path's pinned one, else the one scope all candidates share.

    A batch of several owners (an operator import) gets an empty ``scope`` and the distinct
    scopes (ids only, at most 50) in ``extra["scopes"]``.
    """
    if path is not None and path.scope is not None:
        return path.scope.model_dump(), []
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for d in decisions:
        owner = d.record if d.record is not None else d.candidate
        if owner is not None:
            sc = owner.scope.model_dump()
            seen.setdefault(tuple(sc.values()), sc)
    scopes = list(seen.values())
    if len(scopes) == 1:
        return scopes[0], []
    return {}, scopes[:_MAX_SCOPES]


def write_audit_record(
    decisions: Sequence[WriteDecision],
    *,
    now: datetime,
    config_hash: str,
    dry_run: bool = False,
    path: WritePath | None = None,
) -> AuditRecord:
    """The audit record of one write call: stored ids, other outcomes with reasons, counts (R9).

    Never text: ids, actions, reason codes, finding rule names and the names of invalid fields.
    ``counts`` are by action; ``extra["reasons"]`` by reason; each entry of ``rejected`` carries
    its action and reasons (its ``reason`` is the first reason, else the action).
    """
    stored = tuple(d.id for d in decisions if d.stored and d.id)
    others = tuple(
        RejectedEntry(
            d.id or f"#{d.index}",
            d.reasons[0].value if d.reasons else d.action.value,
            tuple(r.value for r in d.reasons),
            action=d.action.value,
        )
        for d in decisions
        if not d.stored
    )
    scope, scopes = _scopes(decisions, path)
    extra: dict[str, Any] = {"reasons": dict(Counter(r.value for d in decisions for r in d.reasons))}
    if path is not None:
        extra["path"] = path.name
    if scopes:
        extra["scopes"] = scopes
    invalid = Counter(item.split(":", 1)[0] for d in decisions for item in d.detail)
    if invalid:
        extra["invalid_fields"] = dict(sorted(invalid.items()))
    return AuditRecord.model_construct(
        event="write",
        at=to_utc(now).isoformat(),
        query_hash=None,
        query=None,
        scope=scope,
        accepted_ids=stored,
        rejected=others,
        counts=count_reasons(d.action.value for d in decisions),
        input_count=len(decisions),
        dry_run=dry_run,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra=extra,
    )


def write_failure_record(
    attempted: Sequence[str],
    error: BaseException,
    *,
    now: datetime,
    config_hash: str,
    path: WritePath | None = None,
) -> AuditRecord:
    """The audit record of a write call the store could not finish: which ids, which error type.

    ``attempted`` holds the memory ids being written and ``#index`` of the inputs being held;
    no text.
    """
    return AuditRecord.model_construct(
        event="write",
        at=to_utc(now).isoformat(),
        query_hash=None,
        query=None,
        scope=path.scope.model_dump() if path is not None and path.scope is not None else {},
        accepted_ids=(),
        rejected=(),
        counts={"error": 1},
        input_count=len(attempted),
        dry_run=False,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"error": type(error).__name__, "attempted": list(attempted)},
    )
