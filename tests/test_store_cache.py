"""The partition cache (issue 14 items 4-5): byte budget with LRU eviction, and persisted snapshots for cold start.

Evicted partitions reload with the same answers and with changes made while they were out;
a snapshot is used only when it matches (embedding, tokenizer, collection), and a stale one
catches up with the change feed, so a snapshot is never served stale.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import chromadb
import pytest
from invariants import assert_indexes_agree
from stores import SCOPE, make_store, mem

import shared_core.store.cache as cache_module
import shared_core.store.snapshot as snapshot_module
from shared_core import InputError
from shared_core.store import MemoryStore

HERE = Path(__file__).parent
USERS = [f"u{i}" for i in range(5)]


def scope(user: str) -> dict[str, str]:
    return {**SCOPE, "user_id": user}


def fill(store: MemoryStore, n: int = 30) -> None:
    for u in USERS:
        store.add([mem(f"Fact {j} of {u}: bay {j} holds kites and herons.", user_id=u) for j in range(n)])


def answers(store: MemoryStore) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for u in USERS:
        hits, _ = store.search("bay kites herons", scope=scope(u))
        out[u] = [(h.record.id, round(h.fused_score or 0.0, 9)) for h in hits]
    return out


def test_byte_budget_evicts_least_recently_used_and_reloads_the_same() -> None:
    """With a budget below one user's partitions, queries evict and reload; answers equal the unbounded store's."""
    client = chromadb.EphemeralClient()
    free = make_store(client=client, collection_prefix="budget")
    fill(free)
    expected = answers(free)
    one = free._backend.cache.held("s1")
    per_partition = max(p.nbytes() for p in one.values())
    tight = make_store(client=client, collection_prefix="budget", cache_bytes=2 * per_partition)
    for _ in range(2):
        assert answers(tight) == expected
    assert tight._backend.cache.evictions >= len(USERS)
    assert tight._backend.cache.cached_bytes() <= 2 * per_partition
    # a change made while a partition was evicted is seen when it reloads
    free.add([mem("A new fact: bay 99 holds kites and herons.", user_id="u0")])
    assert "A new fact: bay 99 holds kites and herons." in {
        h.record.body for h in tight.search("bay kites herons", scope=scope("u0"))[0]
    }
    assert_indexes_agree(tight, "s1")


def test_budget_must_be_a_byte_count() -> None:
    """A negative or non-integer budget is an InputError naming the option."""
    for bad in (-1, 1.5, True):
        with pytest.raises(InputError, match="cache_bytes"):
            make_store(cache_bytes=bad)


def test_a_snapshot_serves_the_first_query_and_catches_up(tmp_path: Path) -> None:
    """Reopen: the partition comes from its snapshot, not from Chroma; writes made after it was saved are caught up."""
    folder = tmp_path / "store"
    with make_store(folder) as store:
        fill(store, 10)
        expected = answers(store)
    # A writer that changes the store and dies without saving snapshots (os._exit): they are stale now.
    code = f"""
        import os, sys; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store, mem, SCOPE
        s = make_store({str(folder)!r})
        s.search("bay", scope={{**SCOPE, "user_id": "u1"}})
        s.search("bay", scope={{**SCOPE, "user_id": "u2"}})
        s.add([mem("Late fact: bay 77 holds kites and herons.", user_id="u1"),
               mem("Late fact: bay 78 holds kites and herons.", user_id="u2")])
        s.delete([r.id for r in s.get(sorted(s.all_ids("s1")), memory_space_id="s1") if r.body.startswith("Fact 3 of u1")],
                 memory_space_id="s1")
        os._exit(0)
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loads: list[str] = []
    original = snapshot_module.load

    def spy(*args: object, **kwargs: object) -> object:
        got = original(*args, **kwargs)  # type: ignore[arg-type]
        loads.append("snapshot" if got is not None else "miss")
        return got

    with pytest.MonkeyPatch.context() as m:
        m.setattr(cache_module.snapshot, "load", spy)
        with make_store(folder) as store:
            got = answers(store)
            bodies_u1 = {h.record.body for h in store.search("bay kites herons", scope=scope("u1"))[0]}
            bodies_u2 = {h.record.body for h in store.search("bay kites herons", scope=scope("u2"))[0]}
            assert_indexes_agree(store, "s1")
    assert loads.count("snapshot") >= len(USERS) - 1, loads  # u1's was removed by the delete (erasure)
    assert {u: v for u, v in got.items() if u not in ("u1", "u2")} == {
        u: v for u, v in expected.items() if u not in ("u1", "u2")
    }
    assert "Late fact: bay 78 holds kites and herons." in bodies_u2  # caught up into u2's stale snapshot
    assert "Late fact: bay 77 holds kites and herons." in bodies_u1
    assert not any(b.startswith("Fact 3 of u1") for b in bodies_u1)


def test_a_snapshot_for_another_tokenizer_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When tokenisation changes (stemming, say) old snapshots are not used: the partition is read from Chroma."""
    folder = tmp_path / "store"
    with make_store(folder) as store:
        fill(store, 5)
    monkeypatch.setattr(snapshot_module, "tokenizer_fingerprint", lambda: "another-tokenizer")
    with make_store(folder) as store:
        key = next(iter(store._backend.partition_keys("s1")))
        assert snapshot_module.load(
            folder / "cache", key, dimension=256, engine="rank_bm25", embedding="hash-embedding-256",
            collection_id=str(store._backend.collection("s1", create=False).id),
        ) is None  # fmt: skip
        assert len(store.search("bay kites", scope=scope("u2"))[0]) == 5
