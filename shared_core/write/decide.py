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
from ..model import MemoryRecord, Origin, Tier, Visibility
from ..screening.owner import RETRACTION_RULE, is_owner_request
from ..screening.quoted_en import is_quoted_attack_note
from ..timeutil import system_clock, to_utc
from .authority import TIER_TRUST, WritePath, apply_authority
from .candidate import MemoryCandidate, WriteAction, WriteDecision, WriteReason, memory_id, parse_candidate

__all__ = [
    "MAX_CLOCK_SKEW",
    "SPLIT_WINDOW",
    "build_record",
    "decide_writes",
    "initial_tier",
    "split_injection",
    "trust_action",
]


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
SPLIT_WINDOW = 300
"""Characters on each side of the boundary screened when two memories are checked as one text."""


def _unstorable(fields: Mapping[str, Any]) -> str | None:
    """The first text field holding a NUL or a lone surrogate (not storable, not valid UTF-8)."""
    for name, value in fields.items():
        texts = value if isinstance(value, (list, tuple)) else (value,)
        if any(isinstance(t, str) and _UNSTORABLE.search(t) for t in texts):
            return name
    return None


def _partition_of(cand: MemoryCandidate) -> tuple[str, ...]:
    owner = ("shared",) if cand.visibility is Visibility.SHARED else (cand.user_id, cand.agent_id)
    return (cand.memory_space_id, cand.route_id or "", *owner)


def split_injection(
    before: str, after: str, screen: Callable[[Sequence[str]], Sequence[Any]] | None = None
) -> list[str]:
    """Rules of injection findings that only appear when two memories are read one after the other.

    The end of ``before`` and the start of ``after`` are screened as one text, as a recalled
    context shows them (:func:`shared_core.screening.joint_findings`); a finding that crosses the
    boundary is an instruction split across the two memories (W5).
    """
    from ..screening import joint_findings

    run = screen if screen is not None else joint_findings
    return sorted({f.rule for f in run([before[-SPLIT_WINDOW:], after[:SPLIT_WINDOW]])})


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


MAX_CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future a ``created_at`` / ``updated_at`` may lie (clock skew between machines)."""

_OTHER_TEXT_FIELDS = (
    "id",
    "source",
    "source_record_id",
    "entity",
    "attribute",
    "verification_status",
    "sensitivity",
    "superseded_by",
)


def decide_writes(
    items: Iterable[MemoryCandidate | Mapping[str, Any]],
    *,
    policy: WritePolicy | ConfigBook | None = None,
    path: WritePath | None = None,
    is_tombstoned: Callable[[str | None, str | None], bool] | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    build: bool = False,
    previous: Callable[[MemoryCandidate], str | None] | None = None,
    screens: bool = True,
) -> list[WriteDecision]:
    """The store-independent part of the write gate: authority, contract, screens, tombstones, trust.

    Nothing here embeds, indexes or stores anything, and nothing is audited: the caller does that
    with what it stores (:func:`~shared_core.write.audit.write_audit_record`). Each decision's action
    is ``write``, ``quarantine`` or ``reject``; for ``write`` and ``quarantine``,
    ``decision.candidate`` is the candidate as it may be stored (PII masked by policy).

    Args:
        items: records as mappings of :class:`MemoryCandidate` fields (or candidates).
        policy: the write policy (per memory space with a :class:`ConfigBook`).
        path: the authority of the way in (default :meth:`WritePath.operator`): scope and trust
            come from it, a record may lower its trust but never raise it.
        is_tombstoned: ``(source_record_id, memory_id) -> bool`` from the ledger (L2).
        dry_run: mark decisions as a preview.
        now: the instant of the write (default: now, UTC); timestamps beyond it plus
            :data:`MAX_CLOCK_SKEW` are invalid.
        build: also build each ``write`` decision's long-term record (``decision.record``,
            :func:`build_record`) and set ``decision.id`` to its id.
        previous: body of the memory written just before in a candidate's partition, for the
            split-injection check.
        screens: run the secret, PII and injection screens (``False`` only for bulk imports the
            caller explicitly opts out for; the write audit record then says so).

    An invalid record is rejected with ``detail`` naming each bad field and the problem
    (``"created_at: not a datetime"``), never the value. Text fields holding a NUL or a lone
    surrogate are ``invalid`` (they cannot be stored or sent on as UTF-8). An instruction split
    across two memories (:func:`split_injection`) quarantines both halves when they are in one
    batch, or the second when ``previous(candidate)`` returns the body written just before it.
    """
    from ..screening import ScreenReport, joint_findings, mask_pii, screen_fields

    def screen(fields: Mapping[str, Any]) -> dict[str, Any]:
        return screen_fields(fields, alone=_VALUE_FIELDS) if screens else {name: ScreenReport.of(()) for name in fields}

    def joint(texts: Sequence[str]) -> Sequence[Any]:
        return joint_findings(texts) if screens else []

    book = policy if isinstance(policy, ConfigBook) else ConfigBook(write_default=policy or WritePolicy())
    way = path or WritePath.operator()
    at = to_utc(now) if now is not None else system_clock()
    out: list[WriteDecision] = []
    last_write: dict[tuple[str, ...], tuple[int, str]] = {}  # partition -> (index, body) of this batch
    for index, raw in enumerate(items):
        decision = _decide_one(index, raw, book, way, at, is_tombstoned, screen, mask_pii)
        if decision.action is WriteAction.WRITE and decision.candidate is not None:
            cand = decision.candidate
            part, text = _partition_of(cand), cand.body
            before = last_write.pop(part, None)
            previous_text = before[1] if before else (previous(cand) if previous is not None else None)
            split = split_injection(previous_text, text, joint) if previous_text else []
            if split:
                decision = _hold_split(decision, split)
                if before is not None:
                    out[before[0]] = _hold_split(out[before[0]], split)
            else:
                last_write[part] = (index, text)
        update: dict[str, Any] = {"dry_run": dry_run} if dry_run else {}
        if build and decision.action is WriteAction.WRITE and decision.candidate is not None:
            cand = decision.candidate
            record = build_record(cand, policy=book.write_for(cand.memory_space_id), now=at)
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


def _as_mapping(raw: object) -> Mapping[str, Any] | None:
    if isinstance(raw, MemoryCandidate):
        return raw.model_dump(exclude_unset=True)
    return raw if isinstance(raw, Mapping) else None


def _semantic_problems(cand: MemoryCandidate, now: datetime) -> list[str]:
    """Problems validation cannot see: self-links, the future, an inverted validity window."""
    problems: list[str] = []
    own = cand.id or memory_id(cand.scope, cand.title, cand.body)
    if own in cand.supersedes:
        problems.append("supersedes: names the memory itself")
    if cand.superseded_by is not None and cand.superseded_by == own:
        problems.append("superseded_by: names the memory itself")
    horizon = now + MAX_CLOCK_SKEW
    for name in ("created_at", "updated_at"):
        value = getattr(cand, name)
        if value is not None and value > horizon:
            problems.append(f"{name}: in the future")
    if cand.valid_from is not None and cand.valid_to is not None and cand.valid_to < cand.valid_from:
        problems.append("valid_to: before valid_from")
    return problems


_VALUE_FIELDS = frozenset((*_OTHER_TEXT_FIELDS, "tags", "supersedes"))
"""Fields screened as values on their own: a finding there must be the field's own (not the body's)."""


def _screened_fields(cand: MemoryCandidate) -> dict[str, Any]:
    """Every text field of a candidate, screened in one pass (title and body, and the rest for secrets)."""
    fields: dict[str, Any] = {"title": cand.title, "body": cand.body}
    for name in _OTHER_TEXT_FIELDS:
        fields[name] = getattr(cand, name)
    fields["tags"] = list(cand.tags)
    fields["supersedes"] = list(cand.supersedes)
    return fields


_FROM_ELSEWHERE = re.compile(r"://|@|[/\\]|\.[A-Za-z0-9]{2,5}$")
"""A ``source`` that names a web page, a mail, a file or a path: the text came from elsewhere."""


def _users_own_words(cand: MemoryCandidate, pol: WritePolicy, by_field: Mapping[str, Any]) -> bool:
    """The path's half of the owner waivers: the user's own words, every injection finding in the body.

    Only through a path whose origin is ``user_explicit`` (the origin after the path's
    authority: a record cannot claim it on an agent-facing path), for a private memory (a
    shared one is read by other users' assistants) whose ``source`` names no page, mail or
    file (a document loader's text is not the user's words).
    """
    if (
        (cand.origin or pol.default_origin) is not Origin.USER_EXPLICIT
        or cand.visibility is not Visibility.PRIVATE
        or _FROM_ELSEWHERE.search(cand.source)
    ):
        return False
    return not any(
        f.kind in ("injection", "hidden_text") for name, report in by_field.items() if name != "body" for f in report.findings
    )


def _screened_rules(text: str) -> set[str]:
    """The injection and hidden-text rules the default screens find in ``text``."""
    from ..screening import screen

    return {f.rule for f in screen(text).findings if f.kind in ("injection", "hidden_text")}


def _owner_waiver(cand: MemoryCandidate, pol: WritePolicy, by_field: Mapping[str, Any]) -> WriteReason | None:
    """Why an order found in the user's own note is written, or ``None`` (it is held).

    ``owner_request``: the user's own standing request to their assistant
    (:mod:`shared_core.screening.owner`); ``quoted_attack``: an English note that quotes an attack
    to record it (:mod:`shared_core.screening.quoted_en`). Each with its policy on, on the path of
    :func:`_users_own_words`.
    """
    if not _users_own_words(cand, pol, by_field):
        return None
    body = by_field["body"].findings
    rules = {f.rule for f in body if f.kind in ("injection", "hidden_text")}
    taken_back = [(f.start, f.end) for f in body if f.rule == RETRACTION_RULE]
    if pol.owner_requests == "write" and is_owner_request(
        cand.body, rules, title=cand.title, taken_back=taken_back, screen_rules=_screened_rules
    ):
        return WriteReason.OWNER_REQUEST
    if pol.quoted_attacks == "write" and is_quoted_attack_note(cand.body, body):
        return WriteReason.QUOTED_ATTACK
    return None


def _decide_one(
    index: int,
    raw: object,
    book: ConfigBook,
    path: WritePath,
    now: datetime,
    is_tombstoned: Callable[[str | None, str | None], bool] | None,
    screen: Callable[[Mapping[str, Any]], dict[str, Any]],
    mask_pii: Callable[[str, Any], str],
) -> WriteDecision:
    lowered: list[WriteReason] = []

    def done(
        action: WriteAction,
        reasons: Sequence[WriteReason],
        rules: Sequence[str] = (),
        cand: MemoryCandidate | None = None,
        detail: Sequence[str] = (),
    ) -> WriteDecision:
        return WriteDecision(
            index=index,
            action=action,
            reasons=tuple(dict.fromkeys([*reasons, *lowered])),
            findings=tuple(rules),
            candidate=cand,
            detail=tuple(detail),
        )

    mapping = _as_mapping(raw)
    if mapping is None:
        return done(
            WriteAction.REJECT,
            [WriteReason.INVALID],
            detail=[f"record: not an object ({type(raw).__name__})"],
        )
    if any(not isinstance(k, str) for k in mapping):
        return done(
            WriteAction.REJECT, [WriteReason.INVALID], detail=["record: a field name is not a string"]
        )
    authority = apply_authority(mapping, path)
    if authority.fields is None:
        return done(WriteAction.REJECT, [WriteReason.SCOPE_MISMATCH], detail=authority.mismatched)
    if authority.lowered:
        lowered.append(WriteReason.TRUST_LOWERED)
    bad_text = _unstorable(authority.fields)
    if bad_text:
        return done(
            WriteAction.REJECT,
            [WriteReason.INVALID],
            ["nul_or_lone_surrogate"],
            detail=[f"{bad_text}: holds a NUL or a lone surrogate"],
        )
    if authority.claimed is not None and authority.claimed != authority.fields:
        as_claimed = parse_candidate(authority.claimed)  # a malformed claim is invalid, dropped or not
        if not isinstance(as_claimed, MemoryCandidate):
            return done(WriteAction.REJECT, [WriteReason.INVALID], detail=as_claimed)
    parsed = parse_candidate(authority.fields)
    if not isinstance(parsed, MemoryCandidate):
        return done(WriteAction.REJECT, [WriteReason.INVALID], detail=parsed)
    cand = parsed
    pol = book.write_for(cand.memory_space_id)
    if len(cand.title) + len(cand.body) > pol.max_chars:
        return done(
            WriteAction.REJECT,
            [WriteReason.TOO_LARGE],
            detail=[f"body: longer than {pol.max_chars} characters"],
        )
    problems = _semantic_problems(cand, now)
    if problems:
        return done(WriteAction.REJECT, [WriteReason.INVALID], detail=problems)
    by_field = screen(_screened_fields(cand))
    title_report, body_report = by_field["title"], by_field["body"]
    reports = [title_report, body_report]
    rules = sorted({f.rule for r in by_field.values() for f in r.findings})
    if any(r.has_secret for r in by_field.values()):  # a credential in any field (W4)
        secret_in = [name for name, r in by_field.items() if r.has_secret]
        return done(
            WriteAction.REJECT,
            [WriteReason.SECRET],
            rules,
            detail=[f"{n}: holds a credential" for n in secret_in],
        )
    reasons: list[WriteReason] = []
    if any(r.has_injection for r in reports):
        reasons.append(WriteReason.INJECTION)
    if any(r.has_hidden_text for r in reports):
        reasons.append(WriteReason.HIDDEN_TEXT)
    waiver = _owner_waiver(cand, pol, by_field) if reasons == [WriteReason.INJECTION] else None
    if waiver is not None:
        reasons = [waiver]  # the user's own request to their assistant, or a note quoting an attack (W5, W3)
    held = WriteReason.INJECTION in reasons or WriteReason.HIDDEN_TEXT in reasons
    if held and pol.injection == "reject":
        return done(WriteAction.REJECT, reasons, rules)
    if any(r.has_pii for r in reports):
        if pol.pii == "reject":
            return done(WriteAction.REJECT, [*reasons, WriteReason.PII], rules)
        if pol.pii == "mask":
            cand = cand.model_copy(
                update={
                    "title": mask_pii(cand.title, title_report.findings) if cand.title else cand.title,
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


def initial_tier(cand: MemoryCandidate, policy: WritePolicy, *, honour_tier: bool = False) -> Tier:
    """The tier a new memory starts in (W7, seed 004).

    What a person stated or approved is recallable at once (``initial_tiers``: ``user_explicit``
    and ``external_verified`` start ``confirmed``); what an agent inferred or summarised starts
    ``tentative`` until evidence promotes it. An explicit ``tier`` is honoured when the origin may
    set its tier (``trusted_tier_origins``), when it asks for less than the default, or with
    ``honour_tier`` (a caller that restores records exactly as they were).
    """
    origin = cand.origin or policy.default_origin
    default = policy.initial_tiers.get(origin, Tier.TENTATIVE)
    tier = default
    if cand.tier is not None and (
        honour_tier or origin in policy.trusted_tier_origins or TIER_TRUST[cand.tier] <= TIER_TRUST[default]
    ):
        tier = cand.tier
    evidence = cand.evidence_count if cand.evidence_count is not None else 1 + cand.confirmations
    if tier is Tier.TENTATIVE and cand.tier is not Tier.TENTATIVE and evidence >= policy.promote_at:
        tier = Tier.CONFIRMED
    return tier


def build_record(
    cand: MemoryCandidate, *, policy: WritePolicy, now: datetime, honour_tier: bool = False
) -> MemoryRecord:
    """The long-term record a ``write`` decision stores: id, tier, times, expiry, history (W7, L1, L3).

    The id is the candidate's, else deterministic (:func:`memory_id`). Imported history is kept:
    ``created_at`` / ``updated_at`` (default: now), ``supersedes`` / ``superseded_by`` links and the
    validity window are stored as given, so an imported superseded memory stays superseded. The
    tier is :func:`initial_tier`; the evidence count is the imported one, else one plus the
    confirmations.
    """
    pol = policy
    origin = cand.origin or pol.default_origin
    expires = cand.expires_at
    if expires is None and pol.retention_days is not None:
        expires = now + timedelta(days=pol.retention_days)
    mid = cand.id or memory_id(cand.scope, cand.title, cand.body)
    evidence = cand.evidence_count if cand.evidence_count is not None else 1 + cand.confirmations
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
        tier=initial_tier(cand, pol, honour_tier=honour_tier),
        source=cand.source,
        origin=origin,
        tags=cand.tags,
        created_at=cand.created_at or now,
        updated_at=cand.updated_at or cand.created_at or now,
        valid_from=cand.valid_from,
        valid_to=cand.valid_to,
        supersedes=cand.supersedes,
        superseded_by=cand.superseded_by,
        deleted_at=cand.deleted_at,
        expires_at=expires,
        sensitivity=cand.sensitivity or "low",
        confidence=cand.confidence,
        evidence_count=max(1, evidence),
        source_record_id=cand.source_record_id,
        verification_status=cand.verification_status or ("cited" if cand.cited else "uncited"),
        entity=cand.entity,
        attribute=cand.attribute,
    )
