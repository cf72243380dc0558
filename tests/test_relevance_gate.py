"""The relevance decision of the recall gate: absolute thresholds and the relative rule (R3, seed 000)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import GateConfig, RecallGate, load_config
from shared_core.config import SEED_CALIBRATION, ScoreCalibration
from shared_core.embedding import MiniLMEmbedding, calibration_of
from shared_core.model import Reason, Scope
from shared_core.testing import FrozenClock, HashEmbedding

NOW = "2026-07-13T00:00:00Z"
SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
CAL = ScoreCalibration(min_score=0.54, anchor_score=0.55, relative_margin=0.25, relative_floor=0.25)


def hit(mid: str, score: float | None, lexical: float | None = 0.0, **fields: Any) -> dict[str, Any]:
    return {
        "id": mid,
        "title": "",
        "body": f"memory {mid}",
        **SCOPE,
        "status": "approved",
        "tier": "confirmed",
        "updated_at": NOW,
        "tags": ["long_term_policy"],
        "score": score,
        "lexical_score": lexical,
        **fields,
    }


def gate(**cfg: Any) -> RecallGate:
    return RecallGate(GateConfig(**cfg), calibration=CAL, clock=FrozenClock(NOW))


def test_evidence_near_a_clear_answer_is_kept_and_the_vague_rest_rejected() -> None:
    """With a clearly relevant best hit, hits within the margin pass; one far below is low_score."""
    result = gate().evaluate(
        [hit("best", 0.72), hit("near", 0.50), hit("vague", 0.40), hit("noise", 0.20)], scope=SCOPE
    )
    assert result.accepted_ids == ["best", "near"]
    assert result.reasons() == {"vague": Reason.LOW_SCORE, "noise": Reason.LOW_SCORE}


def test_nothing_on_topic_means_nothing_accepted() -> None:
    """When even the best candidate is only vaguely similar, every hit is rejected (seed 000)."""
    result = gate().evaluate([hit("a", 0.50), hit("b", 0.48), hit("c", 0.30)], scope=SCOPE)
    assert result.accepted_ids == []
    assert set(result.reasons().values()) == {Reason.LOW_SCORE}


def test_lexical_evidence_raises_the_support() -> None:
    """A shared rare word (lexical score) counts in the support: it can anchor and bring a hit within the margin."""
    plain = gate().evaluate([hit("a", 0.50, 0.0), hit("b", 0.30, 0.0)], scope=SCOPE)
    assert plain.accepted_ids == []
    with_words = gate().evaluate([hit("a", 0.50, 0.4), hit("b", 0.30, 0.4)], scope=SCOPE)
    assert with_words.accepted_ids == ["a", "b"]  # support 0.70 anchors; 0.50 is within 0.25


def test_the_floor_holds_whatever_the_margin() -> None:
    """A hit under relative_floor is rejected even when it is within the margin of the best."""
    result = gate(relative_margin=1.0).evaluate([hit("best", 0.60), hit("low", 0.10)], scope=SCOPE)
    assert result.accepted_ids == ["best"]


def test_another_scopes_memory_never_anchors() -> None:
    """An out-of-scope hit with a high score does not make this scope's vague hits relevant."""
    foreign = hit("foreign", 0.95, user_id="u2")
    result = gate().evaluate([foreign, hit("mine", 0.45)], scope=SCOPE)
    assert result.accepted_ids == []
    assert result.reasons() == {"foreign": Reason.SCOPE_MISMATCH, "mine": Reason.LOW_SCORE}


def test_absolute_relevance_is_the_seeds_plain_threshold() -> None:
    """relevance = "absolute" turns the relative rule off: only min_score and min_lexical_score decide."""
    result = gate(relevance="absolute").evaluate([hit("best", 0.72), hit("near", 0.50)], scope=SCOPE)
    assert result.accepted_ids == ["best"]


def test_imported_scores_keep_the_seeds_behaviour() -> None:
    """A gate without an embedding's calibration (recall-gate gate) applies the seeds' 0.78 and no relative rule."""
    g = RecallGate(clock=FrozenClock(NOW))
    assert g.calibration == SEED_CALIBRATION
    assert g.config_for(Scope(**SCOPE)).relative_rule() is None
    assert g.evaluate([hit("a", 0.80), hit("b", 0.70)], scope=SCOPE).accepted_ids == ["a"]


def test_the_shipped_embedding_carries_its_calibration(tmp_path: Path) -> None:
    """MiniLM's calibration fills every unset threshold; a file overrides only what it sets."""
    cal = calibration_of(MiniLMEmbedding())
    assert cal.min_score == MiniLMEmbedding.recommended_min_score
    assert cal.anchor_score is not None and cal.relative_margin is not None
    p = tmp_path / "gate.toml"
    p.write_text('[gate]\nmax_age_days = 30\n\n[spaces."chat".gate]\nanchor_score = 0.6\n', encoding="utf-8")
    g = RecallGate(load_config(p), calibration=cal)
    base = g.config_for(Scope(**SCOPE))
    chat = g.config_for(Scope(**{**SCOPE, "memory_space_id": "chat"}))
    assert (base.min_score, base.anchor_score, base.relative_margin) == (
        cal.min_score,
        cal.anchor_score,
        cal.relative_margin,
    )
    assert chat.anchor_score == 0.6 and chat.relative_margin == cal.relative_margin
    # An embedding with only a recommended threshold gets no relative rule; none at all: the seeds'.
    assert calibration_of(type("E", (), {"recommended_min_score": 0.4})()).anchor_score is None
    assert calibration_of(HashEmbedding()) == SEED_CALIBRATION


scores = st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=12)


@settings(max_examples=80, deadline=None)
@given(scores, st.floats(0.3, 0.9), st.floats(0.0, 0.4), st.floats(0.0, 0.4))
def test_stricter_relative_settings_never_accept_more(
    values: list[float], anchor: float, m1: float, m2: float
) -> None:
    """A higher anchor or a smaller margin accepts a subset of what the looser setting accepts."""
    hits = [hit(f"m{i}", v) for i, v in enumerate(values)]
    loose = set(
        gate(anchor_score=anchor, relative_margin=max(m1, m2), max_hits=100)
        .evaluate(hits, scope=SCOPE)
        .accepted_ids
    )
    tight = set(
        gate(anchor_score=anchor, relative_margin=min(m1, m2), max_hits=100)
        .evaluate(hits, scope=SCOPE)
        .accepted_ids
    )
    higher = set(
        gate(anchor_score=anchor + 0.1, relative_margin=max(m1, m2), max_hits=100)
        .evaluate(hits, scope=SCOPE)
        .accepted_ids
    )
    assert tight <= loose and higher <= loose


@settings(max_examples=80, deadline=None)
@given(scores)
def test_the_relative_rule_only_adds_to_the_absolute_thresholds(values: list[float]) -> None:
    """Everything the absolute thresholds accept, the relative rule accepts too (it never rejects more)."""
    hits = [hit(f"m{i}", v) for i, v in enumerate(values)]
    absolute = set(gate(relevance="absolute", max_hits=100).evaluate(hits, scope=SCOPE).accepted_ids)
    relative = set(gate(max_hits=100).evaluate(hits, scope=SCOPE).accepted_ids)
    assert absolute <= relative
