"""The operator's actions on a write filter, written once for both adapters (W6, L2, L3).

Both adapters' ``GatedVectorStore`` offer the same review and lifecycle methods over their own
write gate; each is the core's function (:mod:`shared_core.write.review`,
:mod:`shared_core.write.lifecycle`) called with that gate. A class mixing this in supplies
:meth:`OperatorActions._write_gate`.
"""

from __future__ import annotations

from typing import Any

from ..write import WriteDecision, WriteGate, lifecycle, review

__all__ = ["OperatorActions"]


class OperatorActions:
    """Review and lifecycle methods of a write filter (the operator's, not the caller's)."""

    def _write_gate(self) -> WriteGate:
        raise NotImplementedError

    def quarantine_list(self) -> list[dict[str, Any]]:
        """Held candidates for a reviewer (id, owner, reasons, times and the text: for operators only)."""
        return review.quarantine_list(self._write_gate())

    def quarantine_approve(self, qid: str, *, reviewer: str = "operator") -> WriteDecision:
        """Approve a held candidate: written as a confirmed, cited memory (W6)."""
        return review.approve(self._write_gate(), qid, reviewer=reviewer)

    def quarantine_reject(self, qid: str) -> bool:
        """Discard a held candidate; returns whether it existed."""
        return review.reject(self._write_gate(), qid)

    def quarantine_purge(self) -> int:
        """Discard expired held candidates (W6); returns how many."""
        return review.purge_quarantine(self._write_gate())

    def forget(self, source_record_id: str) -> dict[str, Any]:
        """Forget a source record for every owner: its memories deleted, tombstoned, audited (L2; an operator action)."""
        return lifecycle.forget(self._write_gate(), source_record_id)

    def purge_expired(self) -> int:
        """Delete memories past their retention expiry and expired quarantine (L3)."""
        return lifecycle.purge_expired(self._write_gate())
