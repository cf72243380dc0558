"""Ranking metrics and the independent oracles of the evaluation (E1): pure functions.

The oracles (:func:`visible_to`, :func:`is_out_of_date`) are written apart from the gate's rules
on purpose, so that a bug in a rule cannot hide itself in the metric that checks it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta

from ..config import GateConfig
from ..model import MemoryRecord, Scope, Visibility
from ..timeutil import to_utc

__all__ = ["is_out_of_date", "ndcg_at_k", "precision_at_k", "recall_at_k", "reciprocal_rank", "visible_to"]


def recall_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Share of relevant ids among the first ``k`` ranked ids (``None`` if nothing is relevant)."""
    rel = set(relevant)
    if not rel:
        return None
    return len(rel.intersection(ranked[:k])) / len(rel)


def precision_at_k(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """Share of the first ``k`` ranked ids that are relevant (``None`` if nothing was ranked)."""
    top = list(ranked[:k])
    if not top:
        return None
    rel = set(relevant)
    return sum(1 for i in top if i in rel) / len(top)


def reciprocal_rank(ranked: Sequence[str], relevant: Iterable[str], k: int) -> float | None:
    """``1 / rank`` of the first relevant id in the first ``k`` (0 if none; ``None`` if none relevant)."""
    rel = set(relevant)
    if not rel:
        return None
    for rank, mid in enumerate(ranked[:k], start=1):
        if mid in rel:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], gains: Mapping[str, float], k: int) -> float | None:
    """Normalised discounted cumulative gain at ``k`` (``None`` if no id has a positive gain)."""
    positive = sorted((g for g in gains.values() if g > 0), reverse=True)
    if not positive:
        return None
    seen: set[str] = set()
    dcg = 0.0
    for rank, mid in enumerate(ranked[:k], start=1):
        if mid in seen:
            continue
        seen.add(mid)
        dcg += gains.get(mid, 0.0) / math.log2(rank + 1)
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(positive[:k], start=1))
    return dcg / idcg


# -- independent oracles --------------------------------------------------------------------------


def visible_to(record: MemoryRecord, scope: Scope) -> bool:
    """Reference scope check (R1, R2), written apart from the gate's rule on purpose.

    Same memory space, same route (no route matches no route), and either shared or owned by the
    scope's user and agent.
    """
    if record.memory_space_id != scope.memory_space_id:
        return False
    if (record.route_id or "") != (scope.route_id or ""):
        return False
    if record.visibility == Visibility.SHARED:
        return True
    return record.user_id == scope.user_id and record.agent_id == scope.agent_id


def is_out_of_date(
    record: MemoryRecord,
    *,
    now: datetime,
    config: GateConfig,
    superseded_ids: Iterable[str] = (),
) -> bool:
    """Whether a memory is out of date at ``now`` (the ``stale_rate`` definition above).

    Args:
        record: the stored memory.
        now: the evaluation instant (aware).
        config: the settings of the memory's space (``max_age_days``, ``freshness_exempt_tags``).
        superseded_ids: ids that some memory of the space lists in its ``supersedes``.
    """
    now = to_utc(now)
    exempt = not set(record.tags).isdisjoint(config.freshness_exempt_tags)
    if not exempt and now - to_utc(record.updated_at) > timedelta(days=config.max_age_days):
        return True
    if record.superseded_by is not None or record.id in set(superseded_ids):
        return True
    if record.valid_from is not None and to_utc(record.valid_from) > now:
        return True
    if record.valid_to is not None and to_utc(record.valid_to) <= now:
        return True
    return record.expires_at is not None and to_utc(record.expires_at) <= now
