"""Property-based tests of the recall gate's invariants (R1-R10)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from invariants import assert_finite_scores, assert_no_text, assert_partition, assert_scope_safe, visible_to

from shared_core import GateConfig, Hit, MemoryRecord, RecallGate, Scope
from shared_core.testing import FrozenClock

NOW = datetime(2026, 7, 13, tzinfo=timezone.utc)
SCOPE = Scope(user_id="u1", agent_id="a1", memory_space_id="s1", route_id=None)
UNBOUNDED = {"max_hits": 10_000}

scores = st.one_of(
    st.none(), st.floats(min_value=-1.0, max_value=1.0), st.sampled_from([0.78, 0.7799999, 0.75])
)
times = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2026, 12, 31), timezones=st.just(timezone.utc)
)


@st.composite
def hit_dicts(draw: st.DrawFn, idx: int) -> dict[str, Any]:
    body = draw(st.sampled_from(["plain note", "旧方針 memo", "nothing", "SUPER\u200bSEDED x"]))
    return {
        "id": f"m{idx}",
        "title": draw(st.sampled_from(["", "title", "使用禁止"])),
        "body": f"{body} sentinel-{idx}-{draw(st.integers(0, 10**6))}",
        "score": draw(scores),
        "lexical_score": draw(st.one_of(st.none(), st.floats(0.0, 1.0))),
        "updated_at": draw(times),
        "status": draw(st.sampled_from(["approved", "draft", "rejected", "quarantined"])),
        "visibility": draw(st.sampled_from(["private", "shared"])),
        "tier": draw(st.sampled_from(["tentative", "confirmed", "working"])),
        "tags": draw(st.lists(st.sampled_from(["long_term_policy", "x", "legal_stopline"]), max_size=2)),
        "user_id": draw(st.sampled_from(["u1", "u2"])),
        "agent_id": draw(st.sampled_from(["a1", "a2"])),
        "memory_space_id": draw(st.sampled_from(["s1", "s2"])),
        "route_id": draw(st.sampled_from([None, "r1"])),
    }


@st.composite
def batches(draw: st.DrawFn, *, links: bool = True) -> list[dict[str, Any]]:
    n = draw(st.integers(0, 25))
    hits = [draw(hit_dicts(i)) for i in range(n)]
    if links and n > 1:
        for h in hits:
            if draw(st.booleans()) and draw(st.booleans()):
                h["supersedes"] = [f"m{draw(st.integers(0, n - 1))}"]
    return hits


configs = st.builds(
    GateConfig,
    min_score=st.floats(-1.0, 1.0),
    max_age_days=st.floats(1.0, 1000.0),
    allow_draft=st.booleans(),
    max_hits=st.integers(1, 30),
)


def gate(cfg: GateConfig | None = None) -> RecallGate:
    return RecallGate(cfg or GateConfig(), clock=FrozenClock(NOW))


@given(batches(), configs)
def test_partition_accepted_plus_rejected_is_the_input(hits: list[dict[str, Any]], cfg: GateConfig) -> None:
    """Accepted and rejected together are exactly the input, disjoint, with finite scores."""
    result = gate(cfg).evaluate(hits, scope=SCOPE)
    assert_partition(result, len(hits))
    assert_finite_scores(result)
    assert len(result.accepted) <= cfg.max_hits


@given(batches(), configs)
def test_scope_safety_whatever_the_score(hits: list[dict[str, Any]], cfg: GateConfig) -> None:
    """No hit outside the scope is accepted, even with score 1.0 and every other field perfect.

    Only the scope fields (user, agent, space, route, visibility) vary; every in-scope hit is then
    accepted (up to ``max_hits``), so the property is not met by rejecting everything.
    """
    for h in hits:
        h.update(
            score=1.0, lexical_score=1.0, status="approved", tier="confirmed", tags=[], title="",
            body=f"plain note {h['id']}", updated_at=NOW,
        )  # fmt: skip
        h.pop("supersedes", None)
    cfg = cfg.replace(min_score=0.5, allow_draft=False)
    result = gate(cfg).evaluate(hits, scope=SCOPE)
    assert_scope_safe(result, SCOPE)
    records = [MemoryRecord.model_validate({k: v for k, v in h.items() if "score" not in k}) for h in hits]
    visible = [r for r in records if visible_to(r, SCOPE)]
    assert len(result.accepted) == min(len(visible), cfg.max_hits)


@given(batches(), st.floats(-1.0, 1.0), st.floats(-1.0, 1.0))
def test_raising_min_score_never_accepts_more(hits: list[dict[str, Any]], a: float, b: float) -> None:
    """A higher min_score accepts a subset of what a lower one accepts."""
    lo, hi = sorted((a, b))
    low = gate(GateConfig(min_score=lo, **UNBOUNDED)).evaluate(hits, scope=SCOPE)
    high = gate(GateConfig(min_score=hi, **UNBOUNDED)).evaluate(hits, scope=SCOPE)
    assert set(high.accepted_ids) <= set(low.accepted_ids)


@given(batches(), st.floats(1.0, 2000.0), st.floats(1.0, 2000.0))
def test_lowering_max_age_never_accepts_more(hits: list[dict[str, Any]], a: float, b: float) -> None:
    """A shorter max_age_days accepts a subset of what a longer one accepts."""
    short, long_ = sorted((a, b))
    strict = gate(GateConfig(max_age_days=short, **UNBOUNDED)).evaluate(hits, scope=SCOPE)
    loose = gate(GateConfig(max_age_days=long_, **UNBOUNDED)).evaluate(hits, scope=SCOPE)
    assert set(strict.accepted_ids) <= set(loose.accepted_ids)


@given(batches(), st.integers(1, 10), st.integers(1, 10))
def test_smaller_budget_never_accepts_more(hits: list[dict[str, Any]], a: int, b: int) -> None:
    """Fewer max_hits never accepts more hits."""
    small, big = sorted((a, b))
    assert len(gate(GateConfig(max_hits=small)).evaluate(hits, scope=SCOPE).accepted) <= len(
        gate(GateConfig(max_hits=big)).evaluate(hits, scope=SCOPE).accepted
    )


@given(batches(links=False))
def test_decision_does_not_depend_on_the_rest_of_the_batch(hits: list[dict[str, Any]]) -> None:
    """Without supersede links or budgets, each hit gets the same decision alone as in the batch."""
    g = gate(GateConfig(**UNBOUNDED))
    together = g.evaluate(hits, scope=SCOPE)
    reasons = {r.id: r.reasons for r in together.rejected}
    for h in hits:
        alone = g.evaluate([h], scope=SCOPE)
        if h["id"] in together.accepted_ids:
            assert alone.accepted_ids == [h["id"]]
        else:
            assert alone.rejected[0].reasons == reasons[h["id"]]


@given(batches(), configs)
def test_deterministic_under_a_frozen_clock_and_dry_run_decides_the_same(
    hits: list[dict[str, Any]], cfg: GateConfig
) -> None:
    """Same input, same clock: same decisions; a dry-run decides identically and only flags the audit."""
    g = gate(cfg)
    before_hash = cfg.config_hash()
    first = g.evaluate(hits, scope=SCOPE)
    preview = g.preview(hits, scope=SCOPE)
    again = g.evaluate(hits, scope=SCOPE)
    assert first.accepted_ids == preview.accepted_ids == again.accepted_ids
    assert [(r.id, r.reasons) for r in first.rejected] == [(r.id, r.reasons) for r in preview.rejected]
    assert preview.audit.dry_run and not first.audit.dry_run
    assert g.config_for(SCOPE).config_hash() == before_hash


@given(batches(), configs)
def test_no_body_or_title_text_in_audit(hits: list[dict[str, Any]], cfg: GateConfig) -> None:
    """Audit records carry ids and reasons, never memory text."""
    result = gate(cfg).evaluate(hits, scope=SCOPE, query="what is the policy")
    assert_no_text(result.audit, [h["body"] for h in hits])
    assert "what is the policy" not in result.audit.to_json()


@given(hit_dicts(0), st.integers(-12 * 60, 14 * 60))
def test_same_instant_in_any_time_zone_gives_the_same_decision(h: dict[str, Any], offset_min: int) -> None:
    """An updated_at expressed in another offset is the same instant and gets the same decision."""
    tz = timezone(timedelta(minutes=offset_min))
    shifted = {**h, "updated_at": h["updated_at"].astimezone(tz).isoformat()}
    a = gate().evaluate([h], scope=SCOPE)
    b = gate().evaluate([shifted], scope=SCOPE)
    assert a.accepted_ids == b.accepted_ids
    assert [r.reasons for r in a.rejected] == [r.reasons for r in b.rejected]


invisible = st.sampled_from(
    ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\U000e0041", "\u202e", ""]
)


@given(
    st.sampled_from(["superseded", "旧方針", "使用禁止"]),
    st.lists(invisible, min_size=12, max_size=12),
    st.lists(st.booleans(), min_size=12, max_size=12),
    st.booleans(),
)
def test_marker_evasion_does_not_change_the_decision(
    marker: str, hidden: list[str], upper: list[bool], fullwidth: bool
) -> None:
    """Invisible characters, case and full-width letters inside a marker still reject the memory."""
    chars = []
    for i, ch in enumerate(marker):
        c = ch.upper() if upper[i] else ch
        if fullwidth and c.isascii() and c.isalpha():
            c = chr(ord(c) + 0xFEE0)
        chars.append(c + hidden[i])
    evasive = "".join(chars)
    base = {
        "id": "m",
        "body": f"note: {evasive} — do not use",
        "score": 0.95,
        "updated_at": NOW,
        "user_id": "u1",
        "agent_id": "a1",
        "memory_space_id": "s1",
    }
    result = gate().evaluate([base], scope=SCOPE)
    assert result.accepted_ids == []
    assert result.rejected[0].reason.value == "superseded"


@given(
    st.lists(
        st.one_of(
            st.none(), st.integers(), st.text(max_size=5), st.dictionaries(st.text(max_size=5), st.integers())
        ),
        max_size=8,
    )
)
def test_garbage_never_raises(items: list[Any]) -> None:
    """Arbitrary junk in the batch is rejected as invalid, never raised."""
    result = gate().evaluate(items, scope=SCOPE)
    assert result.accepted == ()
    assert all(r.reason.value == "invalid" for r in result.rejected)
    assert len(result.rejected) == len(items)


def test_model_construct_bypass_is_still_invalid() -> None:
    """A Hit built without validation (NaN score, naive time) is rejected as invalid, not accepted."""
    from shared_core.testing import make_record

    rec = make_record("x").model_copy(update={"updated_at": datetime(2026, 7, 1)})
    bad = [
        Hit.model_construct(record=make_record("nan"), score=float("nan")),
        Hit.model_construct(record=rec, score=0.9),
    ]
    result = gate().evaluate(bad, scope=SCOPE)
    assert result.accepted == ()
    assert [r.reason.value for r in result.rejected] == ["invalid", "invalid"]
