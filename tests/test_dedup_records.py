"""One value changed: another record beside the first, or a correction that supersedes it (W2, L1).

Issue 15 item 4: "Order 1042 shipped" after "Order 1041 shipped" superseded the first order (48 of 48
near pairs of distinct records in the red-team set, 41 of 41 in the blind one); a corrected room,
version or account must still supersede. The record-change model of :mod:`shared_core.write.records`
decides; these tests pin its contract, its failure modes and its place in dedup.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stores import SCOPE, make_store, mem

from shared_core import MemoryStore
from shared_core.errors import ConfigError, EmbeddingError
from shared_core.write import WriteAction, WriteDecision, WriteReason
from shared_core.write.records import (
    FEATURES,
    RecordChangeModel,
    another_record,
    change_split,
    default_model,
    features,
)

ROOT = Path(__file__).resolve().parents[1]

# Written for these tests (in no labelled split): the value names the thing the note is about.
DISTINCT = [
    ("Pull request 5512 was merged this morning.", "Pull request 5530 was merged this morning."),
    ("Shipment SH-2291 left the Leeds depot.", "Shipment SH-2307 left the Leeds depot."),
    ("Greta's passport renewal was approved.", "Tomas's passport renewal was approved."),
    ("Invoice 7781 for the catering was paid.", "Invoice 7795 for the catering was paid."),
]
# ... and here the value of a slot that holds one value at a time.
CORRECTIONS = [
    ("My desk is now on floor 3 of the annex.", "My desk is now on floor 5 of the annex."),
    ("The staging cluster runs Postgres version 15.", "The staging cluster runs Postgres version 16."),
    ("Current on-call engineer: Priya.", "Current on-call engineer: Marcus."),
    ("The quarterly review is scheduled for 14 March.", "The quarterly review is scheduled for 21 March."),
]


@pytest.mark.parametrize(("old", "new"), DISTINCT)
def test_a_value_that_names_another_record_is_not_a_correction(old: str, new: str) -> None:
    assert another_record(old, new)


@pytest.mark.parametrize(("old", "new"), CORRECTIONS)
def test_a_value_of_a_slot_changed_is_a_correction(old: str, new: str) -> None:
    assert not another_record(old, new)


def test_two_records_of_one_template_are_both_kept_and_recalled() -> None:
    """Through the store with the default embedding and dedup threshold: both orders stay current."""
    store = make_store(embedding=None)
    old, new = "Order 30417 shipped to the Leeds warehouse.", "Order 30452 shipped to the Leeds warehouse."
    vectors = store.embedder.embed_documents([old, new])
    assert float(vectors[0] @ vectors[1]) >= store.writer.policy_for("s1").dedup_threshold  # near-duplicates
    [a] = store.add([mem(old, source_record_id="wms-1")])
    [b] = store.add([mem(new, source_record_id="wms-2")])
    assert b.action is WriteAction.WRITE and WriteReason.CHANGED_FACT in b.reasons, b
    assert all(r.superseded_by is None for r in store.get([str(a.id), str(b.id)], memory_space_id="s1"))
    assert set(store.query("which order shipped to the Leeds warehouse", scope=SCOPE).accepted_ids) == {a.id, b.id}
    assert store.forget("wms-1")["memories"] == 1  # each source keeps its own memory
    assert store.get([str(b.id)], memory_space_id="s1")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Our project runs on Python version 3.11.", "Our project runs on Python version 3.12."),
        ("Invoice 4471 was paid on March 3.", "Invoice 4471 was paid on March 5."),  # the same invoice
    ],
)
def test_a_corrected_value_still_supersedes_through_the_store(old: str, new: str) -> None:
    store = make_store(embedding=None)
    vectors = store.embedder.embed_documents([old, new])
    assert float(vectors[0] @ vectors[1]) >= store.writer.policy_for("s1").dedup_threshold
    [a] = store.add([mem(old, source_record_id="chat-1")])
    [b] = store.add([mem(new, source_record_id="chat-2")])
    assert b.action is WriteAction.UPDATE and WriteReason.CHANGED_FACT in b.reasons and b.existing_id == a.id
    assert store.query(new, scope=SCOPE).accepted_ids == [b.id]


# Written for these tests (in no labelled split): two values of one slot under the dedup cosine
# (MiniLM 0.6 - 0.92), and two values of a relation that holds many at once.
SLOT_UNDER_BAR = [
    ("My manager is Tom.", "My manager is Sarah."),
    ("The project deadline is March 3.", "The project deadline is March 10."),
    ("My phone plan costs $40 a month.", "My phone plan costs $55 a month."),
    ("Our CEO is Maria Lopez.", "Our CEO is John Kim."),
]
MANY_UNDER_BAR = [
    ("Call Mom on Sunday.", "Call Dad on Sunday."),
    ("I am allergic to Penicillin.", "I am allergic to Amoxicillin."),
    ("I speak French.", "I speak Spanish."),
    ("We have an office in Toronto.", "We have an office in Berlin."),
    ("The user visited Japan in 2019.", "The user visited Peru in 2019."),
]


def _second_write(store: MemoryStore, old: str, new: str, i: int = 0) -> tuple[float, WriteDecision]:
    vectors = store.embedder.embed_documents([old, new])
    store.add([mem(old, source_record_id=f"one-{i}")])
    [d] = store.add([mem(new, source_record_id=f"two-{i}")])
    return float(vectors[0] @ vectors[1]), d


def _current(store: MemoryStore) -> set[str]:
    records = store.get(sorted(store.all_ids("s1")), memory_space_id="s1")
    return {r.body for r in records if r.superseded_by is None}


@pytest.mark.parametrize(("old", "new"), SLOT_UNDER_BAR)
def test_by_default_a_corrected_slot_under_the_dedup_cosine_supersedes(old: str, new: str) -> None:
    """``correction_threshold`` 0.6 (default): "My manager is Tom." / "... Sarah." sit at 0.64."""
    store = make_store(embedding=None)
    cosine, d = _second_write(store, old, new)
    assert 0.6 <= cosine < 0.92
    assert d.action is WriteAction.UPDATE and WriteReason.CHANGED_FACT in d.reasons
    assert _current(store) == {new}
    assert store.query(new, scope=SCOPE).accepted_ids == [d.id]
    assert [r.body for r in store.history(d.id, memory_space_id="s1")] == [old, new]


@pytest.mark.parametrize(("old", "new"), MANY_UNDER_BAR)
def test_by_default_two_values_of_a_relation_that_holds_many_both_stay(old: str, new: str) -> None:
    """A review found "Call Mom on Sunday." / "Call Dad ..." replaced each other at a bar of 0.6
    with the first model; the model now reads them as two values, both current and recalled."""
    store = make_store(embedding=None)
    cosine, d = _second_write(store, old, new)
    assert 0.6 <= cosine < 0.92
    assert d.action is WriteAction.WRITE and not d.reasons
    assert _current(store) == {old, new}


# A review's probes (2026-12-06): both values true, superseded under the bar by the first version of
# this path. Health, family, pets and cards are not superseded under the dedup cosine; a record
# named by its number is left to the dedup bar's own path.
HELD_APART_UNDER_BAR = [
    ("Allergy: Penicillin.", "Allergy: Codeine."),
    ("Mom's medication is Warfarin.", "Mom's medication is Eliquis."),
    ("My son is 7.", "My son is 4."),
    ("My stepson is Tyler.", "My stepson is Ryan."),
    ("Employee 2231 speaks French.", "Employee 2231 speaks Spanish."),
    ("Patient 4471 is allergic to Penicillin.", "Patient 4471 is allergic to Latex."),
]


@pytest.mark.parametrize(("old", "new"), HELD_APART_UNDER_BAR)
def test_health_family_and_numbered_records_are_not_superseded_under_the_bar(old: str, new: str) -> None:
    store = make_store(embedding=None)
    cosine, d = _second_write(store, old, new)
    assert 0.6 <= cosine < 0.92
    assert d.action is WriteAction.WRITE and not d.reasons
    assert _current(store) == {old, new}


def test_an_agents_correction_waits_for_a_person_to_confirm_it() -> None:
    """An agent's cited inference restating a person's note with another value supersedes it but starts
    tentative (seed 004: not recalled); the person saying it merges into it and makes it current.
    (Written beside instead, the person's restatement would merge and leave the old value current.)"""
    store = make_store(embedding=None)
    old, new = "My manager is Tom.", "My manager is Sarah."
    [a] = store.add([mem(old, source_record_id="one")])
    [b] = store.add([{**SCOPE, "title": "", "body": new, "origin": "agent_inferred", "cited": True}])
    assert b.action is WriteAction.UPDATE and b.existing_id == a.id
    reasons = store.query("Who is my manager?", scope=SCOPE).reasons()
    assert reasons[str(a.id)].value == "superseded" and reasons[str(b.id)].value == "tier_excluded"
    [c] = store.add([mem(new, source_record_id="two")])
    assert c.action is WriteAction.MERGE and WriteReason.PROMOTED in c.reasons
    assert store.query("Who is my manager?", scope=SCOPE).accepted_ids == [b.id]
    assert _current(store) == {new}


def test_notes_of_one_template_share_one_embedding_of_it() -> None:
    """Cost: "I met X at the conference." for 500 names is one MiniLM call for the template, not one
    per neighbour (a review measured 16.9 s for such a batch before, 2.7 s without the path)."""
    from shared_core.write import records

    pairs = [(f"I met {a} at the conference.", f"I met {b} at the conference.") for a, b in (("Ann", "Bo"), ("Cy", "Di"), ("Ed", "Flo"))]
    records._VECTORS.clear()
    margins = {records.record_margin(old, new) for old, new in pairs}
    assert len(margins) == 1 and None not in margins
    assert list(records._VECTORS) == ["I met X at the conference."]


def test_correction_threshold_none_reads_no_neighbour_under_the_dedup_cosine() -> None:
    from shared_core.config import WritePolicy

    store = make_store(embedding=None, write_policy=WritePolicy(correction_threshold=None))
    for i, (old, new) in enumerate(SLOT_UNDER_BAR):
        _, d = _second_write(store, old, new, i)
        assert d.action is WriteAction.WRITE
    assert _current(store) == {t for pair in SLOT_UNDER_BAR for t in pair}


def test_under_the_dedup_cosine_another_language_or_a_word_changes_nothing() -> None:
    """The model reads English: a French slot under the bar is left as it is, as is a word changed."""
    store = make_store(embedding=None)
    pairs = [
        ("Mon responsable est Thomas Dubois.", "Mon responsable est Sarah Martin."),
        ("The wifi password is on the router.", "The wifi password is on the fridge."),
    ]
    for i, (old, new) in enumerate(pairs):
        cosine, d = _second_write(store, old, new, i)
        assert 0.6 <= cosine < 0.92
        assert d.action is WriteAction.WRITE and not d.reasons
    assert _current(store) == {t for pair in pairs for t in pair}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("La commande 1041 a été expédiée hier.", "La commande 1042 a été expédiée hier."),
        ("Der Auftrag 1041 wurde gestern versandt.", "Der Auftrag 1042 wurde gestern versandt."),
        ("注文1041は発送済みです。", "注文1042は発送済みです。"),
        ("주문 1041이 발송되었습니다.", "주문 1042가 발송되었습니다."),
    ],
)
def test_another_language_keeps_the_correction_it_had(old: str, new: str) -> None:
    """The model is English; a note in another language is superseded as before (a known limit)."""
    assert not another_record(old, new)


def test_symbols_and_decomposed_accents_do_not_make_a_note_foreign() -> None:
    """An emoji, an arrow or "José" in NFD is still English (they made the model step aside)."""
    assert another_record("Order 1041 shipped \u2705", "Order 1042 shipped \u2705")
    assert another_record("Order 1041 \u2192 shipped to Jose\u0301.", "Order 1042 \u2192 shipped to Jose\u0301.")


def test_what_changed_must_be_a_value_not_a_negation_or_a_word() -> None:
    """A negation, an ordinary word or a relative date changed is a correction, whatever the model says."""
    store = make_store(embedding=None)
    for old, new in [
        ("Refunds are allowed after manager review.", "Refunds are not allowed after manager review."),
        ("Use the small model for drafts.", "Use the large model for drafts."),
    ]:
        [a] = store.add([mem(old, source_record_id=f"a-{old[:5]}")])
        [b] = store.add([mem(new, source_record_id=f"b-{old[:5]}")])
        assert b.action is WriteAction.UPDATE and b.existing_id == a.id, (old, b)


class _Failing:
    name = "all-MiniLM-L6-v2-int8"

    def embed_documents(self, texts: object) -> np.ndarray:
        raise EmbeddingError("the embedding failed on 1 texts: RuntimeError")


def test_a_failing_encoder_keeps_the_correction_and_logs_no_text(caplog: pytest.LogCaptureFixture) -> None:
    old, new = "Order 88123 secret-word-zebra shipped.", "Order 88129 secret-word-zebra shipped."
    with caplog.at_level(logging.WARNING):
        assert not another_record(old, new, encoder=_Failing())
    assert "record-change model skipped" in caplog.text and "zebra" not in caplog.text


def test_an_encoder_or_a_model_that_do_not_fit_are_refused() -> None:
    model = default_model()

    class Other(_Failing):
        name = "another-embedding"

    with pytest.raises(ConfigError, match="trained with"):
        another_record("Order 1 shipped.", "Order 2 shipped.", encoder=Other())
    short = replace(model, emb_weights=model.emb_weights[:-1])
    with pytest.raises(ConfigError, match="383 embedding weights"):
        another_record("Order 1 shipped.", "Order 2 shipped.", model=short)


@pytest.mark.parametrize(
    "edit",
    [
        lambda d: d.update(features=list(reversed(d["features"]))),
        lambda d: d.update(hand_weights=d["hand_weights"][:-1]),
        lambda d: d.update(bias=float("nan")),
        lambda d: d.pop("emb_weights"),
        lambda d: d.update(format=2),
    ],
)
def test_a_bad_model_file_is_refused(edit: object) -> None:
    doc = json.loads(default_model().to_json())
    edit(doc)  # type: ignore[operator]
    with pytest.raises(ConfigError):
        RecordChangeModel.from_json(json.dumps(doc))


def test_long_text_is_not_read_and_costs_little(caplog: pytest.LogCaptureFixture) -> None:
    """Over 200 words or 2,000 characters a note is no templated statement: the correction stands,
    nothing is embedded (199 words of 5,000 characters took 0.7 s to tokenise)."""
    body = " ".join(f"clause{i}" for i in range(5_000))
    assert change_split(body + " 1", body + " 2") is None
    wide = " ".join(["x" * 5_000] * 199)
    with caplog.at_level(logging.WARNING):
        assert not another_record(body + " 1", body + " 2", encoder=_Failing())
        assert not another_record(f"Order {wide} 1", f"Order {wide} 2", encoder=_Failing())
    assert "record-change model skipped" not in caplog.text  # the encoder was never called


def test_features_name_where_the_value_sits() -> None:
    split = change_split("Order 1041 shipped today.", "Order 1042 shipped today.")
    assert split is not None and split.old == ("1041",) and split.new == ("1042",)
    got = dict(zip(FEATURES, features(split), strict=True))
    assert got["record"] == got["subject"] == got["past"] == got["digit"] == 1.0
    assert got["unique"] == got["label"] == got["speaker"] == 0.0
    split = change_split("Joanna: My office is now room 214.", "Joanna: My office is now room 318.")
    assert split is not None
    got = dict(zip(FEATURES, features(split), strict=True))
    assert got["speaker"] == got["unique"] == 1.0 and got["subject"] == 0.0


@settings(max_examples=40, deadline=None)
@given(st.text(max_size=120), st.text(max_size=12), st.text(max_size=12))
def test_any_text_gets_an_answer_and_the_same_one_twice(body: str, a: str, b: str) -> None:
    """Property: a pure function of the two texts; no input makes it raise."""
    old, new = f"{body} {a}", f"{body} {b}"
    first = another_record(old, new)
    assert isinstance(first, bool) and another_record(old, new) == first


def test_the_shipped_model_is_a_refit_of_the_labelled_pairs() -> None:
    """``benchmarks/train_record_change.py --check``: the model file matches its data and code."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import train_record_change as trainer
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert trainer.main(["--check"]) == 0
    assert not trainer.HELD_OUT & set(default_model().meta["trained_on"])



def test_a_larger_margin_supersedes_no_more_and_the_shipped_one_earns_its_keep() -> None:
    """``train_record_change.py --margins`` (leave-one-split-out): superseded pairs fall as the margin
    rises (monotone), and at the shipped margin more corrections are applied than with nothing read
    under the dedup cosine while values that hold together are hidden less than twice as often."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import train_record_change as trainer
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from shared_core.write.records import UNDER_BAR_MARGIN

    table = trainer.margins_table(trainer.load_pairs())
    for kind in ("correction", "distinct"):
        assert table[kind] == sorted(table[kind], reverse=True)
    at = list(trainer.MARGINS).index(UNDER_BAR_MARGIN)
    alone_corrections, alone_distinct = table["dedup bar alone"]
    assert table["correction"][at] > alone_corrections + 50
    assert table["distinct"][at] < 2 * alone_distinct

@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab ", max_size=12), st.text(alphabet="ab ", max_size=12))
def test_common_ends_are_the_longest_shared_start_and_then_end(a: str, b: str) -> None:
    """Property: what dedup's similarity, one_change and change_split strip before comparing."""
    from shared_core.text import common_ends

    head, tail = common_ends(a, b)
    assert a[:head] == b[:head] and (head == min(len(a), len(b)) or a[head] != b[head])
    assert head + tail <= min(len(a), len(b)) and a[len(a) - tail :] == b[len(b) - tail :]
    assert head + tail == min(len(a), len(b)) or a[len(a) - tail - 1] != b[len(b) - tail - 1]


def test_the_template_cache_holds_under_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stores in several threads share the cache; evicting while others read must not raise."""
    from concurrent.futures import ThreadPoolExecutor

    from shared_core.write import records

    pairs = [(f"Note {w} says Ann is {k}.", f"Note {w} says Bo is {k}.") for w in ("a", "b", "c", "d", "e", "f") for k in ("here", "there", "home")]
    serial = [records.record_margin(old, new) for old, new in pairs]
    monkeypatch.setattr(records, "_VECTORS_MAX", 3)
    records._VECTORS.clear()
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda p: records.record_margin(*p), pairs * 4))
    assert threaded == serial * 4
    assert len(records._VECTORS) <= 3
