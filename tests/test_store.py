"""MemoryStore: scoped hybrid retrieval over Chroma + BM25, consistency, lock (R1, R12, H1-H4)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from invariants import assert_no_text, assert_partition, assert_scope_safe
from stores import SCOPE, make_store, mem

from shared_core import EmbeddingError, InputError, Scope, ScopeError, StoreLockedError
from shared_core.testing import HashEmbedding


@pytest.fixture
def store():  # type: ignore[no-untyped-def]
    s = make_store()
    yield s
    s.close()


def test_add_then_query_returns_gated_hits_with_provenance(store) -> None:  # type: ignore[no-untyped-def]
    """A stored memory comes back accepted with channel ranks and bounded scores (R12)."""
    store.add([mem("Official posts go out at 10:00 after review.", "Posting policy")])
    result = store.query("when do official posts go out", scope=SCOPE)
    assert len(result.accepted) == 1
    hit = result.accepted[0]
    prov = hit.provenance()
    assert set(prov["channels"]) == {"keyword", "vector"}
    assert prov["keyword_rank"] == 1 and prov["vector_rank"] == 1
    assert -1.0 <= hit.score <= 1.0 and 0.0 <= hit.lexical_score <= 1.0
    assert result.audit.extra["in_scope"] == 1


def test_scope_is_applied_before_retrieval(store) -> None:  # type: ignore[no-untyped-def]
    """Memories of another user, agent, space or route never reach the gate, let alone the model (R1)."""
    text = "The launch code word is heliotrope."
    store.add(
        [
            mem(text, user_id="u2"),
            mem(text, agent_id="a2"),
            mem(text, memory_space_id="s2"),
            mem(text, route_id="r9"),
            mem("Our team mascot is a heron."),
        ]
    )
    hits, timings = store.search("launch code word heliotrope", scope=SCOPE)
    assert [h.record.body for h in hits] == ["Our team mascot is a heron."]
    assert timings["in_scope"] == 1


def test_shared_memories_are_visible_to_the_space(store) -> None:  # type: ignore[no-untyped-def]
    """A shared memory of another user in the same space and route is retrievable (R2)."""
    store.add([mem("Refunds are processed within 5 days.", user_id="u2", agent_id="a9", visibility="shared")])
    result = store.query("refunds processed within days", scope=SCOPE)
    assert [h.record.user_id for h in result.accepted] == ["u2"]


def test_error_code_found_by_keyword_channel(store) -> None:  # type: ignore[no-untyped-def]
    """An exact error code is found lexically and passes on lexical_score (H1, DESIGN Scores)."""
    store.add([mem("E-4012 means the gateway timed out; retry once."), mem("Lunch is at noon.")])
    result = store.query("E-4012", scope=SCOPE)
    assert result.accepted[0].record.body.startswith("E-4012")
    assert result.accepted[0].lexical_score == 1.0
    assert "keyword" in result.accepted[0].channels


def test_japanese_memory_found_by_japanese_query(store) -> None:  # type: ignore[no-untyped-def]
    """CJK bigrams make Japanese memories searchable with BM25 (H4)."""
    store.add([mem("請求書の支払いは月末締め翌月末払いです。"), mem("Posting happens at ten.")])
    hits, _ = store.search("支払いはいつ", scope=SCOPE)
    assert hits[0].record.body.startswith("請求書")
    assert hits[0].keyword_rank == 1


def test_no_scope_is_an_error_never_an_unscoped_search(store) -> None:  # type: ignore[no-untyped-def]
    """A query without a complete scope raises ScopeError (R1)."""
    with pytest.raises(ScopeError):
        store.query("anything", scope=None)
    with pytest.raises(ScopeError):
        store.query("anything", scope={"user_id": "u1", "agent_id": "a1"})


def test_bad_query_input_is_typed(store) -> None:  # type: ignore[no-untyped-def]
    """Non-string and huge queries raise InputError before any work."""
    with pytest.raises(InputError):
        store.query(123, scope=SCOPE)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        store.query("x" * 10_001, scope=SCOPE)
    with pytest.raises(InputError):
        store.query("x", scope=SCOPE, k=0)


def test_dry_run_changes_nothing(store) -> None:  # type: ignore[no-untyped-def]
    """A write dry-run stores nothing; a query preview decides the same and flags the audit (R10)."""
    decisions = store.add([mem("Dry-run memory about kites.")], dry_run=True)
    assert decisions[0].action.value == "write" and decisions[0].dry_run
    assert store.all_ids("s1") == set()
    store.add([mem("Real memory about kites.")])
    before = store.all_ids("s1")
    preview = store.preview("kites", scope=SCOPE)
    real = store.query("kites", scope=SCOPE)
    assert preview.accepted_ids == real.accepted_ids and preview.audit.dry_run
    assert store.all_ids("s1") == before


def test_idempotent_upsert_and_indexes_agree(store) -> None:  # type: ignore[no-untyped-def]
    """Writing the same memory twice keeps one id; Chroma ids == BM25 ids (H2)."""
    store.add([mem("Same fact.")])
    store.add([mem("Same fact.")])
    assert len(store.all_ids("s1")) == 1
    assert store.all_ids("s1") == store.indexed_ids("s1")


def test_weighted_fusion_and_rrf_keep_channel_ranks() -> None:
    """Both fusion modes keep channel ranks and raw scores, and weights change the order (H1)."""
    from shared_core.retrieval.fusion import ChannelResult, FusionConfig, fuse

    kw = ChannelResult("keyword", ["a", "b"], [9.0, 1.0])
    vec = ChannelResult("vector", ["b", "a"], [0.9, 0.1])
    for mode in ("rrf", "weighted"):
        cfg = FusionConfig(mode=mode)
        lex_heavy = fuse([kw, vec], {"keyword": 3.0, "vector": 1.0}, cfg)
        sem_heavy = fuse([kw, vec], {"keyword": 1.0, "vector": 3.0}, cfg)
        assert lex_heavy[0].id == "a" and sem_heavy[0].id == "b"
        assert lex_heavy[0].ranks == {"keyword": 1, "vector": 2} and lex_heavy[0].raw["keyword"] == 9.0


def test_tiny_corpus_bm25_scores_are_positive() -> None:
    """A word in one of two memories still scores above zero (Lucene IDF, not Okapi's)."""
    from shared_core.retrieval.bm25 import BM25Partition

    for engine in ("rank_bm25", "bm25s"):
        p = BM25Partition(["a", "b"], [["kite"], ["heron"]], engine=engine)  # type: ignore[arg-type]
        assert p.scores(["kite"])[0] > 0 and p.top(["kite"], 5)[0][0] == 0


def test_vector_search_through_chroma_gives_the_same_top_hit() -> None:
    """vector_search='chroma' ranks inside the scope with Chroma's index and agrees on the top hit."""
    stores = [make_store(vector_search=v) for v in ("memory", "chroma")]
    for s in stores:
        s.add([mem("Kites fly in the wind."), mem("Herons fish in rivers."), mem("Kites fly", user_id="u2")])
    tops = [s.search("kites flying in wind", scope=SCOPE)[0][0].record.body for s in stores]
    assert tops == ["Kites fly in the wind."] * 2


def test_bm25s_engine_finds_the_same_memory() -> None:
    """The optional bm25s engine retrieves like the default on a small store."""
    s = make_store(bm25_engine="bm25s")
    s.add([mem("E-4012 gateway timeout."), mem("Lunch at noon.")])
    assert s.query("E-4012", scope=SCOPE).accepted[0].record.body.startswith("E-4012")


def test_mixing_embedding_models_is_refused(tmp_path: Path) -> None:
    """A collection built with one embedding refuses a store with another (dimension or name)."""
    with make_store(tmp_path) as s:
        s.add([mem("A fact.")])
    with make_store(tmp_path, embedding=HashEmbedding(dimension=64)) as other, pytest.raises(EmbeddingError):
        other.query("fact", scope=SCOPE)


def test_persistent_reopen_rebuilds_bm25_from_chroma(tmp_path: Path) -> None:
    """After reopening, BM25 is rebuilt from Chroma and finds what was written (H2)."""
    with make_store(tmp_path) as s:
        s.add([mem("E-4012 gateway timeout."), mem("Herons fish.")])
    with make_store(tmp_path) as s:
        assert s.all_ids("s1") == s.indexed_ids("s1")
        assert s.query("E-4012", scope=SCOPE).accepted[0].record.body.startswith("E-4012")


def test_second_writer_process_gets_a_typed_error_quickly(tmp_path: Path) -> None:
    """A second process opening the same path for writing fails with StoreLockedError within seconds."""
    with make_store(tmp_path):
        code = textwrap.dedent(
            f"""
            import time, sys
            sys.path.insert(0, {str(Path(__file__).parent)!r})
            from stores import make_store
            from shared_core import StoreLockedError
            t = time.monotonic()
            try:
                make_store({str(tmp_path)!r}, lock_timeout=1.0)
            except StoreLockedError:
                print("locked", round(time.monotonic() - t, 1))
            """
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert proc.stdout.startswith("locked"), proc.stderr[-2000:]
        assert float(proc.stdout.split()[1]) < 5
    with make_store(tmp_path):  # released on close
        pass


def test_lock_is_exclusive_in_process_too(tmp_path: Path) -> None:
    """Two writers on one path in one process are refused as well."""
    with make_store(tmp_path), pytest.raises(StoreLockedError):
        make_store(tmp_path, lock_timeout=0.2)


def test_audit_file_has_one_record_per_operation_and_no_text(tmp_path: Path) -> None:
    """A persistent store writes write and recall audit records to <path>/audit, without bodies."""
    with make_store(tmp_path) as s:
        s.add([mem("Confidential roadmap item: project nightjar.")])
        s.query("roadmap", scope=SCOPE)
        lines = s.audit_path.read_text(encoding="utf-8").splitlines()
    assert [line.split('"event":"')[1].split('"')[0] for line in lines] == ["write", "recall"]
    for line in lines:
        assert_no_text(line, ["Confidential roadmap item: project nightjar."])


words = st.sampled_from(
    ["kite", "heron", "launch", "code", "secret", "plan", "river", "wind", "policy", "E-4012"]
)


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["u1", "u2", "u3"]),
            st.sampled_from(["private", "shared"]),
            st.lists(words, min_size=1, max_size=6),
        ),
        min_size=1,
        max_size=12,
    ),
    st.lists(words, min_size=1, max_size=4),
)
def test_another_users_private_memory_is_never_returned(docs, query) -> None:  # type: ignore[no-untyped-def]
    """Whatever the texts, a private memory of another user is never a hit nor accepted (R1, R2)."""
    s = make_store()
    try:
        s.add([mem(" ".join(w), user_id=u, visibility=v) for u, v, w in docs])
        scope = Scope(**SCOPE)
        hits, _ = s.search(" ".join(query), scope=scope)
        for h in hits:
            assert h.record.user_id == "u1" or h.record.visibility.value == "shared"
        result = s.query(" ".join(query), scope=scope)
        assert_scope_safe(result, scope)
        assert_partition(result, len(hits))
    finally:
        s.close()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(words, max_size=12), min_size=1, max_size=30), st.lists(words, min_size=1, max_size=5)
)
def test_postings_bm25_equals_rank_bm25_loop(corpus, query) -> None:  # type: ignore[no-untyped-def]
    """The postings scorer gives exactly rank-bm25's per-document scores (same statistics, same formula)."""
    import numpy as np

    from shared_core.retrieval.bm25 import LuceneBM25Okapi

    index = LuceneBM25Okapi([doc or [""] for doc in corpus])
    assert np.allclose(index.get_scores(query), index.get_scores_reference(query), rtol=1e-12, atol=1e-12)


def test_an_id_merged_as_a_duplicate_still_gets_and_deletes_its_memory(tmp_path: Path) -> None:
    """add(ids=[b]) merged into memory a: get([b]) returns a, delete([b]) deletes it (L2).

    On a persistent store (the ledger in Chroma) and after reopening it; another owner's delete by
    that id is refused, and an id that was never written resolves to nothing.
    """
    body = "The staging database lives on host db-stage-2 in eu-west."
    store = make_store(tmp_path / "m")
    try:
        assert store.add([mem(body, id="first")])[0].action.value == "write"
        merged = store.add([mem(body, id="second")])[0]
        assert merged.action.value == "merge" and merged.id == "first"
    finally:
        store.close()
    store = make_store(tmp_path / "m")
    try:
        assert [r.id for r in store.get(["second"], memory_space_id="s1")] == ["first"]
        assert store.get(["never-written"], memory_space_id="s1") == []
        other = {**SCOPE, "user_id": "u2"}
        assert store.delete(["second"], memory_space_id="s1", scope=other) == 0
        assert store.delete(["second"], memory_space_id="s1", scope=SCOPE) == 1
        assert store.get(["first", "second"], memory_space_id="s1") == []
        assert not store.query("where is the staging database", scope=SCOPE).accepted
    finally:
        store.close()


@pytest.mark.parametrize("persistent", [False, True], ids=["in_memory", "persistent"])
def test_a_deleted_memorys_links_go_with_it_so_the_same_words_written_again_start_a_new_lineage(
    tmp_path: Path, persistent: bool
) -> None:
    """L2: forget(A) deletes the memory A wrote and X merged into; C writes the same words again.

    Forgetting X (or deleting X's merged id) then deletes nothing: the new memory is C's alone.
    Before, the merge link of X outlived the memory and deleted C's memory with it; a forget of a
    source still deletes what is merged into a live memory (the second half).
    """
    body = "The kite shed key hangs behind the boathouse door."
    store = make_store(tmp_path / "m" if persistent else None)
    try:
        [a] = store.add([mem(body, source_record_id="src-A")])
        [x] = store.add([mem(body, source_record_id="src-X", id="x-copy")])
        assert x.action.value == "merge" and x.id == a.id
        assert store.forget("src-A")["ids"] == [a.id]
        [c] = store.add([mem(body, source_record_id="src-C")])
        assert c.action.value == "write" and c.id == a.id
        assert store.forget("src-X")["ids"] == []
        assert store.delete(["x-copy"], memory_space_id="s1") == 0
        assert [r.source_record_id for r in store.get([c.id], memory_space_id="s1")] == ["src-C"]
        [y] = store.add([mem(body, source_record_id="src-Y")])
        assert y.action.value == "merge"
        assert store.forget("src-Y")["ids"] == [c.id]
    finally:
        store.close()


def test_a_write_does_not_locate_its_memories_in_chroma_and_a_rewrite_leaves_its_old_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upsert finds earlier versions in the partitions held in memory, not by a Chroma read (issue 15 item 5).

    Where a memory was before matters only to the partitions this process holds; the commit used
    to read every upserted id's metadata from Chroma first (one read per write). A memory
    rewritten into another partition (private -> shared) still leaves the held old one, and
    Chroma and BM25 keep the same ids. Deletes are still located (their snapshots go).
    """
    from invariants import assert_indexes_agree

    from shared_core.store import backend as backend_module

    calls: list[str] = []
    real = backend_module.chroma_call

    def counted(what: str, fn, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(what)
        return real(what, fn, **kwargs)

    monkeypatch.setattr(backend_module, "chroma_call", counted)
    store = make_store(tmp_path / "s")
    private = Scope(**SCOPE)
    store.add([mem("The kite shed is behind the boathouse.", id="k-1", source_record_id="src-1")])
    assert "locate" not in calls and "upsert" in calls
    assert [h.record.id for h in store.search("kite shed", scope=private)[0]] == ["k-1"]  # held now
    calls.clear()
    [d] = store.add([mem("Herons nest in the reeds by the north pond.", id="k-1", visibility="shared")])
    assert d.action.value == "update" and "locate" not in calls
    assert_indexes_agree(store, SCOPE["memory_space_id"])
    hits, _ = store.search("herons north pond", scope=private)
    assert [h.record.id for h in hits] == ["k-1"] and hits[0].record.visibility.value == "shared"
    assert all("kite" not in h.record.body for h in store.search("kite shed boathouse", scope=private)[0])
    calls.clear()
    store.forget("src-1")
    assert "locate" in calls and store.all_ids(SCOPE["memory_space_id"]) == set()
    store.close()


def test_another_clients_version_synced_in_between_leaves_no_stale_copy() -> None:
    """Two writers on one Chroma: a version of the same id another client wrote, synced here between the
    gate's read and its commit, does not stay in another partition (R1; found by a review).

    The id of a memory does not depend on its visibility: client B writes the words shared while
    client A writes them private. If A's partitions keep B's shared copy after A's upsert made
    the memory private in Chroma, A serves another user a memory that is now private.
    """
    import chromadb

    client = chromadb.EphemeralClient()  # one in-process Chroma for the whole test session: own prefix
    a = make_store(client=client, collection_prefix="stale-copy")
    b = make_store(client=client, collection_prefix="stale-copy")
    a.add([mem("The lab door code changes every Monday.")])
    a.search("door", scope=Scope(**SCOPE))  # A holds the private and shared partitions
    text = "The kiln in room 4 must be unloaded before noon."
    real = a.writer._stored

    def racing(records):  # type: ignore[no-untyped-def]
        out = real(records)  # A's gate has read the id: absent
        if not getattr(racing, "done", False):
            racing.done = True  # type: ignore[attr-defined]
            b.add([mem(text, visibility="shared")])  # B writes it shared; A's dedup search syncs it
        return out

    a.writer._stored = racing  # type: ignore[method-assign]
    [d] = a.add([mem(text)])
    assert d.stored
    other_user = Scope(**{**SCOPE, "user_id": "u2"})
    from invariants import assert_no_duplicates, assert_partition_agrees

    for store in (a, b):
        assert text not in {h.record.body for h in store.search("kiln unloaded noon", scope=other_user)[0]}
        assert_no_duplicates(store, SCOPE["memory_space_id"])  # an id in two partitions was the leak
        for key in store.index_state(SCOPE["memory_space_id"])["loaded"]:
            assert_partition_agrees(store, key)
    a.close()
    b.close()


def test_a_reader_sees_every_write_while_the_writers_end_is_deferred(tmp_path: Path) -> None:
    """While the sole writer's last end is not written (head ``pending > done``), a read-only store on
    the same folder sees each write, its second search too; after the end lands nothing is re-read (H2)."""
    folder = tmp_path / "s"
    writer = make_store(folder)
    writer._backend.feed.defer_s = 600  # the end stays deferred for the whole test
    try:
        writer.add([mem("The kite shed is behind the boathouse.")])
        reader = make_store(folder, read_only=True)
        try:
            assert [h.record.body for h in reader.search("kite shed", scope=SCOPE)[0]] == [
                "The kite shed is behind the boathouse."
            ]
            writer.add([mem("Herons nest on the north bank in spring.")])
            feed = writer._backend.feed
            assert _feed_heads(folder) == [("s1", 2, 1)]  # stored: the end of 2 is deferred
            assert feed.heads("s1")[feed.writer].done == 2  # the writer's own cache knows 2 landed
            for _ in range(2):  # pending > done: the reader re-reads the writer's last commit, never misses it
                assert "Herons nest on the north bank in spring." in {
                    h.record.body for h in reader.search("herons nest", scope=SCOPE)[0]
                }
            writer._backend.feed.flush()
            assert {h.record.body for h in reader.search("herons nest", scope=SCOPE)[0]} >= {
                "Herons nest on the north bank in spring."
            }
        finally:
            reader.close()
    finally:
        writer.close()


def _feed_heads(folder: Path) -> list[tuple[str, int, int]]:
    import sqlite3

    con = sqlite3.connect(f"file:{folder / 'feed.sqlite3'}?mode=ro", uri=True)
    try:
        return sorted((str(s), int(p), int(d)) for s, p, d in con.execute("SELECT space, pending, done FROM heads"))
    finally:
        con.close()


def _until(check: object, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return bool(check())  # type: ignore[operator]


def test_deferred_feed_ends_survive_faults_other_spaces_and_exit(tmp_path: Path) -> None:
    """Found by a review of the deferred ends (H2): a close whose feed write fails still closes (lock
    released, no exception); an end that failed to be written is tried again; a busy space does not
    hold back another space's end; a writer that exits without close() leaves finished heads."""
    folder = tmp_path / "s"
    store = make_store(folder)
    feed = store._backend.feed
    feed.defer_s = 0.2
    store.add([mem("The kite shed is behind the boathouse.")])
    with feed.storage._mutex:  # SQLite itself refuses writes: a stand-in for a full disk
        feed.storage._db().execute("PRAGMA query_only=1")  # type: ignore[union-attr]
    time.sleep(0.5)  # the thread runs into it
    assert _feed_heads(folder) == [("s1", 1, 0)]
    with feed.storage._mutex:
        feed.storage._db().execute("PRAGMA query_only=0")  # type: ignore[union-attr]
    assert _until(lambda: _feed_heads(folder) == [("s1", 1, 1)])  # retried without another commit
    store.add([mem("Herons nest on the north bank in spring.", memory_space_id="s2")])  # space s2: end deferred
    for i in range(25):  # s1 written every 20 ms for half a second
        store.add([mem(f"Tide table entry number {i} for the north jetty.")])
        time.sleep(0.02)
    [(_, s2_pending, s2_done)] = [h for h in _feed_heads(folder) if h[0] == "s2"]
    assert s2_pending == s2_done  # s2's end did not wait for s1 to go quiet
    with feed.storage._mutex:
        feed.storage._db().execute("PRAGMA query_only=1")  # type: ignore[union-attr]
    store.close()  # the last end cannot be written: logged, and closing goes on
    with make_store(folder) as again:  # the lock was released; the reopened writer settles its head
        again.add([mem("Swifts roost under the old mill roof in summer.")])
    assert all(p == d for _, p, d in _feed_heads(folder))
    code = f"""
        import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})
        from stores import make_store, mem
        s = make_store({str(tmp_path / "exit")!r})
        s._backend.feed.defer_s = 600
        s.add([mem("Otters fish below the weir at dawn.")])
    """  # exits without close(), its end still deferred
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _feed_heads(tmp_path / "exit") == [("s1", 1, 1)]


def test_the_change_feed_keeps_a_zeroed_journal_that_readers_ignore(tmp_path: Path) -> None:
    """The embedded change feed commits with a persistent journal, and defers each commit's end (issue 15 item 5; H2).

    ``journal_mode=PERSIST`` zeroes the journal's header instead of deleting the file after each
    commit. A zeroed header is no hot journal: a ``mode=ro`` reader opens the feed. The sole writer
    writes one head per commit: a begin says ``pending = k`` and ``done`` of the commit before it;
    the last end is written shortly after the last commit (or at close), and until then the head
    says ``pending > done``, which readers treat as "re-read that commit".
    """
    import sqlite3

    def heads(folder: Path) -> list[tuple[int, int]]:
        con = sqlite3.connect(f"file:{folder / 'feed.sqlite3'}?mode=ro", uri=True)
        try:
            return [(int(p), int(d)) for p, d in con.execute("SELECT pending, done FROM heads").fetchall()]
        finally:
            con.close()

    folder = tmp_path / "s"
    with make_store(folder) as store:
        store.add([mem("The kite shed is behind the boathouse.")])
        journal = folder / "feed.sqlite3-journal"
        assert journal.exists() and journal.read_bytes()[:8] == bytes(8)
        store.add([mem("Herons nest on the north bank in spring.")])
        first = heads(folder)
        assert first in ([(2, 1)], [(2, 2)]), first  # the begin of 2 said done = 1 (the end of 2 may be written)
        deadline = time.monotonic() + 5
        while heads(folder) != [(2, 2)] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert heads(folder) == [(2, 2)]  # written by the feed's thread, shortly after the last commit
        store.add([mem("Swifts roost under the old mill roof in summer.")])
    assert heads(folder) == [(3, 3)]  # and at close
