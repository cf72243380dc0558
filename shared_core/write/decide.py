"""The store-independent write decision: validate, screen, mask, tombstones, trust (W3-W5, W8).

:func:`decide_writes` is pure given its callbacks: nothing here embeds, indexes or stores.
:func:`build_record` turns a ``write`` decision into the long-term record (id, tier, expiry).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from ..config import ConfigBook, TrustAction, TrustRule, WritePolicy
from ..model import MemoryRecord, Tier, Visibility
from ..timeutil import to_utc
from .candidate import MemoryCandidate, WriteAction, WriteDecision, WriteReason, memory_id

__all__ = ["SPLIT_WINDOW", "build_record", "decide_writes", "split_injection", "trust_action"]


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
SPLIT_WINDOW = 300
"""Characters on each side of the boundary screened when two memories are checked as one text."""


def _unstorable(cand: MemoryCandidate) -> bool:
    """True when a text field holds a NUL or a lone surrogate (not storable, not valid UTF-8)."""
    values: list[object] = [getattr(cand, name) for name in type(cand).model_fields]
    for value in values:
        texts = value if isinstance(value, tuple) else (value,)
        if any(isinstance(t, str) and _UNSTORABLE.search(t) for t in texts):
            return True
    return False


def _partition_of(cand: MemoryCandidate) -> tuple[str, ...]:
    owner = ("shared",) if cand.visibility is Visibility.SHARED else (cand.user_id, cand.agent_id)
    return (cand.memory_space_id, cand.route_id or "", *owner)


def split_injection(before: str, after: str, screen: Callable[[str], Any]) -> list[str]:
    """Rules of injection findings that only appear when two memories are read one after the other.

    The end of the body ``before`` and the start of the body ``after`` are screened as one text
    (joined by a newline, as a recalled context shows them); a finding whose span crosses the
    join is an instruction split across the two memories (W5).
    """
    head, tail = before[-SPLIT_WINDOW:], after[:SPLIT_WINDOW]
    joint = len(head)
    report = screen(f"{head}\n{tail}")
    return sorted(
        {f.rule for f in report.findings if f.kind == "injection" and f.start < joint and f.end > joint + 1}
    )


def _parse(raw: object) -> MemoryCandidate | None:
    if isinstance(raw, MemoryCandidate):
        return raw
    if isinstance(raw, Mapping):
        try:
            return MemoryCandidate.model_validate(dict(raw))
        except Exception:  # ValidationError, or a mapping whose keys are not strings
            return None
    return None


def trust_action(cand: MemoryCandidate, policy: WritePolicy) -> TrustAction:
    """The trust decision for a candidate: origin x grounding x confirmations (W3)."""
    origin = cand.origin or policy.default_origin
    rule = policy.trust.get(origin, TrustRule(cited="quarantine", uncited="quarantine"))
    action: TrustAction = rule.cited if cand.cited else rule.uncited
    if (
        action == "quarantine"
        and rule.confirmations_to_write is not None
        and cand.confirmations >= rule.confirmations_to_write
    ):
        action = "write"
    return action


def decide_writes(
    items: Iterable[MemoryCandidate | Mapping[str, Any]],
    *,
    policy: WritePolicy | ConfigBook | None = None,
    is_tombstoned: Callable[[str | None, str | None], bool] | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    previous: Callable[[MemoryCandidate], str | None] | None = None,
) -> list[WriteDecision]:
    """The store-independent part of the write gate: validate, screen, mask, tombstones, trust.

    For adapters that write to a vector store they do not own (a LangChain or LlamaIndex store):
    each decision's action is ``write``, ``quarantine`` or ``reject``; for ``write`` and
    ``quarantine``, ``decision.candidate`` is the candidate as it may be stored (PII masked by
    policy). Nothing here embeds, indexes or stores anything, and nothing is audited: the caller
    does that with what it stores (:func:`write_audit_record`). Dedup and supersede links need a
    :class:`MemoryStore`.

    With ``now``, each ``write`` decision also carries ``decision.record``, the long-term record to
    store (:func:`build_record`: deterministic id, tier, expiry), and ``decision.id`` is its id.

    Text fields holding a NUL or a lone surrogate are ``invalid`` (they cannot be stored or sent
    on as UTF-8). An instruction split across two memories (:func:`split_injection`) quarantines
    both halves when they are in one batch, or the second when ``previous(candidate)`` returns
    the body of the memory written just before it in the same partition.
    """
    from ..screening import mask_pii, screen

    book = policy if isinstance(policy, ConfigBook) else ConfigBook(write_default=policy or WritePolicy())
    out: list[WriteDecision] = []
    last_write: dict[tuple[str, ...], tuple[int, str]] = {}  # partition -> (index, body) of this batch
    for index, raw in enumerate(items):
        decision = _decide_one(index, raw, book, is_tombstoned, screen, mask_pii)
        if decision.action is WriteAction.WRITE and decision.candidate is not None:
            cand = decision.candidate
            part, text = _partition_of(cand), cand.body
            before = last_write.pop(part, None)
            previous_text = before[1] if before else (previous(cand) if previous is not None else None)
            split = split_injection(previous_text, text, screen) if previous_text else []
            if split:
                decision = _hold_split(decision, split)
                if before is not None:
                    out[before[0]] = _hold_split(out[before[0]], split)
            else:
                last_write[part] = (index, text)
        update: dict[str, Any] = {"dry_run": dry_run} if dry_run else {}
        if now is not None and decision.action is WriteAction.WRITE and decision.candidate is not None:
            cand = decision.candidate
            record = build_record(cand, policy=book.write_for(cand.memory_space_id), now=to_utc(now))
            update.update(record=record, id=record.id)
        out.append(decision.model_copy(update=update) if update else decision)
    return out


def _hold_split(decision: WriteDecision, rules: Sequence[str]) -> WriteDecision:
    """Quarantine one half of an instruction split across two memories (W5)."""
    return decision.model_copy(
        update={
            "action": WriteAction.QUARANTINE,
            "reasons": (*decision.reasons, WriteReason.INJECTION),
            "findings": tuple(sorted({*decision.findings, *rules, "split_across_memories"})),
            "record": None,
            "id": None,
        }
    )


def _decide_one(
    index: int,
    raw: object,
    book: ConfigBook,
    is_tombstoned: Callable[[str | None, str | None], bool] | None,
    screen: Callable[[str], Any],
    mask_pii: Callable[[str, Any], str],
) -> WriteDecision:
    def done(
        action: WriteAction,
        reasons: Sequence[WriteReason],
        rules: Sequence[str] = (),
        cand: MemoryCandidate | None = None,
    ) -> WriteDecision:
        return WriteDecision(
            index=index, action=action, reasons=tuple(reasons), findings=tuple(rules), candidate=cand
        )

    cand = _parse(raw)
    if cand is None:
        return done(WriteAction.REJECT, [WriteReason.INVALID])
    pol = book.write_for(cand.memory_space_id)
    if len(cand.title) + len(cand.body) > pol.max_chars:
        return done(WriteAction.REJECT, [WriteReason.TOO_LARGE])
    if _unstorable(cand):
        return done(WriteAction.REJECT, [WriteReason.INVALID], ["nul_or_lone_surrogate"])
    title_report = screen(cand.title) if cand.title else None
    body_report = screen(cand.body)
    reports = [r for r in (title_report, body_report) if r is not None]
    rules = sorted({f.rule for r in reports for f in r.findings})
    if any(r.has_secret for r in reports):
        return done(WriteAction.REJECT, [WriteReason.SECRET], rules)
    reasons: list[WriteReason] = []
    if any(r.has_injection for r in reports):
        reasons.append(WriteReason.INJECTION)
    if any(r.has_hidden_text for r in reports):
        reasons.append(WriteReason.HIDDEN_TEXT)
    held = bool(reasons)
    if held and pol.injection == "reject":
        return done(WriteAction.REJECT, reasons, rules)
    if any(r.has_pii for r in reports):
        if pol.pii == "reject":
            return done(WriteAction.REJECT, [*reasons, WriteReason.PII], rules)
        if pol.pii == "mask":
            cand = cand.model_copy(
                update={
                    "title": mask_pii(cand.title, title_report.findings) if title_report else cand.title,
                    "body": mask_pii(cand.body, body_report.findings),
                }
            )
            reasons.append(WriteReason.PII_MASKED)
    if is_tombstoned is not None and is_tombstoned(
        cand.source_record_id, cand.id or memory_id(cand.scope, cand.title, cand.body)
    ):
        return done(WriteAction.REJECT, [*reasons, WriteReason.TOMBSTONED], rules)
    trust = trust_action(cand, pol)
    if trust == "reject":
        return done(WriteAction.REJECT, [*reasons, WriteReason.UNTRUSTED], rules)
    if held or trust == "quarantine":
        return done(
            WriteAction.QUARANTINE, reasons if held else [*reasons, WriteReason.UNTRUSTED], rules, cand
        )
    return done(WriteAction.WRITE, reasons, rules, cand)


def build_record(cand: MemoryCandidate, *, policy: WritePolicy, now: datetime) -> MemoryRecord:
    """The long-term record a ``write`` decision stores: deterministic id, tier, expiry (W7, L3).

    New memories start ``tentative`` unless the origin is trusted to set its tier; a candidate
    with enough confirmations starts ``confirmed``.
    """
    pol = policy
    origin = cand.origin or pol.default_origin
    tier = cand.tier if (cand.tier is not None and origin in pol.trusted_tier_origins) else Tier.TENTATIVE
    if cand.confirmations + 1 >= pol.promote_at and tier is Tier.TENTATIVE:
        tier = Tier.CONFIRMED
    expires = cand.expires_at
    if expires is None and pol.retention_days is not None:
        expires = now + timedelta(days=pol.retention_days)
    mid = cand.id or memory_id(cand.scope, cand.title, cand.body)
    return MemoryRecord(
        id=mid,
        title=cand.title,
        body=cand.body,
        user_id=cand.user_id,
        agent_id=cand.agent_id,
        memory_space_id=cand.memory_space_id,
        route_id=cand.route_id,
        visibility=cand.visibility,
        status=cand.status,
        tier=tier,
        source=cand.source,
        origin=origin,
        tags=cand.tags,
        created_at=now,
        updated_at=cand.updated_at or now,
        valid_from=cand.valid_from,
        valid_to=cand.valid_to,
        supersedes=cand.supersedes,
        expires_at=expires,
        sensitivity="low",
        evidence_count=1 + cand.confirmations,
        source_record_id=cand.source_record_id,
        verification_status="cited" if cand.cited else "uncited",
        entity=cand.entity,
        attribute=cand.attribute,
    )
