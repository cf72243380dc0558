"""The seeds' five minimum tests, named as in the article (000, "テスト観点")."""

from __future__ import annotations

from shared_core import GateConfig, Reason, RecallGate, Scope
from shared_core.testing import FrozenClock, make_hit

SCOPE = Scope(user_id="u1", agent_id="a1", memory_space_id="s1")
CLOCK = FrozenClock("2026-07-13T00:00:00Z")


def gate(**cfg: object) -> RecallGate:
    return RecallGate(GateConfig(**cfg), clock=CLOCK)  # type: ignore[arg-type]


def test_out_of_scope_memory_is_never_mixed_in() -> None:
    """A memory of another user is rejected as scope_mismatch even with a perfect score."""
    hits = [make_hit("theirs", score=1.0, user_id="u2"), make_hit("mine", score=0.8)]
    result = gate().evaluate(hits, scope=SCOPE)
    assert result.accepted_ids == ["mine"]
    assert result.reasons() == {"theirs": Reason.SCOPE_MISMATCH}


def test_low_score_memory_is_dropped() -> None:
    """A hit below min_score is rejected as low_score."""
    result = gate().evaluate([make_hit("weak", score=0.5)], scope=SCOPE)
    assert result.accepted_ids == []
    assert result.reasons() == {"weak": Reason.LOW_SCORE}


def test_stale_short_lived_memo_is_dropped_and_long_term_policy_kept() -> None:
    """A 6-month-old memo is stale; a 2-year-old long_term_policy passes."""
    old = CLOCK.now.replace(year=2026, month=1)
    ancient = CLOCK.now.replace(year=2024)
    hits = [
        make_hit("memo", updated_at=old),
        make_hit("policy", updated_at=ancient, tags=["long_term_policy"]),
    ]
    result = gate().evaluate(hits, scope=SCOPE)
    assert result.accepted_ids == ["policy"]
    assert result.reasons() == {"memo": Reason.STALE}


def test_draft_and_rejected_are_not_used() -> None:
    """Drafts and rejected memories are not_approved by default."""
    hits = [make_hit("d", status="draft"), make_hit("r", status="rejected"), make_hit("ok")]
    result = gate().evaluate(hits, scope=SCOPE)
    assert result.accepted_ids == ["ok"]
    assert result.reasons() == {"d": Reason.NOT_APPROVED, "r": Reason.NOT_APPROVED}


def test_superseded_and_forbidden_documents_are_dropped() -> None:
    """Markers superseded / 旧方針 / 使用禁止 in title or body reject an otherwise valid memory."""
    hits = [
        make_hit("s", title="Release plan (superseded)"),
        make_hit("k", body="旧方針: 毎日投稿"),
        make_hit("f", title="使用禁止"),
        make_hit("ok"),
    ]
    result = gate().evaluate(hits, scope=SCOPE)
    assert result.accepted_ids == ["ok"]
    assert set(result.reasons().values()) == {Reason.SUPERSEDED}


def test_seed_example_stale_draft_primary_reason_is_stale() -> None:
    """The article's vitest example: a stale draft marked 旧方針 is rejected, primary reason stale."""
    hit = make_hit(
        "old-draft",
        score=0.94,
        title="旧アカウント運用案",
        body="旧方針として残す。使用禁止。",
        updated_at="2025-01-01T00:00:00.000Z",
        status="draft",
    )
    result = gate(min_score=0.78, max_age_days=90, allow_draft=False, max_hits=8).evaluate([hit], scope=SCOPE)
    assert result.accepted == ()
    assert result.rejected[0].reason is Reason.STALE
    assert result.rejected[0].reasons == (Reason.STALE, Reason.NOT_APPROVED, Reason.SUPERSEDED)
