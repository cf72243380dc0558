"""One record contract for every way in; authority from the path; changed facts never merged (W1-W3, W7, L1, R1).

Issue "Gate decisions users can rely on" item 1-2, "Authority on every path" items 1, 2, 7 and
"A write gate that holds" item 4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stores import NOW, SCOPE, make_store, mem

from shared_core import InputError, MemoryStore, capture_audit
from shared_core.model import Scope
from shared_core.testing import FrozenClock
from shared_core.write import WriteAction, WriteReason, decide_writes
from shared_core.write.authority import WritePath
from shared_core.write.facts import changed_fact, restates, same_claim

ALICE = {"user_id": "alice", "agent_id": "a1", "memory_space_id": "s1"}
BOB = {"user_id": "bob", "agent_id": "a1", "memory_space_id": "s1"}


def _exported(**fields: Any) -> dict[str, Any]:
    base = {
        "title": "Posting policy",
        "body": "Official posts go out at 10:00 after review.",
        "status": "approved",
        "origin": "user_explicit",
        **SCOPE,
    }
    return {**base, **fields}


# -- the record contract ---------------------------------------------------------------------------


def test_exported_history_fields_are_accepted_and_kept() -> None:
    """created_at, updated_at, supersedes as one string, superseded_by, evidence_count load as exported (item 1)."""
    store = make_store()
    old = _exported(
        id="old-1",
        body="Official posts go out at 09:00.",
        created_at="2026-01-02T03:04:05Z",
        updated_at="2026-02-01T00:00:00Z",
        superseded_by="new-1",
        evidence_count=3,
    )
    new = _exported(id="new-1", supersedes="old-1", created_at="2026-03-01T00:00:00Z")
    decisions = store.add([old, new])
    assert [d.action for d in decisions] == [WriteAction.WRITE, WriteAction.UPDATE], [
        d.detail for d in decisions
    ]
    got = {r.id: r for r in store.get(["old-1", "new-1"], memory_space_id="s1")}
    assert got["old-1"].superseded_by == "new-1" and got["old-1"].evidence_count == 3
    assert got["old-1"].created_at is not None and got["old-1"].created_at.isoformat().startswith(
        "2026-01-02T03:04:05"
    )
    assert got["new-1"].supersedes == ("old-1",)
    result = store.query("when do official posts go out", scope=SCOPE)
    assert "old-1" not in result.accepted_ids  # imported history keeps the old one superseded
    assert result.reasons().get("old-1") in (None, "superseded") or "superseded" in {
        r.value for rej in result.rejected if rej.id == "old-1" for r in rej.reasons
    }


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("created_at", "yesterday-ish", "created_at: not a datetime"),
        ("updated_at", 3.5e18, "updated_at: not a datetime"),
        ("evidence_count", -2, "evidence_count: out of range"),
        ("tier", "gold", "tier: not an allowed value"),
        ("colour", "blue", "colour: unknown field"),
        ("tags", {"a": 1}, "tags: not a list"),
    ],
)
def test_a_malformed_field_is_a_rejection_naming_field_and_problem(
    field: str, value: Any, problem: str
) -> None:
    """A bad field is rejected with ``<field>: <problem>``; the value never appears (item 1, W1 input)."""
    store = make_store()
    with capture_audit() as records:
        [d] = store.add([_exported(**{field: value})])
    assert d.action is WriteAction.REJECT and d.reasons == (WriteReason.INVALID,)
    assert problem in d.detail, d.detail
    shown = json.dumps([*d.detail, *(r.model_dump(mode="json") for r in records)])
    if isinstance(value, str) and len(value) > 3:
        assert value not in shown
    assert records[0].extra["invalid_fields"] == {field: 1}
    assert store.all_ids("s1") == set()


def test_self_links_and_future_timestamps_are_rejected() -> None:
    """A memory that supersedes itself, or is dated beyond the clock skew, is invalid (issue 13 item 7)."""
    store = make_store()  # its clock is frozen at 2026-07-13
    decisions = store.add(
        [
            _exported(id="m-self", supersedes=["m-self"]),
            _exported(id="m-loop", superseded_by="m-loop", body="Other text."),
            _exported(id="m-future", updated_at="2999-01-01T00:00:00Z", body="Future text."),
            _exported(
                id="m-window", valid_from="2026-05-01T00:00:00Z", valid_to="2026-04-01T00:00:00Z", body="W."
            ),
        ]
    )
    assert [d.detail for d in decisions] == [
        ("supersedes: names the memory itself",),
        ("superseded_by: names the memory itself",),
        ("updated_at: in the future",),
        ("valid_to: before valid_from",),
    ]
    assert all(d.action is WriteAction.REJECT for d in decisions)


def test_shared_data_dev_sets_load_as_exported(shared_data: Path) -> None:
    """The LoCoMo and SituatedQA dev memories load as another system exported them: none refused for their shape."""
    for name in ("locomo_dev", "sqa_dev"):
        items = [
            json.loads(line) for line in (shared_data / name / "memories.jsonl").read_text().splitlines()
        ]
        decisions = decide_writes(items, now=None)
        invalid = [
            d
            for d in decisions
            if WriteReason.INVALID in d.reasons or WriteReason.SCOPE_MISMATCH in d.reasons
        ]
        assert invalid == [], (name, [d.detail for d in invalid[:3]])
        assert sum(d.action is WriteAction.WRITE for d in decisions) >= 0.9 * len(items)


def test_a_user_stated_memory_without_tier_is_recalled_at_once() -> None:
    """add then query of an approved, user-stated memory with no tier returns it (issue 11 item 2, seed 004)."""
    store = make_store()
    item = {**SCOPE, "title": "Posting policy", "body": "Official posts go out at 10:00 after review.",
            "origin": "user_explicit"}  # fmt: skip
    [d] = store.add([item])
    assert d.action is WriteAction.WRITE and d.record is not None and d.record.tier.value == "confirmed"
    assert store.query("when do official posts go out?", scope=SCOPE).accepted_ids == [d.id]


def test_an_agent_inference_starts_tentative_and_is_held_back_with_a_reason() -> None:
    """A cited agent inference is written tentative, not recalled, and the result says tier_excluded (W7)."""
    store = make_store()
    [d] = store.add([{**SCOPE, "body": "Official posts go out at 10:00 after review.", "origin": "agent_inferred",
                      "cited": True}])  # fmt: skip
    assert d.record is not None and d.record.tier.value == "tentative"
    result = store.query("when do official posts go out?", scope=SCOPE)
    assert result.accepted == () and result.reasons()[d.id].value == "tier_excluded"
    assert result.audit.counts.get("tier_excluded") == 1


# -- authority from the path -----------------------------------------------------------------------


def test_a_pinned_path_rejects_another_owner_and_fills_its_own() -> None:
    """Records naming another owner are scope_mismatch; records naming none get the path's scope (R1)."""
    store = make_store()
    path = WritePath.pinned(ALICE, origin="user_explicit")
    with capture_audit() as records:
        decisions = store.add(
            [
                {"body": "Alice likes tea."},
                {"body": "Planted.", "user_id": "bob"},
                {"body": "Route.", "route_id": "r9"},
            ],
            path=path,
        )
    assert [d.action for d in decisions] == [WriteAction.WRITE, WriteAction.REJECT, WriteAction.REJECT]
    assert decisions[1].reasons == (WriteReason.SCOPE_MISMATCH,) and decisions[1].detail == (
        "user_id: not the caller's",
    )
    assert decisions[2].detail == ("route_id: not the caller's",)
    assert store.get([decisions[0].id], memory_space_id="s1")[0].user_id == "alice"
    assert records[-1].scope == Scope(**ALICE).model_dump()  # the write audit names the writer


def test_trust_claims_in_records_cannot_raise_a_pinned_path() -> None:
    """origin, tier, visibility, confirmations and cited in a record are lowered to the path's (W3)."""
    store = make_store()
    path = WritePath.pinned(ALICE)  # origin agent_inferred, no shared writes, no record claims
    claims = {"body": "Web page text about pricing.", "origin": "user_explicit", "tier": "confirmed",
              "visibility": "shared", "confirmations": 5, "cited": True, "evidence_count": 9}  # fmt: skip
    [d] = store.add([claims], path=path)
    assert WriteReason.TRUST_LOWERED in d.reasons
    assert d.action is WriteAction.QUARANTINE  # agent_inferred, uncited: held for review
    [held] = store.quarantine_list()
    assert (held["origin"], held["visibility"]) == ("agent_inferred", "private")
    assert store.query("pricing", scope=BOB).accepted == ()


def test_a_record_may_lower_its_trust() -> None:
    """A record asking for less than the path grants gets it (a tentative tier, a less trusted origin)."""
    store = make_store()
    path = WritePath.pinned(ALICE, origin="user_explicit", allow_shared=True, cited=True)
    [d] = store.add(
        [{"body": "Maybe the office moves.", "origin": "agent_summary", "tier": "tentative"}], path=path
    )
    assert d.record is not None and (d.record.origin.value, d.record.tier.value) == (
        "agent_summary",
        "tentative",
    )
    assert WriteReason.TRUST_LOWERED not in d.reasons


def test_the_operator_path_honours_what_records_say() -> None:
    """store.add by default imports records as given (each names its owner; the caller vouches)."""
    store = make_store()
    decisions = store.add([mem("Alice fact.", user_id="alice"), mem("Bob fact.", user_id="bob")])
    owners = {r.user_id for r in store.get([d.id for d in decisions if d.id], memory_space_id="s1")}
    assert owners == {"alice", "bob"}


# -- ownership of ids ------------------------------------------------------------------------------


def test_ids_belong_to_their_owner() -> None:
    """Another owner's id cannot be overwritten, deleted, corrected or superseded; existence is not revealed (item 2)."""
    store = make_store()
    [carol] = store.add([mem("Carol's shared rule: refunds within 30 days.", user_id="carol", visibility="shared",
                             id="carol-1")])  # fmt: skip
    alice = WritePath.pinned(ALICE, origin="user_explicit", allow_shared=True, cited=True)
    over, sup = store.add(
        [
            {"id": "carol-1", "body": "Mine now.", "visibility": "shared"},
            {"body": "Refunds within 90 days.", "supersedes": ["carol-1"], "visibility": "shared"},
        ],
        path=alice,
    )
    assert over.reasons == (WriteReason.NOT_OWNER,) and sup.reasons == (WriteReason.NOT_OWNER,)
    assert store.delete(["carol-1", "no-such-id"], memory_space_id="s1", scope=ALICE) == 0
    with pytest.raises(InputError) as exc:
        store.correct("carol-1", memory_space_id="s1", body="Changed.", scope=ALICE)
    with pytest.raises(InputError) as missing:
        store.correct("no-such-id", memory_space_id="s1", body="Changed.", scope=ALICE)
    assert str(exc.value).replace("carol-1", "X") == str(missing.value).replace("no-such-id", "X")
    [rec] = store.get(["carol-1"], memory_space_id="s1")
    assert (rec.body, rec.superseded_by) == ("Carol's shared rule: refunds within 30 days.", None)
    assert carol.id == "carol-1"


def test_a_duplicate_of_another_writers_shared_memory_does_not_launder_trust() -> None:
    """Alice repeating Carol's shared memory neither raises its evidence nor promotes it (issue 13 item 2)."""
    store = make_store()
    [carol] = store.add([mem("The cafeteria opens at eight.", user_id="carol", visibility="shared",
                             origin="agent_inferred", cited=True, tier=None)])  # fmt: skip
    before = store.get([carol.id], memory_space_id="s1")[0]
    alice = WritePath.pinned(ALICE, origin="user_explicit", allow_shared=True, cited=True)
    [d] = store.add([{"body": "The cafeteria opens at eight.", "visibility": "shared"}], path=alice)
    assert d.action is WriteAction.MERGE and d.existing_id == carol.id
    after = store.get([carol.id], memory_space_id="s1")[0]
    assert (after.evidence_count, after.tier) == (before.evidence_count, before.tier)


def test_a_correction_of_a_superseded_memory_is_rebased_not_forked() -> None:
    """Correcting an old version twice gives one chain with one active memory (issue 13 item 7)."""
    store = make_store()
    [v1] = store.add([mem("The launch is on Monday.", id="v1")])
    v2 = store.correct("v1", memory_space_id="s1", body="The launch is on Tuesday.")
    v3 = store.correct("v1", memory_space_id="s1", body="The launch is on Wednesday.")
    assert WriteReason.REBASED in v3.reasons and v3.existing_id == v2.id
    chain = store.history("v1", memory_space_id="s1")
    active = [r.id for r in chain if r.superseded_by is None]
    assert active == [v3.id] and [r.id for r in chain] == ["v1", v2.id, v3.id]
    assert store.query("when is the launch", scope=SCOPE).accepted_ids == [v3.id]
    assert v1.id == "v1"


# -- changed facts are never merged (issue 15 item 4) -----------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        (
            "The billing cycle is limited to 27 per minute.",
            "The billing cycle is limited to 16 per minute.",
            "number",
        ),
        (
            "The audit is due on 2026-03-01 for the team.",
            "The audit is due on 2026-04-01 for the team.",
            "date",
        ),
        ("The standup is every Monday morning.", "The standup is every Tuesday morning.", "weekday"),
        ("Alice owns the launch checklist now.", "Bob owns the launch checklist now.", "name"),
        (
            "Refunds are allowed after manager review.",
            "Refunds are not allowed after manager review.",
            "negation",
        ),
        ("公式投稿は10時に公開する。", "公式投稿は11時に公開する。", "number (Japanese)"),
        ("返金は許可する。", "返金は許可しない。", "negation (Japanese)"),
        ("환불은 허용됩니다.", "환불은 허용되지 않습니다.", "negation (Korean)"),
        ("회의는 10시에 시작합니다.", "회의는 11시에 시작합니다.", "number (Korean)"),
    ],
)
def test_a_changed_fact_supersedes_instead_of_merging(old: str, new: str, kind: str) -> None:
    """A near-duplicate that differs in a number, date, name or negation supersedes the old memory, with history."""
    store = make_store(write_policy=__import__("shared_core").config.WritePolicy(dedup_threshold=0.3))
    [a] = store.add([mem(old, source_record_id="ticket-1")])
    [b] = store.add([mem(new, source_record_id="ticket-2")])
    assert changed_fact(old, new), kind
    assert b.action is WriteAction.UPDATE and WriteReason.CHANGED_FACT in b.reasons, (kind, b)
    assert b.existing_id == a.id
    [old_rec] = store.get([a.id], memory_space_id="s1")
    assert old_rec.superseded_by == b.id  # history kept, the new value wins
    assert store.forget("ticket-2")["memories"] == 1  # the new source's lineage is its own


# Turns of LoCoMo dev that MiniLM puts above dedup_threshold (0.92) and that differ in capitalised
# words; the last pair's first turn is the evidence of a labelled case (issue 15 item 4).
_TURNS_THAT_SIT_CLOSE = [
    ("conv-42-D3:23", "conv-42-D3:25"),  # "Awesome! Enjoy yourself!" / "Later, take care!"
    ("conv-42-D6:13", "conv-42-D7:12"),  # "Nate: Bye Joanna! Take care!" / "Joanna: Totally! Bye Nate!"
    ("conv-44-D21:12", "conv-44-D21:14"),
    ("conv-42-D16:11", "conv-42-D16:13"),
]


def test_conversation_turns_that_sit_close_are_two_memories_not_a_correction(shared_data: Path) -> None:
    """Two turns a cosine calls near-duplicates, with different words and names, are both kept and recalled (W2).

    Before: the later turn superseded the earlier one (37 of LoCoMo dev's 4,431 turns hidden from
    recall, one of them a labelled case's evidence).
    """
    lines = (shared_data / "locomo_dev" / "memories.jsonl").read_text().splitlines()
    records = {r["id"]: r for r in map(json.loads, lines)}
    store = make_store(embedding=None)  # the offline MiniLM default, as `recall-gate add` writes them
    for old_id, new_id in _TURNS_THAT_SIT_CLOSE:
        old, new = records[old_id], records[new_id]
        vectors = store.embedder.embed_documents([f"{old['title']}\n{old['body']}", f"{new['title']}\n{new['body']}"])
        assert float(vectors[0] @ vectors[1]) >= 0.92  # neighbours at the default dedup threshold
        assert changed_fact(old["body"], new["body"]) and not restates(old["body"], new["body"])
        first, second = store.add([old]), store.add([new])
        assert [d.action for d in (*first, *second)] == [WriteAction.WRITE] * 2, (old_id, second)
    kept = store.get([i for pair in _TURNS_THAT_SIT_CLOSE for i in pair], memory_space_id="s1")
    assert len(kept) == 8 and all(r.superseded_by is None for r in kept)
    scope = {k: records["conv-42-D16:11"][k] for k in ("user_id", "agent_id", "memory_space_id")}
    got = store.query("What is Joanna going to make for her family this weekend?", scope=scope)
    assert "conv-42-D16:11" in got.accepted_ids


def test_restates_reads_a_value_changed_in_a_long_memory() -> None:
    """One number changed in a 20,000-character memory is one statement; another text of that length is not."""
    words = [f"clause{i % 97} of section{i % 13}" for i in range(1200)]
    body = " ".join(words)[:19_000]
    changed = body[:9_000] + " limit 40961 per minute " + body[9_000:]
    original = body[:9_000] + " limit 57331 per minute " + body[9_000:]
    assert changed_fact(original, changed) and restates(original, changed)
    other = " ".join(f"Paragraph {i} names Mr Ward and {i * 7} days" for i in range(800))[: len(original)]
    assert changed_fact(original, other) and not restates(original, other)


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9), min_size=1, max_size=30),
    at=st.integers(min_value=0),
    values=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)).filter(lambda v: v[0] != v[1]),
)
def test_a_value_swapped_in_any_statement_is_a_correction(words: list[str], at: int, values: tuple[int, int]) -> None:
    """Property: the same words around a changed number are one statement, however the sentence reads (W2)."""
    i = at % (len(words) + 1)
    old = " ".join([*words[:i], str(values[0]), *words[i:]])
    new = " ".join([*words[:i], str(values[1]), *words[i:]])
    assert changed_fact(old, new) and restates(old, new)


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("Use the small model for drafts.", "Use the large model for drafts.", "a word (cosine 0.94)"),
        ("The report is due next week.", "The report is due this week.", "a relative date (0.96)"),
        ("The user prefers tea over coffee.", "The user prefers coffee over tea.", "the order (0.996)"),
    ],
)
def test_a_changed_word_at_the_default_threshold_is_a_correction_not_a_merge(old: str, new: str, kind: str) -> None:
    """With the default embedding and dedup_threshold, a word changed or reordered supersedes; it is never merged (W2)."""
    store = make_store(embedding=None)
    vectors = store.embedder.embed_documents([old, new])
    assert float(vectors[0] @ vectors[1]) >= store.writer.policy_for("s1").dedup_threshold, kind
    [a] = store.add([mem(old, source_record_id="chat-1")])
    [b] = store.add([mem(new, source_record_id="chat-2")])
    assert b.action is WriteAction.UPDATE and WriteReason.CHANGED_FACT in b.reasons and b.existing_id == a.id, kind
    assert store.query(new, scope=SCOPE).accepted_ids == [b.id]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("User enjoys hiking on weekends.", "User enjoys hiking on the weekends."),
        ("The kite shed is behind the boathouse.", "The kite shed is behind the boathouse!"),
    ],
)
def test_the_same_words_at_the_default_threshold_still_merge(old: str, new: str) -> None:
    """Articles, punctuation and inflection aside, the same words are a duplicate: merged, evidence + 1 (W2, W7)."""
    store = make_store(embedding=None)
    [a] = store.add([mem(old, source_record_id="chat-1")])
    [b] = store.add([mem(new, source_record_id="chat-2")])
    assert b.action is WriteAction.MERGE and b.existing_id == a.id
    assert store.get([a.id], memory_space_id="s1")[0].evidence_count == 2


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=9), min_size=1, max_size=30),
    at=st.integers(min_value=0),
    swap=st.tuples(st.sampled_from(["small", "next", "over", "tea", "morning", "staging"]),
                   st.sampled_from(["large", "this", "under", "coffee", "evening", "production"])),
)  # fmt: skip
def test_a_word_replaced_in_any_statement_is_another_claim(words: list[str], at: int, swap: tuple[str, str]) -> None:
    """Property: one word standing where the other text has another is never the same claim (no merge, W2)."""
    i = at % len(words)
    old = " ".join([*words[:i], swap[0], *words[i + 1 :]])
    new = " ".join([*words[:i], swap[1], *words[i + 1 :]])
    assert not same_claim(old, new)
    assert same_claim(old, old.replace(" ", " the ", 1)) and same_claim(old, old.upper() + "!")


def test_true_duplicates_still_merge_and_keep_both_sources() -> None:
    """The same fact from a second source merges (evidence +1) and forgetting either source finds it (W2, L2)."""
    store = make_store(write_policy=__import__("shared_core").config.WritePolicy(dedup_threshold=0.3))
    [a] = store.add([mem("The kite shed is behind the boathouse.", source_record_id="s-1", tier=None,
                         origin="agent_inferred", cited=True)])  # fmt: skip
    [b] = store.add([mem("The kite shed is behind the boathouse!", source_record_id="s-2", tier=None,
                         origin="agent_inferred", cited=True)])  # fmt: skip
    assert b.action is WriteAction.MERGE and b.existing_id == a.id
    [rec] = store.get([a.id], memory_space_id="s1")
    assert rec.evidence_count == 2 and rec.tier.value == "confirmed"  # promoted at promote_at=2 (W7)
    assert store.forget("s-2")["ids"] == [a.id]


# -- deletion that stays deleted --------------------------------------------------------------------


def test_approval_after_forget_is_refused() -> None:
    """A held candidate whose source is forgotten cannot be approved into memory (issue 13 item 5)."""
    store = make_store()
    [d] = store.add([mem("Note from a web page.", origin="external_unverified", tier=None,
                         source_record_id="page-1")])  # fmt: skip
    assert d.action is WriteAction.QUARANTINE
    store.add([mem("Another note from the page.", source_record_id="page-1")])
    store.forget("page-1")
    assert store.quarantine_list() == []
    with pytest.raises(InputError):
        store.quarantine_approve(d.id or "")
    assert store.all_ids("s1") == set()


def test_tombstones_block_the_source_and_sourceless_returns_not_new_sources() -> None:
    """After forget(A): A is refused, the same words with no source are refused, from source B they are new (L2)."""
    store = make_store()
    text = "Customer prefers invoices by post."
    [first] = store.add([mem(text, source_record_id="ticket-A")])
    store.forget("ticket-A")
    again, plain, spaced, other = store.add(
        [
            mem(text, source_record_id="ticket-A"),
            mem(text),
            mem(text + "  "),
            mem(text, source_record_id="ticket-B"),
        ]
    )
    assert [d.action for d in (again, plain, spaced)] == [WriteAction.REJECT] * 3
    assert all(WriteReason.TOMBSTONED in d.reasons for d in (again, plain, spaced))
    assert other.action is WriteAction.WRITE and other.id == first.id


_LIMIT_OLD = "The billing cycle is limited to 27 per minute."
_LIMIT_NEW = "The billing cycle is limited to 16 per minute."


def _corrected(store: MemoryStore) -> tuple[str, str]:
    [a] = store.add([mem(_LIMIT_OLD, source_record_id="ticket-1")])
    [b] = store.add([mem(_LIMIT_NEW, source_record_id="ticket-2")])
    assert b.action is WriteAction.UPDATE and b.existing_id == a.id
    return str(a.id), str(b.id)


def _forget_while_the_commit_fails(store: MemoryStore, source: str) -> None:
    """Start a forget whose delete fails (the disk went away after the journal and tombstones)."""
    target = store.writer.target
    original = target.commit

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk went away")

    target.commit = broken  # type: ignore[method-assign]
    with pytest.raises(OSError):
        store.forget(source)
    target.commit = original  # type: ignore[method-assign]


def _current_again(store: MemoryStore, mid: str) -> None:
    [old] = store.get([mid], memory_space_id="s1")  # what Chroma holds, not the process's index
    assert (old.superseded_by, old.valid_to) == (None, None)
    assert store.query("billing cycle limit per minute", scope=SCOPE).accepted_ids == [mid]


def test_forgetting_a_corrections_source_makes_the_memory_it_replaced_current_again(tmp_path: Path) -> None:
    """The supersede goes with the correction: the other source's memory is recalled again, on reopen too (L1, L2).

    Before: the old memory kept ``superseded_by`` pointing at a deleted memory and was rejected as
    superseded for good, though its own source still stood.
    """
    policy = __import__("shared_core").config.WritePolicy(dedup_threshold=0.3)
    store = make_store(tmp_path, write_policy=policy)
    a, b = _corrected(store)
    assert store.forget("ticket-2")["ids"] == [b]
    _current_again(store, a)
    store.close()
    _current_again(make_store(tmp_path, write_policy=policy), a)


def test_deleting_a_correction_by_id_or_the_middle_of_a_chain_keeps_the_history_whole() -> None:
    """delete(id) of a correction reopens what it replaced; forgetting the middle of a chain links its ends (L1)."""
    policy = __import__("shared_core").config.WritePolicy(dedup_threshold=0.3)
    store = make_store(write_policy=policy)
    a, b = _corrected(store)
    assert store.delete([b], memory_space_id="s1", scope=SCOPE) == 1
    _current_again(store, a)
    chain = make_store(write_policy=policy)
    a, b = _corrected(chain)
    [c] = chain.add([mem("The billing cycle is limited to 12 per minute.", source_record_id="ticket-3")])
    assert c.existing_id == b
    chain.forget("ticket-2")
    [old] = chain.get([a], memory_space_id="s1")
    assert old.superseded_by == c.id  # still replaced: by the correction that stays
    assert chain.query("billing cycle limit per minute", scope=SCOPE).accepted_ids == [c.id]


def test_a_rewrite_that_drops_a_field_drops_it_in_chroma(tmp_path: Path) -> None:
    """The owner rewrites a memory under its id without expires_at or entity: reopened, the store has neither (L3).

    Chroma merges an upsert's metadata into the stored one; before, the old expiry stayed on disk
    and purge_expired deleted the rewritten memory.
    """
    store = make_store(tmp_path)
    store.add([mem("Door code rotates weekly.", id="door", entity="door", attribute="code",
                   expires_at="2026-07-20T00:00:00Z")])  # fmt: skip
    [d] = store.add([mem("Door code is fixed now.", id="door")])
    assert d.action is WriteAction.UPDATE
    store.close()
    reopened = make_store(tmp_path, clock=FrozenClock("2026-08-01T00:00:00Z"))
    [rec] = reopened.get(["door"], memory_space_id="s1")
    assert (rec.expires_at, rec.entity, rec.attribute) == (None, None, None)
    assert reopened.purge_expired() == 0 and reopened.all_ids("s1") == {"door"}


def test_a_forget_of_a_correction_interrupted_before_its_delete_reopens_on_resume(tmp_path: Path) -> None:
    """The reopening is journaled with the forget: a forget finished on reopen applies it too (L2)."""
    policy = __import__("shared_core").config.WritePolicy(dedup_threshold=0.3)
    store = make_store(tmp_path, write_policy=policy)
    a, _ = _corrected(store)
    _forget_while_the_commit_fails(store, "ticket-2")
    store.close()
    _current_again(make_store(tmp_path, write_policy=policy), a)


# Found by a red team of the dedup rules (real MiniLM, default threshold 0.92): each was merged
# (the new claim lost) or superseded one by the other (a memory hidden) before.
_NOT_MERGED = [
    ("The dose is one tablet a day.", "The dose is one tablet twice a day."),
    ("The payment is refundable.", "The payment is non-refundable."),
    ("The freezer is set to -18 degrees.", "The freezer is set to 18 degrees."),
    ("Alert when CPU > 90%.", "Alert when CPU < 90%."),
    ("Allergies: peanuts. Diet: vegetarian. Coffee: black.", "Coffee: black. Diet: vegan. Allergies: peanuts."),
    ("会議は月曜日です。", "会議は月曜日以外です。"),
    ("気温は-5度です。", "気温は5度です。"),
    ("저는 커피를 좋아합니다.", "저는 커피를 가끔 좋아합니다."),
]


@pytest.mark.parametrize(("old", "new"), _NOT_MERGED)
def test_a_claim_changed_by_a_word_a_sign_or_a_reordered_summary_is_never_merged(old: str, new: str) -> None:
    """A word added, a sign or a comparison changed, a summary regenerated in another order: never a merge (W2)."""
    store = make_store(embedding=None)
    vectors = store.embedder.embed_documents([old, new])
    assert float(vectors[0] @ vectors[1]) >= 0.92
    store.add([mem(old, source_record_id="one")])
    [d] = store.add([mem(new, source_record_id="two")])
    assert d.action is not WriteAction.MERGE, d
    assert new in {r.body for r in store.get([str(d.id)], memory_space_id="s1")}


def test_two_records_of_one_template_are_both_kept() -> None:
    """Several values changed in one template (two invoices, two steps) is two records, not a correction (W2)."""
    store = make_store(embedding=None)
    first = "Invoice 2024-001 for ACME Corp, amount $1,200, was paid on March 3 by bank transfer."
    second = "Invoice 2024-002 for ACME Corp, amount $1,500, was paid on March 10 by bank transfer."
    [a] = store.add([mem(first, source_record_id="inv-1")])
    [b] = store.add([mem(second, source_record_id="inv-2")])
    assert b.action is WriteAction.WRITE and WriteReason.CHANGED_FACT in b.reasons
    assert all(r.superseded_by is None for r in store.get([str(a.id), str(b.id)], memory_space_id="s1"))


def test_a_value_said_again_after_its_correction_is_current_again() -> None:
    """Changing a value back (store.correct, or add from a new source) makes the old version current (L1).

    Before: the words' derived id was the superseded version's, and the write merged into it.
    """
    for via_correct in (True, False):
        store = make_store(embedding=None)
        [a] = store.add([mem("Use the small model for drafts.", source_record_id="chat-1")])
        [b] = store.add([mem("Use the large model for drafts.", source_record_id="chat-2")])
        assert b.existing_id == a.id
        if via_correct:
            d = store.correct(str(b.id), memory_space_id="s1", body="Use the small model for drafts.")
        else:
            [d] = store.add([mem("Use the small model for drafts.", source_record_id="chat-3")])
        assert d.action is WriteAction.UPDATE and d.existing_id == b.id, (via_correct, d)
        assert store.query("which model for drafts", scope=SCOPE).accepted_ids == [a.id]


def test_a_value_said_back_after_two_corrections_is_recalled() -> None:
    """A -> B -> C -> A again: A is recalled; B, which listed A, lists it no more (L1, found by a second red team)."""
    store = make_store()
    texts = [f"The office wifi password hint is {c}." for c in ("blue", "green", "red")]
    [a] = store.add([mem(texts[0], source_record_id="c1")])
    b = store.correct(str(a.id), memory_space_id="s1", body=texts[1], scope=SCOPE, source_record_id="c2")
    store.correct(str(b.id), memory_space_id="s1", body=texts[2], scope=SCOPE, source_record_id="c3")
    [again] = store.add([mem(texts[0], source_record_id="c4")])
    assert again.action is WriteAction.UPDATE and again.id == a.id
    assert store.query("office wifi password hint", scope=SCOPE).accepted_ids == [a.id]
    [mid] = store.get([str(b.id)], memory_space_id="s1")
    assert a.id not in mid.supersedes


def test_a_private_write_of_a_shared_memorys_words_does_not_revive_or_retire_shared_memories() -> None:
    """The revive stays in its partition: a private write never supersedes the shared correction (R1, L1)."""
    store = make_store(embedding=None)
    [a] = store.add([mem("Use the small model for drafts.", visibility="shared", source_record_id="c1")])
    [b] = store.add([mem("Use the large model for drafts.", visibility="shared", source_record_id="c2")])
    assert b.existing_id == a.id
    [d] = store.add([mem("Use the small model for drafts.", visibility="private", source_record_id="c3")])
    assert d.action is not WriteAction.UPDATE
    [shared_b] = store.get([str(b.id)], memory_space_id="s1")
    assert shared_b.superseded_by is None


def test_forgetting_the_old_value_then_saying_it_again_leaves_one_current_memory() -> None:
    """Forget A (superseded by B), then say A's words again: they replace B, no loop of supersedes (L1, L2)."""
    store = make_store(embedding=None)
    [a] = store.add([mem("Use the small model for drafts.", source_record_id="chat-1")])
    [b] = store.add([mem("Use the large model for drafts.", source_record_id="chat-2")])
    assert b.existing_id == a.id
    store.forget("chat-1")
    [c] = store.add([mem("Use the small model for drafts.", source_record_id="chat-3")])
    assert c.action is WriteAction.UPDATE and c.existing_id == b.id
    assert store.query("which model for drafts", scope=SCOPE).accepted_ids == [c.id]


def test_forgetting_a_chain_one_link_at_a_time_ends_with_the_first_version() -> None:
    """A <- B <- C: forget B, then C: A is current again (the successor that stayed learned it replaced A)."""
    store = make_store()
    [a] = store.add([mem("The office wifi hint is blue.", source_record_id="chat-1")])
    [b] = store.add([mem("The office wifi hint is green.", source_record_id="chat-2", supersedes=[a.id])])
    store.add([mem("The office wifi hint is red.", source_record_id="chat-3", supersedes=[b.id])])
    store.forget("chat-2")
    store.forget("chat-3")
    [old] = store.get([str(a.id)], memory_space_id="s1")
    assert old.superseded_by is None
    assert store.query("office wifi hint", scope=SCOPE).accepted_ids == [a.id]


def test_a_superseded_by_link_to_another_owners_memory_tells_nothing_about_it() -> None:
    """A record claiming superseded_by another user's memory, then superseded itself: the same answer whether that
    memory exists or not (R1). Before, the correction chain was followed into the other user's memory and the
    second write was refused as not_owner only when the guessed text was theirs."""
    from shared_core.write.candidate import memory_id

    store = make_store()
    store.add([mem("I am seeing a therapist for anxiety.", source_record_id="u1-private")])
    path = WritePath.pinned(Scope(**{**SCOPE, "user_id": "u2"}), origin="user_explicit", cited=True)
    answers = []
    for n, guess in enumerate(("I am seeing a therapist for anxiety.", "I am seeing a therapist for depression.")):
        z = memory_id(Scope(**SCOPE), "", guess)
        [x] = store.add([{"body": f"probe note {n}", "superseded_by": z}], path=path)
        [w] = store.add([{"body": f"probe follow-up {n}", "supersedes": [x.id]}], path=path)
        answers.append((x.action, w.action, w.reasons, w.detail))
    assert answers[0] == answers[1] and answers[0][1] is WriteAction.UPDATE


def test_the_claim_checks_stay_bounded_on_long_cjk_text() -> None:
    """20,000 characters of one kana with one changed: answered (no quadratic word diff), and not one claim."""
    from shared_core.write.facts import one_change

    old, new = "あ" * 19_990, "い" + "あ" * 19_989
    assert not same_claim(old, new) and one_change(old, new)


def test_a_forget_interrupted_after_its_tombstones_is_finished_on_reopen(tmp_path: Path) -> None:
    """If the delete fails after the journal and tombstones, reopening the store finishes the forget (L2)."""
    store = make_store(tmp_path)
    store.add([mem("Secret project codename is Heron.", source_record_id="chat-9")])
    _forget_while_the_commit_fails(store, "chat-9")
    assert store.tombstoned("chat-9", None)
    assert store.all_ids("s1") != set()  # the delete did not happen yet
    store.close()
    reopened = make_store(tmp_path)
    assert reopened.all_ids("s1") == set()
    assert reopened.query("project codename", scope=SCOPE).accepted == ()


def test_a_secret_in_any_field_is_rejected() -> None:
    """Credentials in source, tags, entity, attribute, source_record_id or id are rejected too (issue 13 item 5)."""
    key = "AKIAIOSFODNN7EXAMPLE"
    store = make_store()
    decisions = store.add(
        [
            mem("Plain note one.", source=f"deploy {key}"),
            mem("Plain note two.", tags=["ok", f"aws_access_key_id={key}"]),
            mem("Plain note three.", entity=f"key {key}"),
            mem("Plain note four.", source_record_id=f"src-{key}"),
            mem("Plain note five.", id=f"id-{key}"),
        ]
    )
    assert [d.reasons for d in decisions] == [(WriteReason.SECRET,)] * 5
    assert store.all_ids("s1") == set()


def test_an_agent_repeating_its_own_note_does_not_promote_it() -> None:
    """On an agent path the same note saved twice is one memory with unchanged evidence and tier (W7, W3)."""
    store = make_store()
    agent = WritePath.pinned(ALICE, origin="agent_inferred", cited=True)
    first, again = store.add([{"body": "The printer on floor two jams on A3."}], path=agent) + store.add(
        [{"body": "The printer on floor two jams on A3."}], path=agent
    )
    assert first.action is WriteAction.WRITE and again.action is WriteAction.MERGE
    [rec] = store.get([first.id or ""], memory_space_id="s1")
    assert (rec.evidence_count, rec.tier.value) == (1, "tentative")
    other = store.add([{"body": "The printer on floor two jams on A3.", "source_record_id": "chat-2"}], path=agent)
    [rec] = store.get([first.id or ""], memory_space_id="s1")
    assert other[0].action is WriteAction.MERGE and rec.evidence_count == 2  # another source is evidence


def test_an_agent_path_gets_one_answer_for_unknown_and_foreign_links() -> None:
    """A supersedes link to another owner's id and to an id that does not exist are refused alike (no existence oracle)."""
    store = make_store()
    store.add([mem("Bob's note.", user_id="bob", id="bob-1")])
    agent = WritePath.pinned(ALICE, origin="user_explicit")
    foreign, unknown = store.add(
        [{"body": "New A.", "supersedes": ["bob-1"]}, {"body": "New B.", "supersedes": ["nobody-1"]}], path=agent
    )
    assert (foreign.reasons, foreign.detail) == (unknown.reasons, unknown.detail)
    assert foreign.reasons == (WriteReason.NOT_OWNER,)


def test_dedup_does_not_depend_on_batch_boundaries() -> None:
    """The same records in one call or one per call: the same decisions (near-duplicates in one batch merge too).

    Found loading the SituatedQA dev export: `recall-gate add` (batches of 100) merged 11 reworded
    questions that the 1,000-record bulk import wrote twice.
    """
    items = [
        mem("Q: who won women's college basketball championship last year? A: Baylor",
            title="who won women's college basketball championship last year", id="sqa-1", source_record_id="s/1"),
        mem("Q: who won the women's college basketball last year? A: Baylor",
            title="who won the women's college basketball last year", id="sqa-2", source_record_id="s/2"),
        mem("The kite shed is behind the boathouse.", id="k-1", source_record_id="s/3"),
        mem("Q: who won women's college basketball championship last year? A: Stanford",
            title="who won women's college basketball championship last year", id="sqa-3", source_record_id="s/6"),
    ]  # fmt: skip
    outcomes = []
    for batched in (True, False):
        store = MemoryStore.in_memory(clock=FrozenClock(NOW))  # the shipped embedding: real similarities
        ds = store.add(items) if batched else [store.add([i])[0] for i in items]
        outcomes.append([(d.action.value, d.id, tuple(r.value for r in d.reasons)) for d in ds])
        # a word left out of the question: one statement, one change, so a correction (not a merge)
        assert ds[1].action is WriteAction.UPDATE and ds[1].existing_id == "sqa-1"
        assert ds[3].action is not WriteAction.MERGE  # a changed answer is never merged
    assert outcomes[0] == outcomes[1]


def test_a_memory_rewritten_in_its_batch_is_compared_by_its_new_words() -> None:
    """Dedup inside one batch sees a memory's latest words: a rewrite under the same id moves its vector.

    The batch keeps its new memories' vectors in one growing matrix (issue 15 item 5: stacking
    them again for every record was quadratic); a rewrite under the same id must update its row,
    or a near-duplicate of the new words is written beside it and one of the old words merges.
    """
    items = [
        mem("The kite shed is behind the boathouse.", id="k-1", source_record_id="s/1"),
        mem("Herons nest in the tall reeds by the north pond every spring.", id="k-1", source_record_id="s/1"),
        mem("Herons nest in the tall reeds by the north pond each spring.", id="k-2", source_record_id="s/2"),
        mem("The kite shed is behind the old boathouse.", id="k-3", source_record_id="s/3"),
    ]
    outcomes = []
    for batched in (True, False):
        store = MemoryStore.in_memory(clock=FrozenClock(NOW))  # the shipped embedding: real similarities
        ds = store.add(items) if batched else [store.add([i])[0] for i in items]
        outcomes.append([(d.action.value, d.id, tuple(r.value for r in d.reasons)) for d in ds])
        # found by dedup (its vector moved to the new words); "every" -> "each" is a word replaced,
        # so a correction of the rewritten memory rather than a merge into it
        assert ds[2].action is WriteAction.UPDATE and ds[2].existing_id == "k-1", batched
        assert ds[3].action is WriteAction.WRITE, batched  # near the old words only: a new memory
    assert outcomes[0] == outcomes[1]


def test_a_memory_rewritten_into_another_partition_leaves_its_old_partitions_dedup() -> None:
    """Rewritten shared in the same batch, a private memory is no longer a private near-duplicate (W2).

    Found by a review: the batch kept the memory among the private partition's new memories, so
    a private record with its new words merged into the shared memory in one batch and was written
    on its own in two.
    """
    items = [
        mem("The kite shed is behind the boathouse.", id="k-1"),
        mem("Herons nest in the reeds by the north pond.", id="k-1", visibility="shared"),
        mem("Herons nest in the reeds by the north pond.", id="k-2"),
    ]
    outcomes = []
    for batched in (True, False):
        store = make_store()
        ds = store.add(items) if batched else [store.add([i])[0] for i in items]
        outcomes.append([(d.action.value, d.id) for d in ds])
        assert ds[2].action is WriteAction.WRITE and ds[2].id == "k-2", (batched, ds[2])
    assert outcomes[0] == outcomes[1]
