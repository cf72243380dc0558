"""The incremental partition (issue 14): in-place writes give exactly the rebuilt index, and views never change.

The postings index must score exactly like ``BM25Partition`` (rank-bm25's Okapi with Lucene IDF)
built from scratch over the same memories, after any sequence of upserts, rewrites and removals;
and a view handed to a query must stay as it was while later writes change the partition.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.model import MemoryRecord
from shared_core.retrieval.bm25 import BM25Partition, union_stats
from shared_core.retrieval.partition import Partition, PartitionView, StoredRow, record_text
from shared_core.testing import make_record
from shared_core.text import tokenize

WORDS = ["kite", "heron", "shed", "north", "bank", "the", "E-4012", "policy", "記憶", "設計", "spring", "a"]
QUERIES = ["kite heron", "policy policy shed", "E-4012", "記憶の設計", "absent", "", "the a"]
DIM = 4
_OTHER = BM25Partition(["o1", "o2"], [tokenize("kite kite north"), tokenize("設計 policy")])

_op = st.tuples(
    st.sampled_from(["upsert", "upsert", "upsert", "remove"]),
    st.integers(0, 25),
    st.lists(st.sampled_from(WORDS), max_size=7),
    st.sampled_from(["", "kite title", "記憶"]),
)


def _vec(i: int, salt: int) -> np.ndarray:
    v = np.random.default_rng(i * 131 + salt).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _assert_view_is(view: PartitionView, live: dict[str, tuple[MemoryRecord, np.ndarray]]) -> None:
    assert sorted(view.ids) == sorted(live)
    ref = BM25Partition(list(view.ids), [tokenize(record_text(live[m][0])) for m in view.ids])
    for q in QUERIES:
        toks = tokenize(q)
        assert np.array_equal(view.bm25.scores(toks), ref.scores(toks)), q
        assert view.bm25.top(toks, 5) == ref.top(toks, 5), q
        # Scored as part of a larger corpus (a scope's private + shared partitions, H1).
        bigger = union_stats([view.bm25.stats, _OTHER.stats], terms=toks)
        assert np.array_equal(view.bm25.scores_with(toks, bigger), ref.scores_with(toks, bigger)), q
        assert np.array_equal(view.bm25.scores_with(toks, view.bm25.stats), ref.scores(toks)), q
    assert dict(view.df) == dict(ref.df)
    assert view.bm25.stats.n_docs == ref.stats.n_docs
    assert view.bm25.stats.total_len == ref.stats.total_len
    for i, mid in enumerate(view.ids):
        assert np.array_equal(view.matrix[i], live[mid][1])
        assert view.records[i] == live[mid][0]
        assert view.doc_sets[i] == ref.doc_sets[i]
        assert view.pos[mid] == i


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_op, max_size=40))
def test_property_incremental_index_equals_a_rebuild_and_views_stay_frozen(
    ops: list[tuple[str, int, list[str], str]],
) -> None:
    """Any upsert/remove sequence: each view scores exactly like BM25Partition rebuilt then, and still does after later writes."""
    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    live: dict[str, tuple[MemoryRecord, np.ndarray]] = {}
    taken: list[tuple[PartitionView, dict[str, tuple[MemoryRecord, np.ndarray]]]] = []
    for n, (op, k, words, title) in enumerate(ops):
        mid = f"m{k}"
        if op == "upsert":
            rec = make_record(mid, body=" ".join(words), title=title)
            vec = _vec(k, n % 3)
            part.upsert([rec], vec[None, :])
            live[mid] = (rec, vec)
        else:
            assert part.remove([mid]) == (1 if mid in live else 0)
            live.pop(mid, None)
        if n % 3 == 0:
            taken.append((part.view(), dict(live)))
    taken.append((part.view(), dict(live)))
    for view, then in taken:
        _assert_view_is(view, then)
    assert len(part) == len(live)


def test_bulk_load_and_lazy_rows_equal_record_upserts() -> None:
    """Loading stored rows (document + metadata, decoded lazily) gives the same view as upserting records."""
    from shared_core.model import encode_record

    recs = [
        make_record(f"m{i}", body=" ".join(WORDS[i % 5 : i % 5 + 4]), title="t" if i % 2 else "")
        for i in range(30)
    ]
    vecs = np.stack([_vec(i, 0) for i in range(30)])
    a = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    a.upsert(recs, vecs)
    b = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    b.load([StoredRow.stored(r.id, *encode_record(r)) for r in recs], vecs)
    va, vb = a.view(), b.view()
    assert list(va.ids) == list(vb.ids)
    for q in QUERIES:
        assert np.array_equal(va.bm25.scores(tokenize(q)), vb.bm25.scores(tokenize(q)))
    assert list(va.records) == list(vb.records)


def test_a_lost_superseded_by_is_derived_from_the_successor() -> None:
    """A correction whose link on the old memory was lost to a race still retires it in the view (lower only)."""
    old = make_record("m1", body="The standup is on Monday.")
    new = make_record("m2", body="The standup is on Tuesday.", supersedes=("m1",))
    foreign = make_record("m3", body="x", supersedes=("m4",), user_id="u9")
    other = make_record("m4", body="Other owner's memory.")
    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    part.upsert([old, new, foreign, other], np.stack([_vec(i, 0) for i in range(4)]))
    by_id = {r.id: r for r in part.view().records}
    assert by_id["m1"].superseded_by == "m2"
    assert by_id["m2"].superseded_by is None
    assert by_id["m4"].superseded_by is None  # another owner's record cannot retire it


def test_bm25s_engine_still_rebuilds_correctly() -> None:
    """The bm25s engine (no incremental API) gives the same ids and top results after writes."""
    pytest.importorskip("bm25s")  # the optional extra
    part = Partition(("s1", "", "b"), DIM, engine="bm25s")
    recs = [make_record(f"m{i}", body=" ".join(WORDS[i % 6 : i % 6 + 3])) for i in range(12)]
    part.upsert(recs, np.stack([_vec(i, 0) for i in range(12)]))
    part.remove(["m3"])
    view = part.view()
    ref = BM25Partition(list(view.ids), [tokenize(record_text(r)) for r in view.records], engine="bm25s")
    assert [view.ids[i] for i, _ in view.bm25.top(tokenize("kite heron"), 5)] == [
        view.ids[i] for i, _ in ref.top(tokenize("kite heron"), 5)
    ]


def test_an_append_writes_in_place_and_a_rewrite_copies_only_then() -> None:
    """A new memory goes into spare rows the earlier view shares; an in-place change copies once, and old views keep their data."""
    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    part.upsert(
        [make_record(f"m{i}", body=f"kite {i}") for i in range(20)], np.stack([_vec(i, 0) for i in range(20)])
    )
    part.upsert([make_record("m20", body="heron")], _vec(20, 0)[None, :])  # the buffer grows (doubles) once
    first = part.view()
    part.upsert([make_record("m21", body="heron two")], _vec(21, 0)[None, :])
    second = part.view()
    assert np.shares_memory(first.matrix, second.matrix)  # no copy of the 20 rows for one append
    before = first.matrix.copy()
    part.remove(["m3"])  # moves the last row into the hole: the shared buffer is copied first
    third = part.view()
    assert not np.shares_memory(second.matrix, third.matrix)
    assert np.array_equal(first.matrix, before) and len(second.ids) == 22 and len(third.ids) == 21


@settings(max_examples=40, deadline=None)
@given(
    batches=st.lists(
        st.lists(st.tuples(st.integers(0, 30), st.lists(st.sampled_from(WORDS), max_size=6)), min_size=1, max_size=12),
        min_size=1,
        max_size=8,
    ),
    removals=st.lists(st.integers(0, 30), max_size=4),
)
def test_property_batched_appends_grow_postings_in_place_and_views_stay_frozen(
    batches: list[list[tuple[int, list[str]]]], removals: list[int]
) -> None:
    """Batches that repeat common words (postings appended into spare room), rewrites and removals:
    every view taken on the way still scores exactly like a rebuild of its own memories (W8)."""
    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    live: dict[str, tuple[MemoryRecord, np.ndarray]] = {}
    taken: list[tuple[PartitionView, dict[str, tuple[MemoryRecord, np.ndarray]]]] = []
    for n, batch in enumerate(batches):
        recs = {f"m{k}": make_record(f"m{k}", body=" ".join(["the", *words])) for k, words in batch}
        vecs = np.stack([_vec(int(mid[1:]), n) for mid in recs])
        part.upsert(list(recs.values()), vecs)
        live.update({mid: (rec, vec) for (mid, rec), vec in zip(recs.items(), vecs, strict=True)})
        taken.append((part.view(), dict(live)))
        if n == len(batches) // 2:
            for k in removals:
                part.remove([f"m{k}"])
                live.pop(f"m{k}", None)
            taken.append((part.view(), dict(live)))
    for view, then in taken:
        _assert_view_is(view, then)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 40),
    queries=st.lists(st.tuples(st.integers(0, 8), st.sampled_from([-1.0, 0.0, 0.5, 0.9, 0.99])), min_size=1, max_size=12),
    limit=st.integers(0, 6),
)
def test_property_neighbours_of_many_vectors_are_each_vectors_own(
    n: int, queries: list[tuple[int, float]], limit: int
) -> None:
    """The dedup search of a batch (one matrix product from 8 vectors on, one einsum each below)
    gives each vector exactly the memories over its threshold, best first, ties in partition
    order, at most ``limit`` (at least one): what a search for that vector alone gives (W2, W8)."""
    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    vecs = np.stack([_vec(i % 7, 0) for i in range(n)]) if n else np.zeros((0, DIM), np.float32)  # repeats tie
    if n:
        part.upsert([make_record(f"m{i}", body=f"kite {i}") for i in range(n)], vecs)
    qv = np.stack([_vec(k, 0) for k, _ in queries])  # k < 7: a stored vector itself (cosine 1)
    together = part.neighbours(qv, thresholds=[t for _, t in queries], limit=limit)
    assert len(together) == len(queries)
    for j, ((_k, t), got) in enumerate(zip(queries, together, strict=True)):
        sims = vecs.astype(np.float64) @ qv[j].astype(np.float64)
        want = sorted((i for i in range(n) if sims[i] >= t), key=lambda i: (-round(sims[i], 5), i))
        assert [r.id for r, _ in got] == [f"m{i}" for i in want[: max(1, limit)]]
        assert all(abs(s - sims[int(r.id[1:])]) < 1e-5 for r, s in got)
        [alone] = part.neighbours(qv[j], thresholds=[t], limit=limit)
        assert [r.id for r, _ in alone] == [r.id for r, _ in got]


@settings(max_examples=60, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["upsert", "upsert", "remove", "load"]),
            st.integers(0, 12),
            st.sampled_from([None, "user", "team"]),
            st.sampled_from([None, "language", "city"]),
        ),
        max_size=30,
    )
)
def test_property_attribute_index_equals_a_scan(ops: list[tuple[str, int, str | None, str | None]]) -> None:
    """Writes that set, change and drop a memory's entity and attribute, removals, and a reload from
    stored rows: the indexed lookup finds exactly what a pass over the partition finds (L1)."""
    from shared_core.model import encode_record

    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    for op, k, entity, attribute in ops:
        mid = f"m{k}"
        if op == "upsert":
            part.upsert([make_record(mid, body=f"note {k}", entity=entity, attribute=attribute)], _vec(k, 0)[None, :])
        elif op == "remove":
            part.remove([mid])
        else:  # the same memories loaded from their stored form (lazy rows)
            view = part.view()
            again = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
            again.load([StoredRow.stored(r.id, *encode_record(r)) for r in view.records], view.matrix.copy())
            part = again
    records = list(part.view().records)
    for entity in ("user", "team"):
        for attribute in ("language", "city"):
            want = sorted(r.id for r in records if r.entity == entity and r.attribute == attribute)
            assert sorted(r.id for r in part.with_attribute(entity, attribute)) == want


def test_a_partition_changed_during_the_dedup_search_is_searched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The vectors are compared outside the lock; a write landing meanwhile (another process's,
    synced in) makes the search run again under the lock, so its answer names the memories there
    now, never a stale row (W2)."""
    from shared_core.retrieval import partition as module

    part = Partition(("s1", "", "b"), DIM, engine="rank_bm25")
    part.upsert([make_record(f"m{i}", body=f"kite {i}") for i in range(3)], np.stack([_vec(i, 0) for i in range(3)]))
    real = module.nearest
    calls: list[int] = []

    def with_a_write_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(args[0]))
        if len(calls) == 1:  # while the first comparison runs: m0 goes, a copy of m0's vector arrives
            part.remove(["m0"])
            part.upsert([make_record("m9", body="heron")], _vec(0, 0)[None, :])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "nearest", with_a_write_meanwhile)
    [found] = part.neighbours(_vec(0, 0), thresholds=[0.99], limit=3)
    assert calls == [3, 3]  # compared again, over the partition as it is now
    assert [r.id for r, _ in found] == ["m9"]
