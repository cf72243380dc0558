"""The recall gate: every hit is accepted or rejected with a reason (R1-R10).

:meth:`RecallGate.evaluate` runs the policy (an ordered tuple of rules, see :mod:`.rules`) on
every hit, records every failed rule (the first is the primary reason), then applies tier
priority and budgets (``max_hits``, optional ``max_tokens``) to the hits that passed. It never
raises because of one bad hit: a hit that cannot be parsed, or on which a rule raises, is
rejected as ``invalid``. Accepted plus rejected is always exactly the input, disjoint.

Only a missing scope raises (:class:`~shared_core.errors.ScopeError`): an unscoped search is a
misuse, not a decision.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..audit import AuditRecord, AuditSink, RejectedEntry, count_reasons, emit, query_hash
from ..config import SEED_CALIBRATION, ConfigBook, GateConfig, ScoreCalibration
from ..errors import ConfigError, InputError
from ..model import Hit, Reason, Rejection, Scope, Status, coerce_scope
from ..text import tokenize
from ..timeutil import Clock, parse_datetime, system_clock, to_utc
from .rules import DEFAULT_RULES, GateContext, Rule, in_scope, rule_name, support

__all__ = ["ConfigDiff", "GateResult", "RecallGate", "estimate_tokens"]

_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def estimate_tokens(text: str) -> int:
    """Rough token count: one per CJK character plus one per four other characters."""
    cjk = len(_CJK_CHAR.findall(text))
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True, slots=True)
class GateResult:
    """The outcome of one gate run: accepted hits in order, rejections, and the audit record."""

    accepted: tuple[Hit, ...]
    rejected: tuple[Rejection, ...]
    audit: AuditRecord

    @property
    def accepted_ids(self) -> list[str]:
        """Ids of accepted hits, in order."""
        return [h.record.id for h in self.accepted]

    @property
    def rejected_ids(self) -> list[str]:
        """Ids of rejected hits, in input order."""
        return [r.id for r in self.rejected]

    def reasons(self) -> dict[str, Reason]:
        """Primary reason per rejected id."""
        return {r.id: r.reason for r in self.rejected}

    def to_json_dict(self) -> dict[str, Any]:
        """The ``recall-gate gate --json`` shape: accepted ids, rejections, audit."""
        return {
            "accepted": self.accepted_ids,
            "rejected": [
                {"id": r.id, "reason": r.reason.value, "reasons": [x.value for x in r.reasons]}
                for r in self.rejected
            ],
            "audit": self.audit.model_dump(mode="json"),
        }

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: accepted vs rejected, reason badges, channel scores."""
        from ..display import gate_result_html

        return gate_result_html(self)

    def tool_result(self) -> dict[str, Any]:
        """What an agent tool returns (R11): accepted memories for the model, a summary for operators."""
        return {
            "accepted": [
                {
                    "id": h.record.id,
                    "title": h.record.title,
                    "body": h.record.body,
                    "updated_at": h.record.updated_at.isoformat(),
                    "provenance": h.provenance(),
                }
                for h in self.accepted
            ],
            "audit": self.audit.summary(),
        }


@dataclass(frozen=True)
class ConfigDiff:
    """What a configuration change would change for one batch (R10 what-if)."""

    newly_accepted: tuple[str, ...]
    newly_rejected: tuple[str, ...]
    before: GateResult
    after: GateResult


def _raw_id(raw: object, index: int) -> str:
    if isinstance(raw, Hit):
        rid: object = getattr(getattr(raw, "record", None), "id", None)
    elif isinstance(raw, Mapping):
        rid = raw.get("id")
    else:
        rid = None
    if isinstance(rid, str) and rid.strip() and len(rid) <= 256:
        return rid
    return f"#{index}"


def _raw_title(raw: object) -> str:
    title = raw.get("title") if isinstance(raw, Mapping) else None
    return title if isinstance(title, str) else ""


class RecallGate:
    """Decides, for every retrieved hit, whether it may reach the model.

    Args:
        config: one :class:`GateConfig` for every memory space, or a :class:`ConfigBook` with
            per-space overrides. Defaults to the seeds' defaults.
        rules: the policy, an ordered tuple of rules (default :data:`DEFAULT_RULES`).
        sinks: audit sinks that receive one record per run (R9).
        clock: returns the current aware time (tests pass a frozen clock).
        token_counter: estimates tokens for ``max_tokens`` budgets.
        calibration: the thresholds for settings that leave them unset: the calibration of the
            embedding that scores the hits (the store passes its embedding's, see
            :func:`shared_core.embedding.calibration_of`), or just its ``min_score``; default the
            seeds' 0.78 with no relative rule, for scores imported from elsewhere (DESIGN "Scores").

    Example:
        >>> gate = RecallGate(GateConfig(min_score=0.5))
        >>> result = gate.evaluate(hits, scope=Scope(user_id="u", agent_id="a", memory_space_id="s"))
        >>> result.accepted_ids, result.reasons()
    """

    def __init__(
        self,
        config: GateConfig | ConfigBook | None = None,
        *,
        rules: Sequence[Rule] = DEFAULT_RULES,
        sinks: Sequence[AuditSink] = (),
        clock: Clock = system_clock,
        token_counter: Any = estimate_tokens,
        calibration: ScoreCalibration | float = SEED_CALIBRATION,
    ) -> None:
        if config is None:
            config = GateConfig()
        self.book = config if isinstance(config, ConfigBook) else ConfigBook(default=config)
        if not isinstance(calibration, ScoreCalibration):
            try:
                calibration = ScoreCalibration(min_score=calibration)
            except ValidationError:
                raise ConfigError(
                    "calibration must be a ScoreCalibration or a min_score in [-1, 1]"
                ) from None
        self.calibration: ScoreCalibration = calibration
        self._resolved: dict[GateConfig, GateConfig] = {}
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.rule_names: tuple[str, ...] = tuple(rule_name(r) for r in self.rules)
        self.sinks: tuple[AuditSink, ...] = tuple(sinks)
        self.clock = clock
        self.token_counter = token_counter

    def config_for(self, scope: Scope) -> GateConfig:
        """The settings of the scope's memory space, thresholds resolved (``min_score`` never ``None``)."""
        return self.resolve(self.book.for_space(scope.memory_space_id))

    def resolve(self, config: GateConfig) -> GateConfig:
        """``config`` with its unset thresholds taken from this gate's ``calibration``."""
        if None not in (config.min_score, config.anchor_score, config.relative_margin, config.relative_floor):
            return config
        found = self._resolved.get(config)
        if found is None:
            if len(self._resolved) > 256:  # what-if previews may pass many configs
                self._resolved.clear()
            found = self._resolved[config] = config.resolved(self.calibration)
        return found

    def evaluate(
        self,
        hits: Iterable[Hit | Mapping[str, Any]],
        *,
        scope: Scope | Mapping[str, Any] | None,
        query: str | None = None,
        dry_run: bool = False,
        now: datetime | None = None,
        config: GateConfig | None = None,
        emit_audit: bool = True,
        extra: Mapping[str, Any] | None = None,
    ) -> GateResult:
        """Accept or reject every hit, in the order given (retrieval rank order).

        Args:
            hits: hits, or mappings in the seeds' flat ``MemoryHit`` shape.
            scope: the query's scope; required (R1).
            query: the query text (for the short-query threshold and the audit hash).
            dry_run: mark the run as a preview (R10); decisions are identical.
            now: override the clock for this run.
            config: override the settings for this run (what-if previews).
            emit_audit: send the audit record to the sinks (the record is returned either way).
            extra: extra, text-free fields for the audit record (e.g. timings of retrieval).

        Returns:
            The accepted hits, the rejections and the audit record.

        Raises:
            ScopeError: if ``scope`` is missing or incomplete.
        """
        started = time.perf_counter()
        scope = coerce_scope(scope)
        cfg = self.resolve(config) if config is not None else self.config_for(scope)
        now_utc = _instant(now) if now is not None else to_utc(self.clock())

        parsed: list[tuple[int, object, Hit | None]] = []
        problems: dict[int, tuple[str, ...]] = {}
        for index, raw in enumerate(hits):
            hit: Hit | None = None
            if isinstance(raw, Hit):
                hit = raw
            elif isinstance(raw, Mapping):
                try:
                    hit = Hit.from_flat(raw)
                except Exception as exc:
                    problems[index] = _problem_fields(exc)
            else:
                problems[index] = ("not_a_hit",)
            parsed.append((index, raw, hit))

        ctx = GateContext(
            scope=scope,
            config=cfg,
            now=now_utc,
            query_terms=len(tokenize(query)) if query is not None else None,
            superseded_ids=self._superseded_in_batch(parsed, scope),
            best_support=self._best_support(parsed, scope) if cfg.relative_rule() else None,
        )

        seen: set[str] = set()
        passing: list[tuple[int, Hit]] = []
        rejected: list[tuple[int, Rejection]] = []
        for index, item, hit in parsed:
            if hit is None:
                rejected.append(
                    (
                        index,
                        self._reject(
                            _raw_id(item, index), _raw_title(item), (Reason.INVALID,), problems[index]
                        ),
                    )
                )
                continue
            failures, failed_rules = self._run_rules(hit, ctx)
            hid = _raw_id(hit, index)
            if not failures and hid in seen:
                failures, failed_rules = [Reason.INVALID], ["duplicate_id"]
            if failures:
                rejected.append(
                    (index, self._reject(hid, _safe_title(hit), tuple(failures), tuple(failed_rules), hit))
                )
            else:
                seen.add(hid)
                passing.append((index, hit))

        accepted, over = self._apply_budget(passing, cfg)
        if cfg.refuse_joint_instructions and len(accepted) > 1:
            accepted, joint = _without_joint_instructions(accepted, passing)
            for index, hit, rules in joint:
                rejected.append(
                    (index, self._reject(hit.record.id, hit.record.title, (Reason.INJECTION,), rules, hit))
                )
        for index, hit in over:
            rejected.append(
                (
                    index,
                    self._reject(hit.record.id, hit.record.title, (Reason.OVER_BUDGET,), ("budget",), hit),
                )
            )
        rejected.sort(key=lambda item: item[0])
        rejections = tuple(r for _, r in rejected)

        audit = AuditRecord.model_construct(
            event="recall",
            at=now_utc.isoformat(),
            query_hash=query_hash(query),
            query=query if cfg.audit_query_text else None,
            scope=scope.model_dump(),
            accepted_ids=tuple(h.record.id for h in accepted),
            rejected=tuple(
                RejectedEntry(r.id, r.reason.value, tuple(x.value for x in r.reasons)) for r in rejections
            ),
            counts=count_reasons(r.reason.value for r in rejections),
            input_count=len(parsed),
            dry_run=dry_run,
            config_hash=cfg.config_hash(),
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
            extra=dict(extra or {}),
        )
        if emit_audit:
            emit(audit, self.sinks)
        return GateResult(accepted=tuple(accepted), rejected=rejections, audit=audit)

    def preview(self, hits: Iterable[Hit | Mapping[str, Any]], **kwargs: Any) -> GateResult:
        """Dry-run (R10): the same decisions, marked as a preview; nothing is passed on."""
        kwargs["dry_run"] = True
        return self.evaluate(hits, **kwargs)

    def compare(
        self,
        hits: Sequence[Hit | Mapping[str, Any]],
        *,
        scope: Scope | Mapping[str, Any],
        new_config: GateConfig,
        query: str | None = None,
        now: datetime | None = None,
    ) -> ConfigDiff:
        """What would change if the scope's settings were ``new_config`` (what-if, R10).

        Both runs are dry-runs evaluated at the same instant; no audit record is emitted.
        """
        scope = coerce_scope(scope)
        at = to_utc(now) if now is not None else to_utc(self.clock())
        hits = list(hits)
        before = self.evaluate(hits, scope=scope, query=query, dry_run=True, now=at, emit_audit=False)
        after = self.evaluate(
            hits, scope=scope, query=query, dry_run=True, now=at, config=new_config, emit_audit=False
        )
        b, a = set(before.accepted_ids), set(after.accepted_ids)
        return ConfigDiff(
            newly_accepted=tuple(i for i in after.accepted_ids if i not in b),
            newly_rejected=tuple(i for i in before.accepted_ids if i not in a),
            before=before,
            after=after,
        )

    # -- internals ---------------------------------------------------------------------------

    def _run_rules(self, hit: Hit, ctx: GateContext) -> tuple[list[Reason], list[str]]:
        failures: list[Reason] = []
        names: list[str] = []
        for rule, name in zip(self.rules, self.rule_names, strict=True):
            try:
                reason = rule(hit, ctx)
            except Exception:
                reason = Reason.INVALID
            if reason is None:
                continue
            if not isinstance(reason, Reason):
                reason = Reason.POLICY
            failures.append(reason)
            names.append(name)
            if reason is Reason.INVALID:
                break  # nothing else can be judged on an invalid hit
        return failures, names

    @staticmethod
    def _superseded_in_batch(
        parsed: Sequence[tuple[int, object, Hit | None]], scope: Scope
    ) -> frozenset[str]:
        ids: set[str] = set()
        for _, _, hit in parsed:
            if hit is None:
                continue
            try:
                r = hit.record
                if (
                    r.supersedes
                    and in_scope(hit, scope)
                    and r.deleted_at is None
                    and r.status in (Status.APPROVED, Status.DRAFT)
                ):
                    ids.update(s for s in r.supersedes if isinstance(s, str) and s != r.id)
            except Exception:
                continue
        return frozenset(ids)

    @staticmethod
    def _best_support(parsed: Sequence[tuple[int, object, Hit | None]], scope: Scope) -> float | None:
        """The highest support among the batch's in-scope hits with valid scores (the anchor)."""
        best: float | None = None
        for _, _, hit in parsed:
            if hit is None:
                continue
            try:
                if not in_scope(hit, scope):
                    continue  # another scope's memory never vouches for this query's topic
                value = support(hit)
            except Exception:
                continue
            if value is not None and (best is None or value > best):
                best = value
        return best

    def _apply_budget(
        self, passing: list[tuple[int, Hit]], cfg: GateConfig
    ) -> tuple[list[Hit], list[tuple[int, Hit]]]:
        priority = {tier: i for i, tier in enumerate(cfg.tier_priority)}
        ordered = sorted(
            passing, key=lambda item: (priority.get(item[1].record.tier, len(priority)), item[0])
        )
        accepted: list[Hit] = []
        over: list[tuple[int, Hit]] = []
        tokens_left = cfg.max_tokens
        for index, hit in ordered:
            if len(accepted) >= cfg.max_hits:
                over.append((index, hit))
                continue
            if tokens_left is not None:
                cost = int(self.token_counter(f"{hit.record.title}\n{hit.record.body}"))
                if cost > tokens_left:
                    over.append((index, hit))
                    continue
                tokens_left -= cost
            accepted.append(hit)
        return accepted, over

    @staticmethod
    def _reject(
        hid: str, title: str, reasons: tuple[Reason, ...], rules: tuple[str, ...], hit: Hit | None = None
    ) -> Rejection:
        # Values are produced by the gate itself: construct without re-validation (hot path).
        return Rejection(hid, title, reasons[0], reasons, rules, hit)


def _problem_fields(exc: Exception) -> tuple[str, ...]:
    """``parse:<field>`` for each field a validation error names (names only, never values)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return ("parse",)
    fields = sorted({".".join(str(p) for p in e.get("loc", ()) if p != "record") for e in errors()})
    return tuple(f"parse:{f}" if f else "parse" for f in fields) or ("parse",)


def _safe_title(hit: Hit) -> str:
    title = getattr(getattr(hit, "record", None), "title", "")
    return title if isinstance(title, str) else ""


def _instant(now: object) -> datetime:
    """``now`` as aware UTC: a datetime, an ISO 8601 string or epoch seconds.

    Raises:
        InputError: if it is none of those.
    """
    try:
        return parse_datetime(now)
    except (TypeError, ValueError):
        raise InputError(f"now must be a datetime or an ISO 8601 time, not {type(now).__name__}") from None


def _without_joint_instructions(
    accepted: Sequence[Hit], passing: Sequence[tuple[int, Hit]]
) -> tuple[list[Hit], list[tuple[int, Hit, tuple[str, ...]]]]:
    """Drop accepted hits that together form an instruction, as the model would read them (W5).

    The accepted bodies are screened in their delivery order by
    :func:`shared_core.screening.joint_findings`; every hit a finding spans is removed, and the
    rest is screened again (a removal makes new neighbours), at most once per hit.
    """
    from ..screening import joint_findings

    position = {id(hit): index for index, hit in passing}
    kept = list(accepted)
    dropped: list[tuple[int, Hit, tuple[str, ...]]] = []
    for _ in range(len(accepted)):
        found = joint_findings([h.record.body for h in kept]) if len(kept) > 1 else []
        if not found:
            break
        span: dict[int, set[str]] = {}
        for f in found:
            for i in range(f.first_index, f.last_index + 1):
                span.setdefault(i, set()).add(f"joint:{f.rule}")
        dropped.extend(
            (position[id(kept[i])], kept[i], tuple(sorted(rules))) for i, rules in sorted(span.items())
        )
        kept = [h for i, h in enumerate(kept) if i not in span]
    return kept, dropped
