"""Gate configuration: the seeds' defaults, per-memory-space overrides from TOML, a stable hash.

Thresholds are configuration, never code (R3): one :class:`GateConfig` per memory space, falling
back to the defaults. A TOML file looks like this::

    [gate]                      # defaults for every memory space
    max_age_days = 90           # min_score not set: the embedding's calibrated threshold

    [spaces."imported".gate]    # scores from another system: the seeds' 0.78 means them
    min_score = 0.78

    [spaces."support-bot".gate] # overrides for one memory space
    max_age_days = 30
    allow_draft = true

The semantic threshold belongs to the embedding model (DESIGN "Scores"): ``min_score = None`` (the
default, and what a file that does not set ``min_score`` gives) means "the calibrated threshold of
the embedding that scored the hits". It is resolved where the embedding is known:
:class:`~shared_core.recall.gate.RecallGate` takes ``default_min_score`` (the store passes its
embedding's ``recommended_min_score``; a gate over imported scores keeps the seeds' 0.78), and
:meth:`GateConfig.resolved` fills it in. Loading a file therefore never replaces a calibrated
threshold with another model's.

Every audit record carries :meth:`GateConfig.config_hash` of the *resolved* settings, so a decision
can be traced to the exact configuration (threshold included) that made it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import ConfigError
from .model import Origin, Tier

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "LEXICAL_WEIGHT",
    "SEED_CALIBRATION",
    "SEED_MIN_SCORE",
    "ConfigBook",
    "GateConfig",
    "ScoreCalibration",
    "TrustAction",
    "TrustRule",
    "WritePolicy",
    "load_config",
]

MAX_DAYS = 36_500.0
"""Upper bound of every duration in days (100 years): larger values overflow datetime arithmetic."""

SEED_MIN_SCORE = 0.78
"""The seeds' ``min_score``: the default for similarity scores imported from elsewhere."""


LEXICAL_WEIGHT = 0.5
"""Weight of the lexical score in a hit's *support*, ``cosine + LEXICAL_WEIGHT * lexical``: the
evidence the relative rule compares (a shared rare word, a name, a code raises the confidence that
a memory is on the query's topic). Measured with the thresholds in benchmarks/conversational_eval.py."""


class ScoreCalibration(BaseModel):
    """The score thresholds an embedding model ships, measured on labelled data (DESIGN "Scores").

    Attributes:
        min_score: cosine at which a hit passes on its own.
        anchor_score: support (``cosine + LEXICAL_WEIGHT * lexical``) the query's best in-scope
            candidate needs for the relative rule to apply: below it the scope holds nothing on
            the query's topic and only ``min_score`` / ``min_lexical_score`` let a hit through.
            ``None``: no relative rule (scores imported from elsewhere).
        relative_margin: a hit whose support is within this margin of the best candidate's passes
            (when the best reaches ``anchor_score``); a vaguely similar memory far below the best
            is rejected ``low_score``.
        relative_floor: the lowest cosine the relative rule accepts.
        source: how the values were measured (for people; not part of decisions).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    min_score: float = Field(ge=-1.0, le=1.0)
    anchor_score: float | None = Field(default=None, ge=-1.0, le=1.0 + LEXICAL_WEIGHT)
    relative_margin: float | None = Field(default=None, ge=0.0, le=2.0 + LEXICAL_WEIGHT)
    relative_floor: float | None = Field(default=None, ge=-1.0, le=1.0)
    source: str = ""


SEED_CALIBRATION = ScoreCalibration(min_score=SEED_MIN_SCORE, source="the seeds' 0.78, plain threshold")
"""For similarity scores imported from elsewhere (``recall-gate gate``): the seeds' threshold only."""


class GateConfig(BaseModel):
    """Recall-gate settings for one memory space (defaults are the seeds').

    Attributes:
        min_score: semantic similarity (cosine, or the exporter's similarity) a hit needs (R3);
            ``None``: the calibrated threshold of the embedding (see the module docstring).
        min_lexical_score: keyword-match score in [0, 1] that also lets a hit pass (``None``: off).
        relevance: ``"relative"`` (default): besides the absolute thresholds, a hit passes when
            the query's best in-scope candidate is clearly on topic (its support reaches
            ``anchor_score``) and the hit's support is within ``relative_margin`` of it (see
            :class:`ScoreCalibration`); ``"absolute"``: the seeds' plain thresholds only.
        anchor_score: see :class:`ScoreCalibration` (``None``: the embedding's calibrated value).
        relative_margin: see :class:`ScoreCalibration` (``None``: the embedding's).
        relative_floor: see :class:`ScoreCalibration` (``None``: the embedding's).
        short_query_max_terms: queries with at most this many terms count as short.
        short_query_min_score: stricter ``min_score`` for short queries (``None``: same as long).
        max_age_days: a memory older than this (by ``updated_at``) is stale (R4).
        freshness_exempt_tags: tags that make a memory exempt from the freshness rule.
        allow_draft: accept drafts too (never ``rejected``) (R5).
        superseded_markers: words that mark a memory as superseded (R6).
        max_hits: at most this many hits are accepted (R7).
        max_tokens: optional budget of estimated tokens over accepted title + body.
        tier_priority: accepted tiers, best first; tiers not listed are excluded.
        audit_query_text: put the query text in audit records (off: only its hash).
        refuse_joint_instructions: reject accepted hits that, read one after another as the model
            reads them, form an instruction none of them holds alone (a split, persistent
            injection: seed 003, W5); all the hits it spans are rejected as ``injection``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    min_score: float | None = Field(default=None, ge=-1.0, le=1.0)
    min_lexical_score: float | None = Field(default=0.75, gt=0.0, le=1.0)
    relevance: Literal["relative", "absolute"] = "relative"
    anchor_score: float | None = Field(default=None, ge=-1.0, le=1.0 + LEXICAL_WEIGHT)
    relative_margin: float | None = Field(default=None, ge=0.0, le=2.0 + LEXICAL_WEIGHT)
    relative_floor: float | None = Field(default=None, ge=-1.0, le=1.0)
    short_query_max_terms: int = Field(default=2, ge=0, le=10_000)
    short_query_min_score: float | None = Field(default=None, ge=-1.0, le=1.0)
    max_age_days: float = Field(default=90.0, gt=0.0, le=MAX_DAYS)
    freshness_exempt_tags: tuple[str, ...] = ("long_term_policy", "legal_stopline")
    allow_draft: bool = False
    superseded_markers: tuple[str, ...] = ("superseded", "旧方針", "使用禁止")
    max_hits: int = Field(default=8, ge=1, le=10_000)
    max_tokens: int | None = Field(default=None, ge=1, le=100_000_000)
    tier_priority: tuple[Tier, ...] = (Tier.WORKING, Tier.CONFIRMED)
    audit_query_text: bool = False
    refuse_joint_instructions: bool = True

    @field_validator("freshness_exempt_tags", "superseded_markers")
    @classmethod
    def _no_empty(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not v.strip() for v in value):
            raise ValueError("entries must not be empty")
        return value

    @field_validator("tier_priority")
    @classmethod
    def _unique_tiers(cls, value: tuple[Tier, ...]) -> tuple[Tier, ...]:
        if len(set(value)) != len(value):
            raise ValueError("tiers must not repeat")
        return value

    def config_hash(self) -> str:
        """A stable 16-hex-digit hash of every setting (same settings, same hash, any process)."""
        return _hash(self.model_dump(mode="json"))

    def resolved(self, calibration: ScoreCalibration | float = SEED_CALIBRATION) -> GateConfig:
        """These settings with every unset threshold taken from the embedding's calibration.

        Args:
            calibration: the :class:`ScoreCalibration` of the embedding that scored the hits, or
                just its ``min_score`` (default: the seeds' 0.78 and no relative rule, for scores
                imported from elsewhere).

        Raises:
            ConfigError: if a calibrated value is out of range.
        """
        cal = calibration if isinstance(calibration, ScoreCalibration) else ScoreCalibration(min_score=calibration)
        changes = {
            name: getattr(cal, name)
            for name in ("min_score", "anchor_score", "relative_margin", "relative_floor")
            if getattr(self, name) is None and getattr(cal, name) is not None
        }
        return self.replace(**changes) if changes else self

    def relative_rule(self) -> tuple[float, float, float] | None:
        """``(anchor_score, relative_margin, relative_floor)`` when the relative rule applies, else ``None``."""
        if self.relevance != "relative":
            return None
        if self.anchor_score is None or self.relative_margin is None or self.relative_floor is None:
            return None
        return (self.anchor_score, self.relative_margin, self.relative_floor)

    def replace(self, **changes: Any) -> GateConfig:
        """Return a validated copy with ``changes`` applied (for what-if previews, R10).

        Raises:
            ConfigError: if a changed value is invalid or unknown.
        """
        return _validate({**self.model_dump(), **changes}, where="replace()")


def _hash(data: Any) -> str:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _validate(data: Mapping[str, Any], *, where: str) -> GateConfig:
    try:
        return GateConfig.model_validate(dict(data))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'gate'}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(f"invalid gate configuration in {where}: {problems}") from None


TrustAction = Literal["write", "quarantine", "reject"]


class TrustRule(BaseModel):
    """Trust decision for one origin, by grounding (W3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cited: TrustAction = "write"
    uncited: TrustAction = "quarantine"
    confirmations_to_write: int | None = Field(default=2, ge=1)


def _default_trust() -> dict[Origin, TrustRule]:
    return {
        Origin.USER_EXPLICIT: TrustRule(cited="write", uncited="write"),
        Origin.EXTERNAL_VERIFIED: TrustRule(cited="write", uncited="write"),
        Origin.AGENT_INFERRED: TrustRule(cited="write", uncited="quarantine"),
        Origin.AGENT_SUMMARY: TrustRule(cited="write", uncited="quarantine"),
        Origin.EXTERNAL_UNVERIFIED: TrustRule(
            cited="quarantine", uncited="quarantine", confirmations_to_write=3
        ),
    }


def _default_initial_tiers() -> dict[Origin, Tier]:
    return {
        Origin.USER_EXPLICIT: Tier.CONFIRMED,
        Origin.EXTERNAL_VERIFIED: Tier.CONFIRMED,
        Origin.AGENT_INFERRED: Tier.TENTATIVE,
        Origin.AGENT_SUMMARY: Tier.TENTATIVE,
        Origin.EXTERNAL_UNVERIFIED: Tier.TENTATIVE,
    }


class WritePolicy(BaseModel):
    """Write-gate settings (W8: policy is configuration and code, not prompt text).

    Attributes:
        max_chars: largest title + body accepted; checked before any other work.
        pii: what to do with personal data: ``mask`` (default), ``reject`` or ``allow``.
        injection: ``quarantine`` (default) or ``reject`` text that tries to instruct the agent.
        owner_requests: ``write`` (default) or ``hold`` a user's own standing request to their
            assistant ("AIへ：家賃の前日にリマインドして"): a private memory through a path whose
            origin is ``user_explicit``, from no page, mail or file, one short paragraph that opens
            by addressing the assistant, with only order findings and nothing against the user
            (:mod:`shared_core.screening.owner`), is written with reason ``owner_request``;
            ``hold`` treats it as any other order.
        quoted_attacks: ``write`` (default) or ``hold`` an English note of the user's own that
            quotes an attack to record it ("a visitor typed 'ignore your previous instructions
            and ...'. The bot refused."): on the owner-request path, one paragraph that calls
            what it quotes an attack, every injection finding inside a quotation that holds a
            one-off order with no target, credential, secrecy or standing order
            (:mod:`shared_core.screening.quoted_en`), written with reason ``quoted_attack``.
        trust: per-origin decision for cited and uncited candidates (W3).
        default_origin: origin assumed when a candidate names none.
        dedup_threshold: cosine at or above which a scoped neighbour is the same memory (W2).
        correction_threshold: cosine down to which a scoped neighbour that is one statement with
            one value changed is superseded as a correction (L1): ``"My manager is Tom."`` /
            ``"... Sarah."`` (cosine 0.64 with MiniLM) or ``"The project deadline is March 3."`` /
            ``"... March 10."`` (0.918) under ``dedup_threshold``, when the record-change model of
            dedup reads the value as the value of a slot that holds one, by a margin
            (:data:`~shared_core.write.records.UNDER_BAR_MARGIN`); a relation that holds many
            (``"I speak French."`` / ``"... Spanish."``), a word changed, another language than
            English, a relation of a person's health or family (``"Allergy: Penicillin."`` /
            ``"Allergy: Codeine."``): nothing happens to a neighbour under ``dedup_threshold`` (no
            merge, no ``changed_fact``). Default 0.6: on 197 pairs written blind and never
            trained on, corrections superseded 59 -> 80 of 98, values that hold together 5 -> 4 of 99
            (``benchmarks/dedup_eval.py``); ``None``: ``dedup_threshold``.
        promote_at: evidence count at which a tentative memory becomes confirmed (W7).
        trusted_tier_origins: origins whose explicit ``tier`` is honoured (others may only lower it).
        initial_tiers: the tier a new memory starts in, by origin: what a person stated
            (``user_explicit``) or a verified source gave starts ``confirmed`` and is recallable at
            once; what an agent inferred or summarised starts ``tentative`` (seed 004), and so does
            any origin not listed.
        quarantine_ttl_days: how long a held candidate waits for review (W6).
        retention_days: default expiry of new memories (``None``: keep until deleted, L3).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    max_chars: int = Field(default=20_000, ge=1, le=10_000_000)
    pii: Literal["mask", "reject", "allow"] = "mask"
    injection: Literal["quarantine", "reject"] = "quarantine"
    owner_requests: Literal["write", "hold"] = "write"
    quoted_attacks: Literal["write", "hold"] = "write"
    trust: dict[Origin, TrustRule] = Field(default_factory=_default_trust)
    default_origin: Origin = Origin.AGENT_INFERRED
    dedup_threshold: float = Field(default=0.92, gt=0.0, le=1.0)
    correction_threshold: float | None = Field(default=0.6, gt=0.0, le=1.0)
    promote_at: int = Field(default=2, ge=1, le=1_000_000)
    trusted_tier_origins: tuple[Origin, ...] = (Origin.USER_EXPLICIT, Origin.EXTERNAL_VERIFIED)
    initial_tiers: dict[Origin, Tier] = Field(default_factory=_default_initial_tiers)
    quarantine_ttl_days: float = Field(default=14.0, ge=7.0, le=30.0)
    retention_days: float | None = Field(default=None, gt=0.0, le=MAX_DAYS)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> WritePolicy:
        """Build from a ``[write]`` TOML table.

        Raises:
            ConfigError: on unknown keys or invalid values.
        """
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid write policy: {problems}") from None

    def policy_hash(self) -> str:
        """Stable hash of the policy (goes into write audit records)."""
        return _hash(self.model_dump(mode="json"))


class ConfigBook(BaseModel):
    """Default gate settings plus per-memory-space overrides."""

    model_config = ConfigDict(frozen=True)

    default: GateConfig = GateConfig()
    spaces: dict[str, GateConfig] = Field(default_factory=dict)
    write_default: WritePolicy = Field(default_factory=lambda: WritePolicy())
    write_spaces: dict[str, WritePolicy] = Field(default_factory=dict)

    def for_space(self, memory_space_id: str) -> GateConfig:
        """The recall settings that apply to ``memory_space_id``."""
        return self.spaces.get(memory_space_id, self.default)

    def write_for(self, memory_space_id: str) -> WritePolicy:
        """The write policy that applies to ``memory_space_id``."""
        return self.write_spaces.get(memory_space_id, self.write_default)

    def config_hash(self) -> str:
        """Stable hash of the whole book."""
        return _hash(self.model_dump(mode="json"))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, base: GateConfig | None = None) -> ConfigBook:
        """Build a book from parsed TOML (``[gate]`` and ``[spaces.NAME.gate]`` tables).

        Raises:
            ConfigError: on unknown tables or keys, or invalid values.
        """
        unknown = set(data) - {"gate", "spaces", "write"}
        if unknown:
            raise ConfigError(f"unknown top-level table(s): {', '.join(sorted(unknown))}")
        base_values = (base or GateConfig()).model_dump()
        gate = data.get("gate", {})
        if not isinstance(gate, Mapping):
            raise ConfigError("[gate] must be a table")
        default = _validate({**base_values, **gate}, where="[gate]")
        write = data.get("write", {})
        if not isinstance(write, Mapping):
            raise ConfigError("[write] must be a table")
        write_default = WritePolicy.from_mapping(write)
        spaces: dict[str, GateConfig] = {}
        write_spaces: dict[str, WritePolicy] = {}
        raw_spaces = data.get("spaces", {})
        if not isinstance(raw_spaces, Mapping):
            raise ConfigError("[spaces] must be a table")
        for name, table in raw_spaces.items():
            if not isinstance(table, Mapping) or set(table) - {"gate", "write"}:
                raise ConfigError(f"[spaces.{name!r}] may only hold 'gate' and 'write' tables")
            for part in ("gate", "write"):
                if part in table and not isinstance(table[part], Mapping):
                    raise ConfigError(f"[spaces.{name!r}.{part}] must be a table")
            if "gate" in table:
                spaces[name] = _validate(
                    {**default.model_dump(), **table["gate"]}, where=f"[spaces.{name!r}.gate]"
                )
            if "write" in table:
                write_spaces[name] = WritePolicy.from_mapping(
                    {**write_default.model_dump(), **table["write"]}
                )
        return cls(default=default, spaces=spaces, write_default=write_default, write_spaces=write_spaces)


def load_config(path: str | Path, *, base: GateConfig | None = None) -> ConfigBook:
    """Load a :class:`ConfigBook` from a TOML file.

    Raises:
        ConfigError: if the file is missing, not TOML, or holds invalid settings.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {p}: {type(exc).__name__}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from None
    return ConfigBook.from_mapping(data, base=base)
