"""What the review pages show, as plain data: queue rows, history rows, hit rows, audit rows.

Pure functions over the store's public return values (``quarantine_list()`` dicts,
:class:`~shared_core.model.MemoryRecord`, :class:`~shared_core.recall.gate.GateResult`,
:class:`~shared_core.audit.AuditRecord`), so the pages are tested through the browser and these
shapes are tested without one. Nothing here writes anything; nothing here logs.

Text rules (A4, R9, W4): the operator may see a memory's title and body (the queue and the
history exist so that a person sees what they approve), so those appear in rows; rejected
recall hits show title and scores but no body (as :mod:`shared_core.display` does); audit rows
hold what audit records hold, which is ids, reasons and counts only.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...audit import AuditRecord
from ...model import Hit, MemoryRecord, Rejection
from ...recall.gate import GateResult
from ...timeutil import parse_datetime

__all__ = [
    "AuditFilter",
    "AuditRow",
    "HistoryRow",
    "HitRow",
    "QueueRow",
    "WhatIf",
    "audit_rows",
    "history_rows",
    "hit_rows",
    "queue_rows",
    "what_if",
]

EXTRA_CHARS = 400
"""Longest rendering of an audit record's ``extra`` field on the audit page."""


def _opt_time(value: object) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def _str_list(value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable):
        return tuple(getattr(v, "value", str(v)) for v in value)
    return ()


@dataclass(frozen=True)
class QueueRow:
    """One held candidate as the queue shows it.

    ``title``/``body``/owner/``route_id``/``findings``/``origin`` are ``None`` when the store's
    ``quarantine_list()`` does not return them (older stores return ids, reasons and times only).
    """

    id: str
    memory_space_id: str | None
    reasons: tuple[str, ...]
    findings: tuple[str, ...] | None
    title: str | None
    body: str | None
    user_id: str | None
    agent_id: str | None
    route_id: str | None
    origin: str | None
    visibility: str | None
    held_at: datetime | None
    expires_at: datetime | None
    expired: bool
    source_record_id: str | None
    path: str | None = None  # the write path that held it (MCP server, adapter, CLI), when known

    @property
    def has_text(self) -> bool:
        """True when the store returned the candidate's text."""
        return self.body is not None


def _opt_str(item: Mapping[str, Any], key: str) -> str | None:
    value = item.get(key)
    if value is None:
        return None
    return str(getattr(value, "value", value))


def queue_rows(items: Iterable[Mapping[str, Any]], *, now: datetime) -> list[QueueRow]:
    """Rows of the quarantine queue, oldest held first, from ``store.quarantine_list()`` dicts."""
    rows = []
    for item in items:
        expires = _opt_time(item.get("expires_at"))
        findings = item.get("findings")
        rows.append(
            QueueRow(
                id=str(item.get("id", "")),
                memory_space_id=_opt_str(item, "memory_space_id"),
                reasons=_str_list(item.get("reasons", ())),
                findings=None if findings is None else _str_list(findings),
                title=_opt_str(item, "title"),
                body=_opt_str(item, "body"),
                user_id=_opt_str(item, "user_id"),
                agent_id=_opt_str(item, "agent_id"),
                route_id=_opt_str(item, "route_id"),
                origin=_opt_str(item, "origin"),
                visibility=_opt_str(item, "visibility"),
                held_at=_opt_time(item.get("held_at")),
                expires_at=expires,
                expired=expires is not None and expires <= now,
                source_record_id=_opt_str(item, "source_record_id"),
                path=item["path"] if isinstance(item.get("path"), str) else None,
            )
        )
    rows.sort(key=lambda r: (r.held_at or now, r.id))
    return rows


@dataclass(frozen=True)
class HistoryRow:
    """One version in a memory's correction chain."""

    record: MemoryRecord
    current: bool
    requested: bool


def history_rows(chain: Sequence[MemoryRecord], *, requested: str) -> list[HistoryRow]:
    """The correction chain oldest first; the current version is the one nothing supersedes."""
    superseded = {s for r in chain for s in r.supersedes}
    return [
        HistoryRow(
            record=r,
            current=r.superseded_by is None and r.deleted_at is None and r.id not in superseded,
            requested=r.id == requested,
        )
        for r in chain
    ]


@dataclass(frozen=True)
class HitRow:
    """One hit of a dry-run: decision, reasons, failed rules, scores and channel ranks."""

    id: str
    title: str
    accepted: bool
    rank: int | None
    reason: str | None
    reasons: tuple[str, ...]
    rules: tuple[str, ...]
    hit: Hit | None
    body: str | None  # accepted hits only

    @property
    def record(self) -> MemoryRecord | None:
        """The hit's record, when the hit could be parsed."""
        return self.hit.record if self.hit is not None else None


def _rejected_row(rej: Rejection) -> HitRow:
    return HitRow(
        id=rej.id,
        title=rej.title,
        accepted=False,
        rank=None,
        reason=rej.reason.value,
        reasons=tuple(r.value for r in rej.reasons),
        rules=tuple(rej.rules),
        hit=rej.hit,
        body=None,
    )


def hit_rows(result: GateResult) -> tuple[list[HitRow], list[HitRow]]:
    """Accepted rows (in gate order) and rejected rows (in retrieval order) of a gate result."""
    accepted = [
        HitRow(
            id=h.record.id,
            title=h.record.title,
            accepted=True,
            rank=rank,
            reason=None,
            reasons=(),
            rules=(),
            hit=h,
            body=h.record.body,
        )
        for rank, h in enumerate(result.accepted, start=1)
    ]
    return accepted, [_rejected_row(r) for r in result.rejected]


@dataclass(frozen=True)
class WhatIf:
    """A what-if run next to the baseline: the changed settings and the changed decisions."""

    changes: dict[str, tuple[Any, Any]]
    newly_accepted: list[HitRow]
    newly_rejected: list[HitRow]
    result: GateResult


def what_if(baseline: GateResult, alternative: GateResult, changes: dict[str, tuple[Any, Any]]) -> WhatIf:
    """Compare two dry-runs of the same query: what the changed settings would accept or drop."""
    before = set(baseline.accepted_ids)
    after = set(alternative.accepted_ids)
    alt_accepted, _ = hit_rows(alternative)
    newly_accepted = [row for row in alt_accepted if row.id not in before]
    rejected_now = {r.id: r for r in alternative.rejected}
    newly_rejected = [_rejected_row(rejected_now[i]) for i in baseline.accepted_ids if i not in after]
    return WhatIf(
        changes=changes, newly_accepted=newly_accepted, newly_rejected=newly_rejected, result=alternative
    )


@dataclass(frozen=True)
class AuditFilter:
    """Which audit records the audit page shows (every field optional; all given must match)."""

    event: str | None = None
    user_id: str | None = None
    agent_id: str | None = None
    memory_space_id: str | None = None
    route_id: str | None = None
    reason: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_dry_run: bool = True

    @property
    def has_scope(self) -> bool:
        """True when a scope field is part of the filter."""
        return any((self.user_id, self.agent_id, self.memory_space_id, self.route_id))


@dataclass(frozen=True)
class AuditRow:
    """One audit record as a row: when, what, scope, ids and reasons (never text)."""

    number: int  # 1-based line among the records read, i.e. the order they were written in
    record: AuditRecord
    at: datetime | None
    extra_json: str = ""


def _record_reasons(rec: AuditRecord) -> set[str]:
    """Every reason and action named in a record: counts, rejected entries, write reasons."""
    names = set(rec.counts)
    for entry in rec.rejected:
        names.add(entry.reason)
        names.update(entry.reasons)
    write_reasons = rec.extra.get("reasons") if isinstance(rec.extra, Mapping) else None
    if isinstance(write_reasons, Mapping):
        names.update(str(k) for k in write_reasons)
    return names


def _matches(rec: AuditRecord, at: datetime | None, flt: AuditFilter) -> bool:
    if flt.event and rec.event != flt.event:
        return False
    if not flt.include_dry_run and rec.dry_run:
        return False
    scope = rec.scope or {}
    for key in ("user_id", "agent_id", "memory_space_id", "route_id"):
        wanted = getattr(flt, key)
        if wanted and scope.get(key) != wanted:
            return False
    if flt.reason and flt.reason not in _record_reasons(rec):
        return False
    if flt.since is not None and (at is None or at < flt.since):
        return False
    return not (flt.until is not None and (at is None or at > flt.until))


def _extra_json(extra: Mapping[str, Any]) -> str:
    text = json.dumps(extra, ensure_ascii=False, sort_keys=True, default=str, separators=(", ", ": "))
    return text if len(text) <= EXTRA_CHARS else text[: EXTRA_CHARS - 1] + "…"


def audit_rows(records: Sequence[AuditRecord], flt: AuditFilter, *, limit: int) -> tuple[list[AuditRow], int]:
    """Matching records newest first (reverse order of writing), at most ``limit``; and how many matched."""
    matched: list[AuditRow] = []
    total = 0
    for number in range(len(records), 0, -1):
        rec = records[number - 1]
        at = _opt_time(rec.at)
        if not _matches(rec, at, flt):
            continue
        total += 1
        if len(matched) < limit:
            matched.append(
                AuditRow(
                    number=number,
                    record=rec,
                    at=at,
                    extra_json=_extra_json(rec.extra or {}),
                )
            )
    return matched, total
