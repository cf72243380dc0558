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

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..audit import AuditSink, emit
from ..config import ConfigBook, WritePolicy
from ..model import MemoryRecord, Tier, bucket_of
from ..timeutil import Clock, system_clock, to_utc
from .audit import write_audit_record, write_failure_record
from .candidate import MemoryCandidate, WriteAction, WriteDecision, WriteReason, memory_id
from .decide import SPLIT_WINDOW, build_record, decide_writes

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["WriteGate"]


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


def _owner(record: MemoryRecord) -> tuple[str, str, str | None]:
    return (record.user_id, record.agent_id, record.route_id)
