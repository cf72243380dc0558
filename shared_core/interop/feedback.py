"""The one warning line when a gate run accepts nothing or a write batch stores nothing (counts, never text)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..recall.gate import GateResult
from ..write import WriteAction, WriteDecision

__all__ = ["recall_feedback", "write_feedback"]

# -- feedback ---------------------------------------------------------------------------------


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))


def recall_feedback(
    result: GateResult, component: str, *, plain: int = 0, semantic: bool = True
) -> str | None:
    """The warning line for a gate run that accepted nothing from a non-empty list, else ``None``.

    Args:
        result: the gate result.
        component: the component's name.
        plain: how many candidates carried no record metadata.
        semantic: whether a semantic score was computed (an embedding or ``score_key``).
    """
    audit = result.audit
    if result.accepted or audit.input_count == 0:
        return None
    line = f"{component} accepted 0 of {audit.input_count} candidates ({_counts(audit.counts)})"
    hints = []
    if plain:
        hints.append(
            f"{plain} carry no record metadata: add user_id, agent_id, memory_space_id, updated_at "
            "(ISO 8601) and status to their metadata, write them through GatedVectorStore, or pass "
            "plain_documents='owned'"
        )
    if audit.counts.get("low_score") and not semantic:
        hints.append("no semantic score was computed: pass an embedding (or score_key=)")
    return "; ".join([line, *hints])


def write_feedback(decisions: Sequence[WriteDecision], component: str) -> str | None:
    """The warning line for a write batch that stored nothing, else ``None``."""
    kept = (WriteAction.WRITE, WriteAction.UPDATE, WriteAction.MERGE)
    if not decisions or any(d.action in kept for d in decisions):
        return None
    actions: dict[str, int] = {}
    reasons: dict[str, int] = {}
    for d in decisions:
        actions[d.action.value] = actions.get(d.action.value, 0) + 1
        for r in d.reasons:
            reasons[r.value] = reasons.get(r.value, 0) + 1
    line = (
        f"{component} stored 0 of {len(decisions)} documents ({_counts(actions)}; reasons {_counts(reasons)})"
    )
    hints = []
    if "quarantine" in actions:
        hints.append(
            "held ones wait for review (quarantine_list, quarantine_approve); for a user's own "
            "statements set origin='user_explicit' on the write filter"
        )
    if "scope_mismatch" in reasons:
        hints.append("metadata naming another owner is refused: the write filter's scope is the owner")
    return "; ".join([line, *hints])
