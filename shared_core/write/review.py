"""Quarantine review through the write gate: list, approve, reject, purge (W6; seed 003).

Held candidates are approved or rejected by a person or a higher agent. An approval goes through
the gate's ids, dedup and commit again (its screens ran when it was held, and a reviewer vouched
for it); a candidate whose source record or id was forgotten since is refused as ``tombstoned``.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ..model import Tier
from .authority import WritePath
from .candidate import WriteAction, WriteDecision, WriteReason
from .decide import build_record
from .gate import WriteGate

__all__ = ["approve", "purge_quarantine", "quarantine_list", "reject"]


def quarantine_list(
    gate: WriteGate, *, memory_space_id: str | None = None, text: bool = True
) -> list[dict[str, Any]]:
    """Held candidates for a reviewer: id, owner, space, reasons, findings, times, and the text.

    The text is the reviewer's to see; it never enters an audit record.
    """
    return [h.summary(text=text) for h in gate.ledger.held(memory_space_id=memory_space_id)]


def approve(gate: WriteGate, qid: str, *, reviewer: str = "operator") -> WriteDecision:
    """Approve a held candidate: it is written as a confirmed, cited memory (W6).

    Raises:
        InputError: if there is no such held candidate, or it expired.
    """
    gate.check_writable()
    now = gate.now()
    with gate.lock:
        found = gate.ledger.held(ids=[qid])
        if not found:
            raise InputError(f"no quarantined candidate {qid!r}")
        held = found[0]
        if held.expires_at <= now:
            gate.ledger.release([qid])
            raise InputError(f"quarantined candidate {qid!r} expired")
        cand = held.candidate.model_copy(
            update={"cited": True, "verification_status": f"approved_by:{reviewer}"}
        )
        record = build_record(cand, policy=gate.policy_for(cand.memory_space_id), now=now)
        record = record.model_copy(update={"tier": Tier.CONFIRMED})
        if gate.is_tombstoned(cand.source_record_id, record.id):
            gate.ledger.release([qid])
            decision = WriteDecision(
                index=0, action=WriteAction.REJECT, id=qid, reasons=(WriteReason.TOMBSTONED,)
            )
        elif _already_approved(gate, record):
            # A retry of an approval whose reply was lost (the server went away after the commit,
            # before the release): the memory is there; writing it again would merge it into
            # itself and count one reviewer's approval as new evidence.
            gate.ledger.release([qid])
            decision = WriteDecision(index=0, action=WriteAction.WRITE, id=record.id)
        else:
            base = WriteDecision(index=0, action=WriteAction.WRITE, id=record.id)
            [decision] = gate.commit_records([(base, record)], now, dry_run=False)
            gate.ledger.release([qid])
    gate.audit([decision], now, dry_run=False, path=WritePath.operator(name=f"review:{reviewer}"))
    return decision


def _already_approved(gate: WriteGate, record: Any) -> bool:
    """Whether this approval's memory is already stored, from this same held candidate."""
    got = gate.target.get([record.id], memory_space_id=record.memory_space_id)
    return bool(got) and (
        (got[0].verification_status or "").startswith("approved_by:")
        and got[0].source_record_id == record.source_record_id
        and got[0].body == record.body
    )


def reject(gate: WriteGate, qid: str) -> bool:
    """Discard a held candidate; returns whether it existed."""
    gate.check_writable()
    with gate.lock:
        if not gate.ledger.held(ids=[qid]):
            return False
        gate.ledger.release([qid])
        return True


def purge_quarantine(gate: WriteGate) -> int:
    """Discard expired held candidates (W6); returns how many."""
    gate.check_writable()
    with gate.lock:
        ids = gate.ledger.expired_held(gate.now())
        if ids:
            gate.ledger.release(ids)
        return len(ids)
