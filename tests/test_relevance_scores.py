"""Regression tests for the score bugs of issue 11 (R3, H1, DESIGN "Scores").

Each test fails on the code before the fix (checked by reverting it; the mutation is named in each
docstring's second sentence):

* one lexical score definition for the store and the wrapped-retriever path;
* BM25 comparable across the private and shared partitions of a scope;
* a real range check in ``rule_valid``;
* loading a config file keeps the embedding's calibrated threshold unless it sets ``min_score``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stores import NOW, SCOPE, make_store, mem

from shared_core import GateConfig, RecallGate, load_config
from shared_core.model import Hit, MemoryRecord, Reason, Scope
from shared_core.recall.wrapped import Candidate, gate_candidates
from shared_core.retrieval.bm25 import BM25Partition, CorpusStats, lexical_scores, top_across, union_stats
from shared_core.testing import FrozenClock
from shared_core.text import tokenize

SCOPE_OBJ = Scope(**SCOPE)

BODIES = [
    "Invoice E-4012 was refunded after the billing review",
    "The billing review happens every Tuesday",
    "Refund policy: invoices older than a year are not refunded",
    "Billing review notes for the quarterly invoice run",
    "Tuesday standup moved to the small office",
]


# -- one lexical score for every path ---------------------------------------------------------------


def test_wrapped_path_computes_the_stores_lexical_score() -> None:
    """A wrapped retriever returning a scope's whole corpus gets the store's lexical scores.

    Fails with the old ``wrapped.lexical_share`` (unweighted share of query terms) in place of
    ``lexical_scores``: a memory holding only the common words of the query scored as high as one
    holding its rare error code.
    """
    store = make_store()
    store.add([mem(b, title=f"note {i}", id=f"m{i}") for i, b in enumerate(BODIES)])
    query = "billing review of invoice E-4012"
    hits, _ = store.search(query, scope=SCOPE, candidates=50)
    from_store = {h.id: h.lexical_score for h in hits}
    records = store.get([f"m{i}" for i in range(len(BODIES))], memory_space_id=SCOPE["memory_space_id"])
    cands = [
        Candidate(r.id, r.body, {**r.model_dump(mode="json", exclude={"id", "body"}), "title": r.title})
        for r in records
    ]
    gate = RecallGate(GateConfig(min_score=0.99, min_lexical_score=0.01), clock=FrozenClock(NOW))
    wrapped = gate_candidates(query, [cands], scope=SCOPE, gate=gate)
    seen = [*wrapped.result.accepted, *(r.hit for r in wrapped.result.rejected if r.hit is not None)]
    from_wrapped = {h.id: h.lexical_score for h in seen}
    assert set(from_wrapped) == {f"m{i}" for i in range(len(BODIES))}
    for mid, value in from_wrapped.items():
        assert value == pytest.approx(from_store.get(mid, 0.0)), mid
    # The rare code decides: the memory with E-4012 beats one with only "billing review".
    assert from_wrapped["m0"] > from_wrapped["m1"] + 0.2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "e-17", "tokyo"]), min_size=1, max_size=5),
    st.lists(
        st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "e-17", "tokyo", "x"]), max_size=6),
        min_size=1,
        max_size=8,
    ),
)
def test_lexical_score_is_bounded_and_monotone(query: list[str], docs: list[list[str]]) -> None:
    """The lexical score is in [0, 1], 1 for a document holding every query term, and adding terms never lowers it."""
    q = tokenize(" ".join(query))
    sets = [frozenset(tokenize(" ".join(d))) for d in docs]
    stats = CorpusStats.of_doc_sets(sets)
    values = lexical_scores(q, sets, stats=stats)
    assert all(0.0 <= v <= 1.0 for v in values)
    full = frozenset(q)
    assert lexical_scores(q, [full], stats=stats)[0] == pytest.approx(1.0)
    for ds, v in zip(sets, values, strict=True):
        assert lexical_scores(q, [ds | full], stats=stats)[0] >= v - 1e-12


# -- BM25 across the partitions of a scope -------------------------------------------------------------


def test_same_text_scores_the_same_in_the_private_and_the_shared_partition() -> None:
    """A memory's BM25 does not depend on which partition of the scope holds it.

    Fails when ``hybrid_search`` ranks each view with its own statistics (``view.bm25.top``): the
    shared memory, alone in its partition with filler, gets another IDF and average length.
    """
    store = make_store()
    private = [mem(b, id=f"p{i}") for i, b in enumerate(BODIES)]
    filler = [
        mem(f"Shared note {i} about the office plants", id=f"f{i}", visibility="shared") for i in range(6)
    ]
    twin = mem(BODIES[3], id="shared-twin", visibility="shared")
    decisions = store.import_records([*private, *filler, twin], skip=("dedup",))
    assert all(d.stored for d in decisions), [(d.action, d.detail) for d in decisions]
    hits, _ = store.search("quarterly invoice billing review", scope=SCOPE, candidates=50)
    by_id = {h.id: h for h in hits}
    assert by_id["shared-twin"].bm25_score == pytest.approx(by_id["p3"].bm25_score)
    assert abs(by_id["shared-twin"].keyword_rank - by_id["p3"].keyword_rank) == 1  # type: ignore[operator]


def test_a_lone_shared_match_does_not_outrank_better_private_matches() -> None:
    """Ranked as one corpus, a one-memory shared partition does not outrank private memories that match more.

    Fails with per-partition statistics: the term is rare in the shared partition (high IDF there)
    and common among the private memories (low IDF), so the weaker shared match ranked first.
    """
    private_tokens = [tokenize("budget review budget"), tokenize("budget review")] * 4 + [tokenize("lunch")]
    shared_tokens = [tokenize("budget")] + [tokenize(f"garden note {i}") for i in range(30)]
    priv = BM25Partition([f"p{i}" for i in range(len(private_tokens))], private_tokens)
    shared = BM25Partition([f"s{i}" for i in range(len(shared_tokens))], shared_tokens)
    q = tokenize("budget review")
    ranked = top_across([priv, shared], q, 10)
    first_partition, _, _ = ranked[0]
    assert first_partition == 0
    # Separately ranked, the bug: the shared memory's own-partition score beats every private one.
    assert shared.top(q, 1)[0][1] > max(s for _, s in priv.top(q, 10))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.sampled_from(["a1", "b2", "c3", "d4", "e5"]), min_size=0, max_size=6),
        min_size=1,
        max_size=12,
    ),
    st.integers(min_value=1, max_value=11),
)
def test_scores_across_partitions_equal_scores_of_one_index(docs: list[list[str]], cut: int) -> None:
    """Scoring two partitions with union statistics equals scoring one index over all their memories."""
    q = ["a1", "c3", "e5"]
    cut = min(cut, len(docs))
    whole = BM25Partition([str(i) for i in range(len(docs))], docs)
    left = BM25Partition([str(i) for i in range(cut)], docs[:cut])
    right = BM25Partition([str(i) for i in range(cut, len(docs))], docs[cut:])
    stats = union_stats([left.stats, right.stats])
    split = np.concatenate([left.scores_with(q, stats), right.scores_with(q, stats)])
    np.testing.assert_allclose(split, whole.scores(q), rtol=1e-9, atol=1e-12)


# -- a real range check ------------------------------------------------------------------------------


def _hit(**scores: Any) -> Hit:
    record = MemoryRecord(
        id="m1",
        title="t",
        body="b",
        **SCOPE,
        status="approved",
        tier="confirmed",
        updated_at=NOW,
        tags=["long_term_policy"],
    )
    return Hit.model_construct(record=record, **{"score": None, "lexical_score": None, **scores})


@pytest.mark.parametrize(
    "scores",
    [{"score": 5.0}, {"score": -1.5}, {"score": 1.0000001}, {"lexical_score": 1.5}, {"lexical_score": -0.1},
     {"score": float("inf")}, {"score": float("nan")}, {"score": True}, {"lexical_score": 2}],
)  # fmt: skip
def test_scores_out_of_range_are_invalid(scores: dict[str, Any]) -> None:
    """A hit built without validation whose score is outside its range is rejected as invalid.

    Fails with the old check ``(... in range) or _finite(s)``, which accepted any finite score.
    """
    gate = RecallGate(GateConfig(min_score=0.5, min_lexical_score=0.5), clock=FrozenClock(NOW))
    result = gate.evaluate([_hit(**scores)], scope=SCOPE)
    assert result.accepted == ()
    assert result.rejected[0].reason is Reason.INVALID


@pytest.mark.parametrize("scores", [{"score": 1.0}, {"score": 0.5}, {"lexical_score": 1.0}, {"score": 1}])
def test_scores_at_the_bounds_are_judged(scores: dict[str, Any]) -> None:
    """Scores at the edges of their ranges are valid and judged by the thresholds."""
    gate = RecallGate(GateConfig(min_score=0.5, min_lexical_score=0.5), clock=FrozenClock(NOW))
    assert gate.evaluate([_hit(**scores)], scope=SCOPE).accepted_ids == ["m1"]


# -- config loading keeps the embedding's threshold -----------------------------------------------------


def test_a_file_without_min_score_keeps_the_embeddings_threshold(tmp_path: Path) -> None:
    """Loading a TOML file that only sets max_age_days keeps the embedding's calibrated threshold.

    Fails with the old ``GateConfig.min_score = 0.78`` default: ``load_config`` filled every space
    with the seeds' threshold, and a MiniLM cosine of 0.6 (relevant for that model) was rejected.
    """
    p = tmp_path / "gate.toml"
    p.write_text('[gate]\nmax_age_days = 30\n\n[spaces."strict".gate]\nmin_score = 0.7\n', encoding="utf-8")
    book = load_config(p)
    gate = RecallGate(book, calibration=0.54, clock=FrozenClock(NOW))
    other = Scope(user_id="u1", agent_id="a1", memory_space_id="other")
    strict = Scope(user_id="u1", agent_id="a1", memory_space_id="strict")
    assert gate.config_for(other).min_score == 0.54
    assert gate.config_for(other).max_age_days == 30
    assert gate.config_for(strict).min_score == 0.7
    hit = _hit(score=0.6).model_copy(
        update={"record": _hit().record.model_copy(update={"memory_space_id": "other"})}
    )
    assert gate.evaluate([hit], scope=other).accepted_ids == ["m1"]
    # The audit hash is that of the resolved settings: the threshold in force is traceable.
    assert gate.evaluate([hit], scope=other).audit.config_hash == gate.config_for(other).config_hash()
    # A gate over scores imported from elsewhere keeps the seeds' 0.78.
    assert RecallGate(book).config_for(other).min_score == 0.78


def test_a_file_that_sets_min_score_wins(tmp_path: Path) -> None:
    """A file that sets min_score overrides the embedding's threshold, for every space it covers."""
    p = tmp_path / "gate.toml"
    p.write_text("[gate]\nmin_score = 0.66\n", encoding="utf-8")
    gate = RecallGate(load_config(p), calibration=0.54)
    assert gate.config_for(SCOPE_OBJ).min_score == 0.66
