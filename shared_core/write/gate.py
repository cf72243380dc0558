"""The write gate: nothing enters long-term memory without passing it (W1-W8, L1-L3).

Every write goes through :meth:`WriteGate.submit`, the only write path of every target (W1). For
each candidate, in this order, before anything is embedded or indexed:

1. **authority** — owner and trust from the write path (:mod:`.authority`): a record claiming
   another owner is ``scope_mismatch``; trust claims above the path's are lowered.
2. **contract** — invalid fields, a body over ``max_chars``, self-links, timestamps in the future:
   ``reject`` with ``detail`` naming the field (never the value).
3. **screens** (W4, W5) — a credential in any field: ``reject`` (never stored, never embedded, not
   even held); injection or hidden text: ``quarantine`` (or ``reject`` by policy); PII: ``mask``
   (or ``reject`` or ``allow``) by policy.
4. **tombstones** — a forgotten source never comes back (L2, :mod:`.ledger`): ``reject``.
5. **trust** (W3) — origin × grounding × confirmations: ``write``, ``quarantine`` or ``reject``.
6. **ids, dedup and supersede** (W2, L1) — an id owned by someone else: ``not_owner``. The same
   id from its owner: an idempotent re-write (same text) or an update in place. A scoped
   neighbour above ``dedup_threshold``: if the two say the same in the same words, the existing
   memory gains evidence (promoted to ``confirmed`` at ``promote_at``, W7) — unless another
   writer owns it, whose evidence and tier a merge never raises; if one thing differs in the same
   statement (a number, date, name, negation or word), the new memory **supersedes** the old one
   (``changed_fact``), never a merge; several things changed, or other words altogether (two
   conversation turns), the two are separate memories (:func:`.facts.kinship`). The same
   ``entity`` + ``attribute``, or an explicit ``supersedes``, supersedes the current version of
   the caller's own memory (a link to an already superseded one is re-based onto its successor).
7. **commit** — records and vectors go to the target's indexes together.

Each call returns one :class:`WriteDecision` per candidate and emits one audit record with the
writer's scope (ids, actions and reasons; never text). ``dry_run=True`` decides without changing
anything.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..audit import AuditSink, emit
from ..config import ConfigBook, WritePolicy
from ..errors import InputError, StoreError
from ..model import MemoryRecord, Tier, bucket_of
from ..text import normalize
from ..timeutil import Clock, system_clock, to_utc
from .audit import write_audit_record, write_failure_record
from .authority import WritePath
from .batch import Batch
from .candidate import MemoryCandidate, WriteAction, WriteDecision, WriteReason, memory_id
from .chain import MAX_CHAIN, retire, revived, version
from .checks import check_ownership, check_tombstones
from .decide import SPLIT_WINDOW, build_record, decide_writes
from .facts import changed_fact, kinship
from .ledger import HeldCandidate, Ledger, id_alias
from .target import PartitionKey, WriteTarget, owner_of, partition_key

__all__ = ["SKIPPABLE", "WriteGate"]

SKIPPABLE = frozenset({"screens", "dedup", "supersede"})
"""Steps a bulk import may explicitly opt out of (never authority, contract, tombstones, trust or ids):
``screens`` (secret/PII/injection), ``dedup`` (the neighbour search), ``supersede`` (the implicit
supersede by ``entity`` + ``attribute``; explicit ``supersedes`` links always apply)."""

NEIGHBOURS = 5
"""The nearest committed memories (and as many of the batch's own) dedup compares a record with (W2)."""


def _search_bar(policy: WritePolicy) -> float:
    """The cosine down to which neighbours are read: ``dedup_threshold`` or ``correction_threshold`` (W2, L1)."""
    bar = policy.correction_threshold
    return policy.dedup_threshold if bar is None else min(policy.dedup_threshold, bar)


class WriteGate:
    """The write side of recall-gate, in front of one :class:`~.target.WriteTarget` and its ledger.

    Args:
        target: where memories live (the store's backend, or an adapter's foreign store).
        ledger: quarantine, tombstones, lineage and journal (:mod:`.ledger`).
        policy: the write policy, or a :class:`~shared_core.config.ConfigBook` with per-space ones.
        sinks: audit sinks for write records.
        clock: injected clock.
        read_only: refuse every state change with :class:`~shared_core.errors.StoreError`.
    """

    def __init__(
        self,
        target: WriteTarget,
        ledger: Ledger,
        *,
        policy: WritePolicy | ConfigBook | None = None,
        sinks: Sequence[AuditSink] = (),
        clock: Clock = system_clock,
        read_only: bool = False,
    ) -> None:
        self.target = target
        self.ledger = ledger
        self.book = (
            policy if isinstance(policy, ConfigBook) else ConfigBook(write_default=policy or WritePolicy())
        )
        self.sinks = tuple(sinks)
        self.clock = clock
        self.read_only = read_only
        self.lock = threading.RLock()
        """Serialises every decide-and-commit (and the lifecycle operations) of this gate."""
        self._last_body: dict[PartitionKey, str] = {}

    # -- policy ---------------------------------------------------------------------------------

    def policy_for(self, memory_space_id: str) -> WritePolicy:
        """The write policy of a memory space."""
        return self.book.write_for(memory_space_id)

    def now(self) -> datetime:
        """The gate's clock, aware UTC."""
        return to_utc(self.clock())

    def check_writable(self) -> None:
        """Raise :class:`StoreError` if this gate is read-only (every state change calls this first)."""
        if self.read_only:
            raise StoreError("the store is open read-only")

    def is_tombstoned(self, source_record_id: str | None, mid: str | None) -> bool:
        """The tombstone rule of :mod:`.ledger`: a forgotten source, or a deleted id with no source."""
        if source_record_id:
            return self.ledger.is_tombstoned(source_record_id, None) or False
        return bool(mid) and self.ledger.is_tombstoned(None, mid)

    # -- the pipeline ---------------------------------------------------------------------------

    def submit(
        self,
        items: Iterable[MemoryCandidate | Mapping[str, Any]],
        *,
        path: WritePath | None = None,
        dry_run: bool = False,
        vectors: NDArray[np.float32] | None = None,
        skip: Collection[str] = (),
    ) -> list[WriteDecision]:
        """Decide and (unless ``dry_run``) apply each candidate; one decision per item, in order.

        Args:
            items: records as mappings of :class:`MemoryCandidate` fields (or candidates).
            path: the authority of this way in (default :meth:`WritePath.operator`).
            dry_run: decide only (R10).
            vectors: precomputed unit embeddings, one row per item (bulk imports).
            skip: steps the caller explicitly opts out of (:data:`SKIPPABLE`; bulk imports of
                evaluation corpora or restored data); the audit record says so.

        Raises:
            InputError: on an unknown step in ``skip`` or vectors of the wrong shape.

        If the target fails half-way (Chroma unreachable, disk full), the error is raised after an
        audit record says so (``extra.error``, with the ids being written); each memory is then
        fully present or fully absent, and the call can be retried (writes are idempotent).
        """
        if not dry_run:
            self.check_writable()
        unknown = set(skip) - SKIPPABLE
        if unknown:
            raise InputError(f"skip may name {sorted(SKIPPABLE)}, not {sorted(unknown)}")
        items = list(items)
        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(items):
                raise InputError(
                    f"vectors must have one row per item ({len(items)}), not shape {vectors.shape}"
                )
        way = path or WritePath.operator()
        now = self.now()
        attempted: list[str] = []
        try:
            with self.lock:
                decisions = self._submit(
                    items, now, attempted, way, dry_run=dry_run, vectors=vectors, skip=set(skip)
                )
        except Exception as exc:
            emit(
                write_failure_record(attempted, exc, now=now, config_hash=self.book.config_hash(), path=way),
                self.sinks,
            )
            raise
        self.audit(decisions, now, dry_run=dry_run, path=way, skipped=sorted(skip))
        return decisions

    def _submit(
        self,
        items: Iterable[MemoryCandidate | Mapping[str, Any]],
        now: datetime,
        attempted: list[str],
        path: WritePath,
        *,
        dry_run: bool,
        vectors: NDArray[np.float32] | None,
        skip: set[str],
    ) -> list[WriteDecision]:
        decided = decide_writes(
            items,
            policy=self.book,
            path=path,
            is_tombstoned=None,  # checked for the whole batch at once, below
            dry_run=dry_run,
            now=now,
            previous=self._previous_text,
            screens="screens" not in skip,
        )
        decided = check_tombstones(self.ledger, decided)
        decided = check_ownership(self.target, decided, known_links_only=not path.trust_claims)
        to_write = [
            (
                d,
                build_record(d.candidate, policy=self.policy_for(d.candidate.memory_space_id), now=now),
            )
            for d in decided
            if d.action is WriteAction.WRITE and d.candidate is not None
        ]
        to_hold = [d for d in decided if d.action is WriteAction.QUARANTINE and d.candidate is not None]
        attempted.extend([*(rec.id for _, rec in to_write), *(f"#{d.index}" for d in to_hold)])
        out: dict[int, WriteDecision] = {d.index: d for d in decided}
        given = None if vectors is None else vectors[[d.index for d, _ in to_write]]
        for d in self.commit_records(
            to_write,
            now,
            dry_run=dry_run,
            vectors=given,
            dedup="dedup" not in skip,
            supersede="supersede" not in skip,
            repeats_are_evidence=path.trust_claims,
        ):
            out[d.index] = d
        for d, qid in zip(to_hold, self._hold(to_hold, now, path, dry_run=dry_run), strict=True):
            out[d.index] = d.model_copy(update={"id": qid})
        return [out[i] for i in sorted(out)]

    def _previous_text(self, cand: MemoryCandidate) -> str | None:
        """Body of the memory written just before in the candidate's partition (split injections)."""
        key = (
            cand.memory_space_id,
            cand.route_id or "",
            bucket_of(cand.user_id, cand.agent_id, cand.visibility),
        )
        if key in self._last_body:
            return self._last_body[key]
        return self.target.latest_body(key)

    def _hold(
        self, decisions: Sequence[WriteDecision], now: datetime, path: WritePath, *, dry_run: bool
    ) -> list[str]:
        entries = []
        for d in decisions:
            cand = d.candidate
            if cand is None:  # pragma: no cover - filtered by the caller
                continue
            ttl = self.policy_for(cand.memory_space_id).quarantine_ttl_days
            entries.append(
                HeldCandidate(
                    id="q_" + memory_id(cand.scope, cand.title, cand.body)[4:],
                    candidate=cand,
                    reasons=tuple(r.value for r in d.reasons),
                    findings=tuple(d.findings),
                    held_at=now,
                    expires_at=now + timedelta(days=ttl),
                    path=path.name,
                )
            )
        if entries and not dry_run:
            self.ledger.hold(entries)
        return [e.id for e in entries]

    # -- dedup, supersede, commit ---------------------------------------------------------------

    def commit_records(
        self,
        items: Sequence[tuple[WriteDecision, MemoryRecord]],
        now: datetime,
        *,
        dry_run: bool,
        vectors: NDArray[np.float32] | None = None,
        dedup: bool = True,
        supersede: bool = True,
        repeats_are_evidence: bool = True,
    ) -> list[WriteDecision]:
        """Ids, dedup and supersede for records that passed the decision, then one commit (step 6-7).

        Call with :attr:`lock` held (``submit`` and ``approve`` do). ``vectors`` (one row per
        item) are used instead of embedding; ``dedup=False`` skips the neighbour search. With
        ``repeats_are_evidence=False`` (agent-facing paths), the same words written again count
        as new evidence only when they come from another source record: an agent that saves its
        own note twice does not promote it (W7).
        """
        if not items:
            return []
        records = [rec for _, rec in items]
        if vectors is None:
            vectors = self.target.embed_records(records)
        batch = Batch(repeats_are_evidence=repeats_are_evidence)
        stored = self._stored(records)
        # the committed neighbours of the whole batch in one product per partition (none of them
        # changes before the commit below); a target without that, or a lone record (which may not
        # need them: a re-write of its own id), is asked per record when dedup reaches it
        thresholds = [_search_bar(self.policy_for(rec.memory_space_id)) for rec in records]
        near = (
            self.target.neighbours_many(records, vectors, thresholds=thresholds, limit=NEIGHBOURS)
            if dedup and len(records) > 1
            else None
        )
        decisions = [
            self._place(
                d,
                rec,
                vec,
                stored.get((rec.memory_space_id, rec.id)),
                batch,
                now,
                dry_run=dry_run,
                dedup=dedup,
                supersede=supersede,
                committed=near[i] if near is not None else None,
            )
            for i, ((d, rec), vec) in enumerate(zip(items, vectors, strict=True))
        ]
        if not dry_run and batch.upserts:
            ids = list(batch.upserts)
            self.target.commit(
                [batch.upserts[i] for i in ids], np.stack([batch.vectors[i] for i in ids]).astype(np.float32)
            )
        if not dry_run:
            for source, space, mid in batch.links:
                self.ledger.link(source, space, mid)
            for d in decisions:
                if d.stored and d.id in batch.upserts:
                    rec = batch.upserts[d.id]
                    self._last_body[partition_key(rec)] = rec.body[-SPLIT_WINDOW:]
        return decisions

    def _stored(self, records: Sequence[MemoryRecord]) -> dict[tuple[str, str], MemoryRecord]:
        by_space: dict[str, list[str]] = {}
        for rec in records:
            by_space.setdefault(rec.memory_space_id, []).append(rec.id)
        out: dict[tuple[str, str], MemoryRecord] = {}
        for space, ids in by_space.items():
            for found in self.target.get(list(dict.fromkeys(ids)), memory_space_id=space):
                out[(space, found.id)] = found
        return out

    def _vector(self, batch: Batch, record: MemoryRecord) -> None:
        if record.id not in batch.vectors:
            batch.vectors[record.id] = self.target.vector_of(record)

    def _current(self, batch: Batch, record: MemoryRecord) -> MemoryRecord:
        """The version of a memory this batch sees (its own pending update, else the stored one)."""
        return batch.upserts.get(record.id, record)

    def _place(
        self,
        d: WriteDecision,
        rec: MemoryRecord,
        vec: NDArray[np.float32],
        same_id: MemoryRecord | None,
        batch: Batch,
        now: datetime,
        *,
        dry_run: bool,
        dedup: bool,
        supersede: bool,
        committed: list[tuple[MemoryRecord, float]] | None = None,
    ) -> WriteDecision:
        reasons = list(d.reasons)
        rules = list(d.findings)

        def decided(
            action: WriteAction,
            mid: str | None,
            *extra: WriteReason,
            existing: str | None = None,
            detail: Sequence[str] = (),
        ) -> WriteDecision:
            return d.model_copy(
                update={
                    "action": action,
                    "id": mid,
                    "reasons": tuple(dict.fromkeys([*reasons, *extra])),
                    "findings": tuple(rules),
                    "existing_id": existing,
                    "detail": (*d.detail, *detail),
                    "dry_run": dry_run,
                    "record": rec if action in (WriteAction.WRITE, WriteAction.UPDATE) else None,
                }
            )

        same_id = batch.upserts.get(rec.id) or same_id
        if same_id is not None:
            if owner_of(same_id) != owner_of(rec):
                return decided(
                    WriteAction.REJECT, None, WriteReason.NOT_OWNER, detail=["id: not the caller's memory"]
                )
            if normalize(same_id.title) == normalize(rec.title) and normalize(same_id.body) == normalize(
                rec.body
            ):
                derived = memory_id(rec.scope, rec.title, rec.body) == rec.id
                head = self._head(batch, same_id) if derived and same_id.superseded_by is not None else None
                if (
                    head is not None
                    and head.id != same_id.id
                    and owner_of(head) == owner_of(same_id)
                    and partition_key(head) == partition_key(same_id) == partition_key(rec)
                ):
                    # A value said again after it was corrected is current again (L1, :func:`.chain.revived`).
                    records = revived(self.target, batch, same_id, head, now)
                    rec = records[0]
                    for r in records:
                        batch.upserts[r.id] = r
                        self._vector(batch, r)
                    if d.candidate is not None and d.candidate.source_record_id not in ("", None, rec.source_record_id):
                        batch.links.append((str(d.candidate.source_record_id), rec.memory_space_id, rec.id))
                    return decided(
                        WriteAction.UPDATE, rec.id, WriteReason.CHANGED_FACT, WriteReason.SUPERSEDES, existing=head.id
                    )
                if derived and batch.counts_as_evidence(rec, same_id):
                    # The same words said again (not a re-import of the same source): evidence (W7).
                    merged = self._merged(same_id, now)
                    batch.upserts[merged.id] = merged
                    self._vector(batch, merged)
                    if rec.source_record_id and same_id.source_record_id != rec.source_record_id:
                        batch.links.append((rec.source_record_id, rec.memory_space_id, rec.id))
                    extra = [WriteReason.PROMOTED] if merged.tier != same_id.tier else []
                    return decided(
                        WriteAction.MERGE, merged.id, WriteReason.DUPLICATE, *extra, existing=same_id.id
                    )
                # An explicit id or the same source written again: idempotent, nothing changes.
                return decided(WriteAction.MERGE, same_id.id, WriteReason.DUPLICATE, existing=same_id.id)
            # The owner re-writes its memory under the same id with new words: an update in place.
            rec = rec.model_copy(update={"created_at": same_id.created_at or rec.created_at})
            if same_id.source_record_id and same_id.source_record_id != rec.source_record_id:
                # the memory came from that source: forgetting it still finds the rewrite (L2)
                batch.links.append((same_id.source_record_id, rec.memory_space_id, rec.id))
            batch.upserts[rec.id] = rec
            batch.set_vector(rec.id, vec, partition_key(rec))
            return decided(WriteAction.UPDATE, rec.id, WriteReason.CHANGED_FACT, existing=same_id.id)

        # What this memory replaces: explicit links and the same entity + attribute (L1).
        replaced: list[MemoryRecord] = []
        rebased = False
        for old_id in rec.supersedes:
            found = batch.upserts.get(old_id)
            if found is None:
                got = self.target.get([old_id], memory_space_id=rec.memory_space_id)
                found = got[0] if got else None
            if found is None:
                continue  # a link to a memory not (yet) here is kept as it is (imported history)
            head = self._head(batch, found)
            if head is None:
                return decided(
                    WriteAction.REJECT,
                    None,
                    WriteReason.INVALID,
                    detail=["supersedes: the chain does not end"],
                )
            if owner_of(head) != owner_of(rec) or partition_key(head) != partition_key(rec):
                return decided(
                    WriteAction.REJECT,
                    None,
                    WriteReason.NOT_OWNER,
                    detail=["supersedes: not the caller's memory"],
                )
            rebased = rebased or head.id != found.id
            if head.id != rec.id:
                replaced.append(head)
        attr_key: tuple[str, ...] = ()
        if supersede and rec.entity and rec.attribute:
            attr_key = (*partition_key(rec), rec.entity, rec.attribute)
            prior = batch.by_attr.get(attr_key)
            same_attr = [prior] if prior is not None else self.target.same_attribute(rec)
            for older in same_attr:
                current = self._current(batch, older)
                if (
                    current.superseded_by is None
                    and current.id != rec.id
                    and owner_of(current) == owner_of(rec)
                ):
                    replaced.append(current)
        replaced_ids = {r.id for r in replaced}

        if dedup and not replaced and rec.superseded_by is None:
            text_id = memory_id(rec.scope, rec.title, rec.body)
            earlier = batch.upserts.get(batch.by_text.get(text_id, ""))
            if earlier is not None and not changed_fact(earlier.body, rec.body):
                _alias(batch, rec, earlier, text_id)
                return decided(WriteAction.MERGE, earlier.id, WriteReason.DUPLICATE, existing=earlier.id)
            policy = self.policy_for(rec.memory_space_id)
            threshold = _search_bar(policy)
            if committed is None:
                committed = self.target.neighbours(rec, vec, threshold=threshold, limit=NEIGHBOURS)
            nearest = sorted(
                [*committed, *batch.near(rec, vec, threshold=threshold, limit=NEIGHBOURS)], key=lambda x: -x[1]
            )
            for near, sim in nearest[:NEIGHBOURS]:
                near = self._current(batch, near)
                if near.superseded_by is not None or near.id in replaced_ids or near.id == rec.id:
                    continue
                under = sim < policy.dedup_threshold
                kin = kinship(near, rec, values_only=under)
                if kin == "other" or (under and kin != "correction"):
                    continue  # other words, or under the dedup bar and no correction: left as it is
                if kin == "beside":
                    reasons.append(WriteReason.CHANGED_FACT)  # several things changed: a new memory beside it
                    break
                if kin == "correction":
                    if owner_of(near) == owner_of(rec) and near.updated_at <= rec.updated_at:
                        replaced.append(near)
                        reasons.append(WriteReason.CHANGED_FACT)
                    else:
                        reasons.append(WriteReason.CHANGED_FACT)  # a new memory beside it
                    break
                _alias(batch, rec, near, text_id)
                if owner_of(near) != owner_of(rec):
                    # Another writer's shared memory: never raise its evidence or tier (R2, W3).
                    return decided(WriteAction.MERGE, near.id, WriteReason.DUPLICATE, existing=near.id)
                if not batch.counts_as_evidence(rec, near):
                    return decided(WriteAction.MERGE, near.id, WriteReason.DUPLICATE, existing=near.id)
                merged = self._merged(near, now)
                batch.upserts[merged.id] = merged
                self._vector(batch, merged)
                if rec.source_record_id and rec.source_record_id != near.source_record_id:
                    batch.links.append((rec.source_record_id, near.memory_space_id, near.id))
                extra = [WriteReason.PROMOTED] if merged.tier != near.tier else []
                return decided(WriteAction.MERGE, merged.id, WriteReason.DUPLICATE, *extra, existing=near.id)

        action = WriteAction.WRITE
        if replaced:
            rec = rec.model_copy(
                update={"supersedes": tuple(dict.fromkeys((*rec.supersedes, *(r.id for r in replaced))))}
            )
            ended = min(rec.valid_from or rec.updated_at, now)
            for old in replaced:
                if old.superseded_by == rec.id:
                    continue  # imported history already links the two
                batch.upserts[old.id] = retire(old, rec.id, ended, now)
                self._vector(batch, old)
            action = WriteAction.UPDATE
            reasons.append(WriteReason.SUPERSEDES)
            if rebased:
                reasons.append(WriteReason.REBASED)
        batch.upserts[rec.id] = rec
        batch.add_fresh(partition_key(rec), rec.id, vec)
        batch.by_text[memory_id(rec.scope, rec.title, rec.body)] = rec.id
        if attr_key:
            batch.by_attr[attr_key] = rec
        return decided(action, rec.id, existing=replaced[0].id if replaced else None)

    def _head(self, batch: Batch, record: MemoryRecord) -> MemoryRecord | None:
        """The current version at the end of a memory's correction chain (``None``: a cycle)."""
        current = self._current(batch, record)
        seen = {current.id}
        while current.superseded_by is not None:
            nxt = version(self.target, batch, current.superseded_by, current.memory_space_id)
            if nxt is None or owner_of(nxt) != owner_of(current):
                # the successor is gone, or is another owner's (a link a record claimed: followed, the
                # answer would tell whether that memory exists): this one is the newest left
                return current
            if nxt.id in seen or len(seen) > MAX_CHAIN:
                return None
            seen.add(nxt.id)
            current = self._current(batch, nxt)
        return current

    def _merged(self, existing: MemoryRecord, now: datetime) -> MemoryRecord:
        evidence = existing.evidence_count + 1
        tier = existing.tier
        if tier is Tier.TENTATIVE and evidence >= self.policy_for(existing.memory_space_id).promote_at:
            tier = Tier.CONFIRMED
        return existing.model_copy(update={"evidence_count": evidence, "tier": tier, "updated_at": now})

    # -- audit ----------------------------------------------------------------------------------

    def audit(
        self,
        decisions: Sequence[WriteDecision],
        now: datetime,
        *,
        dry_run: bool,
        path: WritePath | None = None,
        skipped: Sequence[str] = (),
    ) -> None:
        """Emit the write audit record of a call (ids, actions, reasons, the writer's scope)."""
        record = write_audit_record(
            decisions, now=now, config_hash=self.book.config_hash(), dry_run=dry_run, path=path
        )
        if skipped:
            record = record.model_copy(update={"extra": {**record.extra, "skipped": list(skipped)}})
        emit(record, self.sinks)


def _alias(batch: Batch, rec: MemoryRecord, into: MemoryRecord, derived_id: str) -> None:
    """Link a write's explicit id to the memory it was merged into (see :func:`.ledger.id_alias`)."""
    if rec.id != derived_id and rec.id != into.id:
        batch.links.append((id_alias(rec.id), into.memory_space_id, into.id))
