"""The write gate: nothing enters long-term memory without passing it (W1-W8, L1-L3).

Every write goes through :meth:`WriteGate.submit`, the store's only write path (W1). For each
candidate, in this order, before anything is embedded or indexed:

1. **size and shape** — invalid fields or a body over ``max_chars``: ``reject``.
2. **tombstones** — a deleted source or memory id never comes back (L2): ``reject``.
3. **screens** (W4, W5) — a credential: ``reject`` (never stored, never embedded, not even held);
   injection or hidden text: ``quarantine`` (or ``reject`` by policy); PII: ``mask`` (or ``reject``
   or ``allow``) by policy.
4. **trust** (W3) — origin × grounding (cited or not) × confirmations: ``write``, ``quarantine`` or
   ``reject``, from the policy table (configuration, not prompt text, W8).
5. **dedup and update** (W2) — the same normalised text or a scoped neighbour above
   ``dedup_threshold``: no new memory, the existing one gains evidence (and is promoted to
   ``confirmed`` at ``promote_at`` confirmations, W7); the same ``entity`` + ``attribute`` as an
   active memory: the new memory **supersedes** it (L1).
6. **commit** — new memories start ``tentative`` (W7) unless the policy trusts an explicit tier;
   records and vectors go to Chroma and BM25 together.

Each call returns one :class:`WriteDecision` per candidate and emits one audit record (ids,
actions and reasons; never text). ``dry_run=True`` decides without changing anything.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .audit import AuditRecord, AuditSink, RejectedEntry, count_reasons, emit
from .chroma_io import bucket_of
from .config import ConfigBook, TrustAction, TrustRule, WritePolicy
from .errors import InputError
from .models import MemoryRecord, Origin, Scope, Status, Tier, Visibility, _check_key
from .text import normalize
from .timeutil import Clock, parse_datetime, system_clock, to_utc

if TYPE_CHECKING:
    from .store import MemoryStore

__all__ = [
    "MemoryCandidate",
    "TrustAction",
    "WriteAction",
    "WriteDecision",
    "WriteGate",
    "WritePolicy",
    "WriteReason",
    "build_record",
    "decide_writes",
    "memory_id",
    "split_injection",
    "trust_action",
    "write_audit_record",
    "write_failure_record",
]


class WriteAction(str, Enum):
    """What the write gate did with a candidate."""

    WRITE = "write"
    UPDATE = "update"  # wrote a new memory that supersedes an existing one
    MERGE = "merge"  # duplicate: the existing memory gained evidence
    QUARANTINE = "quarantine"
    REJECT = "reject"


class WriteReason(str, Enum):
    """Closed set of reasons attached to write decisions."""

    INVALID = "invalid"
    TOO_LARGE = "too_large"
    TOMBSTONED = "tombstoned"
    SECRET = "secret"
    PII = "pii"
    PII_MASKED = "pii_masked"
    INJECTION = "injection"
    HIDDEN_TEXT = "hidden_text"
    UNTRUSTED = "untrusted"
    DUPLICATE = "duplicate"
    SUPERSEDES = "supersedes"
    PROMOTED = "promoted"


class MemoryCandidate(BaseModel):
    """A memory someone wants to store; the write gate decides what becomes of it."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    title: str = ""
    body: str
    user_id: str
    agent_id: str
    memory_space_id: str
    route_id: str | None = None
    visibility: Visibility = Visibility.PRIVATE
    status: Status = Status.APPROVED
    tier: Tier | None = None
    origin: Origin | None = None
    cited: bool = False
    confirmations: int = Field(default=0, ge=0)
    source: str = ""
    tags: tuple[str, ...] = ()
    source_record_id: str | None = None
    entity: str | None = None
    attribute: str | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    expires_at: datetime | None = None
    updated_at: datetime | None = None
    supersedes: tuple[str, ...] = ()
    id: str | None = None

    @field_validator("user_id", "agent_id", "memory_space_id")
    @classmethod
    def _keys(cls, value: str, info: Any) -> str:
        return _check_key(value, info.field_name)

    @field_validator("id", "route_id", "source_record_id")
    @classmethod
    def _opt_keys(cls, value: str | None, info: Any) -> str | None:
        return None if value in (None, "") else _check_key(value, info.field_name)

    @field_validator("valid_from", "valid_to", "expires_at", "updated_at", mode="before")
    @classmethod
    def _times(cls, value: object) -> object:
        return None if value in (None, "") else parse_datetime(value)

    @property
    def scope(self) -> Scope:
        """The scope the memory will belong to."""
        return Scope(
            user_id=self.user_id,
            agent_id=self.agent_id,
            memory_space_id=self.memory_space_id,
            route_id=self.route_id,
        )


class WriteDecision(BaseModel):
    """What happened to one candidate. ``id`` is the memory (or quarantine) id, if any."""

    model_config = ConfigDict(frozen=True)

    index: int
    action: WriteAction
    id: str | None = None
    reasons: tuple[WriteReason, ...] = ()
    findings: tuple[str, ...] = ()  # rule names of screen findings, never matched text
    existing_id: str | None = None
    dry_run: bool = False
    candidate: MemoryCandidate | None = Field(default=None, exclude=True, repr=False)
    record: MemoryRecord | None = Field(default=None, exclude=True, repr=False)

    @property
    def stored(self) -> bool:
        """True when the candidate's content is now in long-term memory (written or updated)."""
        return self.action in (WriteAction.WRITE, WriteAction.UPDATE)


def memory_id(scope: Scope, title: str, body: str) -> str:
    """Deterministic id: the same normalised text in the same scope gets the same id."""
    key = "\x1f".join(
        [
            scope.memory_space_id,
            scope.route_id or "",
            scope.user_id,
            scope.agent_id,
            normalize(title),
            normalize(body),
        ]
    )
    return "mem_" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


class WriteGate:
    """The write side of recall-gate, bound to one :class:`~shared_core.store.MemoryStore`."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        policy: WritePolicy | ConfigBook | None = None,
        sinks: Sequence[AuditSink] = (),
        clock: Clock = system_clock,
    ) -> None:
        self.store = store
        if isinstance(policy, ConfigBook):
            self.book = policy
        else:
            self.book = ConfigBook(write_default=policy or WritePolicy())
        self.sinks = tuple(sinks)
        self.clock = clock
        self._lock = threading.RLock()
        self._last_body: dict[tuple[str, str, str], str] = {}  # partition -> end of the last body written

    # -- the pipeline ---------------------------------------------------------------------------

    def submit(
        self, items: Iterable[MemoryCandidate | Mapping[str, Any]], *, dry_run: bool = False
    ) -> list[WriteDecision]:
        """Decide and (unless ``dry_run``) apply each candidate; one decision per item, in order.

        If the store fails half-way (Chroma unreachable, disk full), the error is raised after an
        audit record says so (``extra.error``, with the ids that were being written); each memory
        is then fully present or fully absent, and the call can be retried (writes are idempotent).
        """
        now = to_utc(self.clock())
        attempted: list[str] = []
        try:
            return self._submit(items, now, attempted, dry_run=dry_run)
        except Exception as exc:
            emit(
                write_failure_record(attempted, exc, now=now, config_hash=self.book.config_hash()), self.sinks
            )
            raise

    def _submit(
        self,
        items: Iterable[MemoryCandidate | Mapping[str, Any]],
        now: datetime,
        attempted: list[str],
        *,
        dry_run: bool,
    ) -> list[WriteDecision]:
        with self._lock:
            decided = decide_writes(
                items,
                policy=self.book,
                is_tombstoned=self.store.tombstoned,
                dry_run=dry_run,
                previous=self._previous_text,
            )
            to_write = [
                (d.index, self._record(d.candidate, now), list(d.reasons), list(d.findings))
                for d in decided
                if d.action is WriteAction.WRITE and d.candidate is not None
            ]
            to_hold = [d for d in decided if d.action is WriteAction.QUARANTINE and d.candidate is not None]
            attempted.extend([*(rec.id for _, rec, _, _ in to_write), *(f"#{d.index}" for d in to_hold)])
            out: dict[int, WriteDecision] = {d.index: d for d in decided}
            for d in self._dedup_and_commit(to_write, now, dry_run=dry_run):
                out[d.index] = d
            held = [d.candidate for d in to_hold if d.candidate is not None]
            held_ids = self.store._quarantine_put(
                held,
                now=now,
                ttl_days=[self.policy_for(c.memory_space_id).quarantine_ttl_days for c in held],
                reasons=[d.reasons for d in to_hold],
                dry_run=dry_run,
            )
            for d, qid in zip(to_hold, held_ids, strict=True):
                out[d.index] = d.model_copy(update={"id": qid})
        decisions = [out[i] for i in sorted(out)]
        self._audit(decisions, now, dry_run=dry_run)
        return decisions

    def _previous_text(self, cand: MemoryCandidate) -> str | None:
        """Body of the memory written just before in the candidate's partition (split injections).

        The last one this gate wrote, else the partition's newest by creation time.
        """
        key = (
            cand.memory_space_id,
            cand.route_id or "",
            bucket_of(cand.user_id, cand.agent_id, cand.visibility),
        )
        if key in self._last_body:
            return self._last_body[key]
        newest = max(
            self.store._partition(key).records(),
            key=lambda r: (r.created_at or r.updated_at, r.id),
            default=None,
        )
        return newest.body if newest is not None else None

    @property
    def policy(self) -> WritePolicy:
        """The default write policy (per-space overrides: :meth:`policy_for`)."""
        return self.book.write_default

    def policy_for(self, memory_space_id: str) -> WritePolicy:
        """The write policy of a memory space."""
        return self.book.write_for(memory_space_id)

    def _record(self, cand: MemoryCandidate, now: datetime) -> MemoryRecord:
        return build_record(cand, policy=self.policy_for(cand.memory_space_id), now=now)

    def _dedup_and_commit(
        self,
        items: list[tuple[int, MemoryRecord, list[WriteReason], list[str]]],
        now: datetime,
        *,
        dry_run: bool,
    ) -> list[WriteDecision]:
        if not items:
            return []
        records = [r for _, r, _, _ in items]
        vectors = self.store.embed_records(records)
        decisions: list[WriteDecision] = []
        upserts: dict[str, MemoryRecord] = {}
        upsert_vecs: dict[str, np.ndarray] = {}
        batch_seen: dict[str, str] = {}  # normalised-text hash -> id written in this batch
        batch_attr: dict[tuple[str, ...], MemoryRecord] = {}  # entity/attribute -> record of this batch
        # The id already stored in another partition: the owner's other visibility (one memory, not
        # two), or, for an explicit id, someone else's memory (never overwritten, R1).
        elsewhere = self.store._stored_elsewhere(records)
        for (index, rec, reasons, rules), vec in zip(items, vectors, strict=True):
            other = elsewhere.get(rec.id)
            if other is not None and _owner(other) != _owner(rec):
                decisions.append(
                    WriteDecision(
                        index=index,
                        action=WriteAction.REJECT,
                        reasons=(*reasons, WriteReason.INVALID),
                        findings=(*rules, "id_in_use"),
                        dry_run=dry_run,
                    )
                )
                continue
            text_key = memory_id(rec.scope, rec.title, rec.body)
            # What this memory replaces is never its duplicate: a correction worded close to the
            # memory it corrects must supersede it, not merge into it (L1 before W2).
            older: MemoryRecord | None = None
            attr_key: tuple[str, ...] = ()
            if rec.entity and rec.attribute:
                attr_key = (*self.store._key(rec), rec.entity, rec.attribute)
                older = batch_attr.get(attr_key) or self.store.find_same_attribute(rec)
            replaced = {*rec.supersedes, *((older.id,) if older is not None else ())} - {rec.id}
            existing = (
                upserts.get(batch_seen.get(text_key, ""))
                or upserts.get(other.id if other is not None else "")
                or other
                or self.store.find_duplicate(
                    rec, vec, self.policy_for(rec.memory_space_id).dedup_threshold, exclude=replaced
                )
            )
            if existing is not None:
                merged = self._merge(existing, now)
                upserts[merged.id] = merged
                if merged.id not in upsert_vecs:
                    upsert_vecs[merged.id] = self.store.vector_of(merged)
                extra = [WriteReason.DUPLICATE] + (
                    [WriteReason.PROMOTED] if merged.tier != existing.tier else []
                )
                decisions.append(
                    WriteDecision(
                        index=index,
                        action=WriteAction.MERGE,
                        id=merged.id,
                        existing_id=existing.id,
                        reasons=(*reasons, *extra),
                        findings=tuple(rules),
                        dry_run=dry_run,
                    )
                )
                continue
            action = WriteAction.WRITE
            for old_id in rec.supersedes:
                old = upserts.get(old_id) or self.store.find(rec.memory_space_id, old_id)
                # Only a memory of the same partition (owner, route) can be superseded: nobody
                # retires someone else's memory by naming its id.
                if old is not None and old.id != rec.id and self.store._key(old) == self.store._key(rec):
                    upserts[old.id] = old.model_copy(
                        update={"superseded_by": rec.id, "valid_to": now, "updated_at": now}
                    )
                    if old.id not in upsert_vecs:
                        upsert_vecs[old.id] = self.store.vector_of(old)
                    action = WriteAction.UPDATE
            if older is not None and older.id != rec.id:
                rec = rec.model_copy(update={"supersedes": tuple(dict.fromkeys((*rec.supersedes, older.id)))})
                upserts[older.id] = older.model_copy(
                    update={"superseded_by": rec.id, "valid_to": now, "updated_at": now}
                )
                if older.id not in upsert_vecs:
                    upsert_vecs[older.id] = self.store.vector_of(older)
                reasons = [*reasons, WriteReason.SUPERSEDES]
                action = WriteAction.UPDATE
            upserts[rec.id] = rec
            upsert_vecs[rec.id] = vec
            batch_seen[text_key] = rec.id
            if attr_key:
                batch_attr[attr_key] = rec
            decisions.append(
                WriteDecision(
                    index=index,
                    action=action,
                    id=rec.id,
                    existing_id=older.id if older else None,
                    reasons=tuple(reasons),
                    findings=tuple(rules),
                    dry_run=dry_run,
                )
            )
        if not dry_run and upserts:
            ids = list(upserts)
            self.store._commit(
                [upserts[i] for i in ids], np.stack([upsert_vecs[i] for i in ids]).astype(np.float32)
            )
            for d in decisions:
                if d.stored and d.id in upserts:
                    rec = upserts[d.id]
                    self._last_body[self.store._key(rec)] = rec.body[-SPLIT_WINDOW:]
        return decisions

    def _merge(self, existing: MemoryRecord, now: datetime) -> MemoryRecord:
        evidence = existing.evidence_count + 1
        tier = existing.tier
        if tier is Tier.TENTATIVE and evidence >= self.policy_for(existing.memory_space_id).promote_at:
            tier = Tier.CONFIRMED
        return existing.model_copy(update={"evidence_count": evidence, "tier": tier, "updated_at": now})

    def _audit(self, decisions: Sequence[WriteDecision], now: datetime, *, dry_run: bool) -> None:
        emit(
            write_audit_record(decisions, now=now, config_hash=self.book.config_hash(), dry_run=dry_run),
            self.sinks,
        )


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


def _owner(record: MemoryRecord) -> tuple[str, str, str | None]:
    return (record.user_id, record.agent_id, record.route_id)


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
    from .screening import mask_pii, screen

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


def write_audit_record(
    decisions: Sequence[WriteDecision], *, now: datetime, config_hash: str, dry_run: bool = False
) -> AuditRecord:
    """The audit record of one write call: stored ids, other outcomes with reasons, counts (R9).

    Never text: ids, actions, reason codes and finding rule names only.
    """
    stored = tuple(d.id for d in decisions if d.stored and d.id)
    others = tuple(
        RejectedEntry(d.id or f"#{d.index}", d.action.value, tuple(r.value for r in d.reasons))
        for d in decisions
        if not d.stored
    )
    return AuditRecord.model_construct(
        event="write",
        at=to_utc(now).isoformat(),
        query_hash=None,
        query=None,
        scope={},
        accepted_ids=stored,
        rejected=others,
        counts=count_reasons(d.action.value for d in decisions),
        input_count=len(decisions),
        dry_run=dry_run,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"reasons": dict(Counter(r.value for d in decisions for r in d.reasons))},
    )


def write_failure_record(
    attempted: Sequence[str], error: BaseException, *, now: datetime, config_hash: str
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
        scope={},
        accepted_ids=(),
        rejected=(),
        counts={"error": 1},
        input_count=len(attempted),
        dry_run=False,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"error": type(error).__name__, "attempted": list(attempted)},
    )


def candidate_from_mapping(data: Mapping[str, Any]) -> MemoryCandidate:
    """Validate a mapping as a candidate.

    Raises:
        InputError: naming the invalid fields (never their values).
    """
    try:
        return MemoryCandidate.model_validate(dict(data))
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise InputError(f"invalid memory: problem with {', '.join(fields) or 'input'}") from None
