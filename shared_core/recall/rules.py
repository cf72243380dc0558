"""Recall rules: one signature, a policy is an ordered tuple of them (R1-R7).

A rule is any callable ``(hit, ctx) -> Reason | None``: it returns ``None`` when the hit passes
and a :class:`~shared_core.models.Reason` when it fails. The gate runs every rule on every hit and
records each failure; the first failure in policy order is the primary reason. Add a rule without
forking::

    def no_wiki(hit: Hit, ctx: GateContext) -> Reason | None:
        return Reason.POLICY if hit.record.source == "wiki" else None

    gate = RecallGate(rules=(*DEFAULT_RULES, no_wiki))

Rules read only the hit, the context and the configuration; they never raise on purpose (an
exception inside a rule rejects that hit as ``invalid``) and never change anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..config import LEXICAL_WEIGHT, SEED_MIN_SCORE, GateConfig
from ..model import Hit, Reason, Scope, Status, Visibility
from ..text import record_has_marker

__all__ = [
    "DEFAULT_RULES",
    "GateContext",
    "Rule",
    "rule_approval",
    "rule_deleted",
    "rule_expired",
    "rule_fresh",
    "rule_name",
    "rule_quarantined",
    "rule_scope",
    "rule_score",
    "rule_superseded",
    "rule_tier",
    "rule_valid",
    "support",
]


@dataclass(frozen=True, slots=True)
class GateContext:
    """What a rule may look at besides the hit.

    Attributes:
        scope: the scope of the query (R1).
        config: the settings of the scope's memory space.
        now: the gate's clock reading, aware UTC.
        query_terms: number of terms in the query (for the short-query threshold), or ``None``.
        superseded_ids: ids that another in-scope hit of the same batch declares it supersedes.
        best_support: the highest :func:`support` among the batch's in-scope hits (the anchor of
            the relative rule), or ``None``.
    """

    scope: Scope
    config: GateConfig
    now: datetime
    query_terms: int | None = None
    superseded_ids: frozenset[str] = field(default_factory=frozenset)
    best_support: float | None = None


Rule = Callable[[Hit, GateContext], Reason | None]


def rule_name(rule: Rule) -> str:
    """A rule's name: its ``name`` attribute, else its ``__name__``, else its class name."""
    name = getattr(rule, "name", None) or getattr(rule, "__name__", None)
    return str(name) if name else type(rule).__name__


def _in_range(value: object, low: float, high: float) -> bool:
    """``None``, or a real number (not a bool) in ``[low, high]``; NaN and infinities fail."""
    if value is None:
        return True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return low <= value <= high  # NaN fails both comparisons, infinities the range


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _aware(value: object) -> bool:
    return isinstance(value, datetime) and value.utcoffset() is not None


def rule_valid(hit: Hit, ctx: GateContext) -> Reason | None:
    """Structural validity: scores finite and in range, aware timestamps, known status, scope fields.

    Models validate on construction; this re-check catches objects built without validation.
    """
    r = hit.record
    # The bounded scores of DESIGN "Scores": cosine in [-1, 1], lexical share in [0, 1]. A value
    # outside its range (5.0, -2.0) is as meaningless as NaN: invalid, never compared.
    if not _in_range(hit.score, -1.0, 1.0) or not _in_range(hit.lexical_score, 0.0, 1.0):
        return Reason.INVALID
    if not (
        _nonempty(r.id) and _nonempty(r.user_id) and _nonempty(r.agent_id) and _nonempty(r.memory_space_id)
    ):
        return Reason.INVALID
    if not _aware(r.updated_at):
        return Reason.INVALID
    for ts in (r.valid_from, r.valid_to, r.deleted_at, r.expires_at, r.created_at):
        if ts is not None and not _aware(ts):
            return Reason.INVALID
    if not isinstance(r.status, Status) or not isinstance(r.visibility, Visibility):
        return Reason.INVALID
    return None


def rule_deleted(hit: Hit, ctx: GateContext) -> Reason | None:
    """A memory with ``deleted_at`` is never recalled (L2)."""
    return Reason.DELETED if hit.record.deleted_at is not None else None


def rule_quarantined(hit: Hit, ctx: GateContext) -> Reason | None:
    """A quarantined memory is never recalled (W6)."""
    return Reason.QUARANTINED if hit.record.status is Status.QUARANTINED else None


def in_scope(hit: Hit, scope: Scope) -> bool:
    """True when ``scope`` may see the hit: same space and route, and owner unless shared (R1, R2)."""
    r = hit.record
    if r.memory_space_id != scope.memory_space_id or (r.route_id or None) != scope.route_id:
        return False
    if r.visibility is Visibility.SHARED:
        return True
    return r.user_id == scope.user_id and r.agent_id == scope.agent_id


def rule_scope(hit: Hit, ctx: GateContext) -> Reason | None:
    """Outside the query's scope, or private to someone else: rejected whatever the score (R1, R2)."""
    return None if in_scope(hit, ctx.scope) else Reason.SCOPE_MISMATCH


def rule_expired(hit: Hit, ctx: GateContext) -> Reason | None:
    """Past its retention expiry (L3)."""
    exp = hit.record.expires_at
    return Reason.EXPIRED if exp is not None and exp <= ctx.now else None


def threshold_for(ctx: GateContext) -> float:
    """The semantic threshold for this query: ``min_score``, stricter for short queries (R3)."""
    cfg = ctx.config
    # The gate resolves an unset min_score to the embedding's threshold; a context built by hand
    # without it falls back to the seeds' value.
    base = cfg.min_score if cfg.min_score is not None else SEED_MIN_SCORE
    if (
        cfg.short_query_min_score is not None
        and ctx.query_terms is not None
        and ctx.query_terms <= cfg.short_query_max_terms
    ):
        return max(base, cfg.short_query_min_score)
    return base


def support(hit: Hit) -> float | None:
    """A hit's support: ``cosine + LEXICAL_WEIGHT * lexical`` (``None`` without a cosine)."""
    s = hit.score
    if s is None or not _in_range(s, -1.0, 1.0):
        return None
    lx = hit.lexical_score if _in_range(hit.lexical_score, 0.0, 1.0) else None
    return float(s) + LEXICAL_WEIGHT * float(lx or 0.0)


def rule_score(hit: Hit, ctx: GateContext) -> Reason | None:
    """Relevant enough: an absolute threshold, or close to a clearly relevant best candidate (R3).

    A hit passes when (1) its cosine reaches ``min_score`` (stricter for short queries), or (2) its
    lexical score reaches ``min_lexical_score``, or (3) with ``relevance = "relative"``: the
    query's best in-scope candidate has a support of at least ``anchor_score`` (the scope holds
    something clearly on the query's topic), this hit's support is within ``relative_margin`` of
    that best one, and its cosine is at least ``relative_floor``. So the evidence around a clear
    answer is kept, while a memory that is only vaguely similar, far below the best, or in a scope
    where nothing is on topic, is rejected (seed 000). Written as "pass only if >=" so that NaN
    never passes.
    """
    if hit.score is not None and hit.score >= threshold_for(ctx):
        return None
    lex_min = ctx.config.min_lexical_score
    if lex_min is not None and hit.lexical_score is not None and hit.lexical_score >= lex_min:
        return None
    rel = ctx.config.relative_rule()
    best = ctx.best_support
    if rel is not None and best is not None and best >= rel[0]:
        own = support(hit)
        if own is not None and own >= best - rel[1] and hit.score is not None and hit.score >= rel[2]:
            return None
    return Reason.LOW_SCORE


def rule_fresh(hit: Hit, ctx: GateContext) -> Reason | None:
    """Older than ``max_age_days`` by ``updated_at`` is stale, unless an exempt tag is present (R4)."""
    cfg = ctx.config
    if cfg.freshness_exempt_tags and not set(hit.record.tags).isdisjoint(cfg.freshness_exempt_tags):
        return None
    age = ctx.now - hit.record.updated_at
    return Reason.STALE if age > timedelta(days=cfg.max_age_days) else None


def rule_approval(hit: Hit, ctx: GateContext) -> Reason | None:
    """Only approved memories; with ``allow_draft`` anything but rejected (R5)."""
    status = hit.record.status
    ok = status in (Status.APPROVED, Status.DRAFT) if ctx.config.allow_draft else status is Status.APPROVED
    return None if ok else Reason.NOT_APPROVED


def rule_superseded(hit: Hit, ctx: GateContext) -> Reason | None:
    """Superseded by link, by a newer hit in the batch, by its validity window, or by a marker (R6)."""
    r = hit.record
    if r.superseded_by is not None or r.id in ctx.superseded_ids:
        return Reason.SUPERSEDED
    if (r.valid_from is not None and r.valid_from > ctx.now) or (
        r.valid_to is not None and r.valid_to <= ctx.now
    ):
        return Reason.SUPERSEDED
    markers = ctx.config.superseded_markers
    if markers and record_has_marker(r.title, r.body, markers):
        return Reason.SUPERSEDED
    return None


def rule_tier(hit: Hit, ctx: GateContext) -> Reason | None:
    """Tiers not in ``tier_priority`` (``tentative`` by default) are excluded (R7)."""
    return None if hit.record.tier in ctx.config.tier_priority else Reason.TIER_EXCLUDED


DEFAULT_RULES: tuple[Rule, ...] = (
    rule_valid,
    rule_deleted,
    rule_quarantined,
    rule_scope,
    rule_expired,
    rule_score,
    rule_fresh,
    rule_approval,
    rule_superseded,
    rule_tier,
)
"""The default policy, in the order that picks the primary reason (the seeds' order for
score → freshness → approval → superseded)."""
