"""Load (issue 8): concurrent mixed operations on one store keep Chroma, BM25, the model and the audit in step.

The driver is ``benchmarks/load.py`` (the full run: 8 threads embedded, and 4 processes x 4 threads
on a Chroma server with a client and the server killed mid-run); here it runs small. Kept regressions: the races it found between the write gate and forget/delete.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from invariants import assert_indexes_agree
from stores import SCOPE, make_store, mem

from shared_core.store import MemoryStore
from shared_core.write import WriteAction, WriteReason

ROOT = Path(__file__).resolve().parents[1]


def _load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "recall_gate_load_benchmark", ROOT / "benchmarks" / "load.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


load = _load_benchmark()
THREADS = int(os.environ.get("RECALL_GATE_LOAD_THREADS", "4"))
OPS = int(os.environ.get("RECALL_GATE_LOAD_OPS", "25"))
SECONDS = float(os.environ.get("RECALL_GATE_LOAD_SECONDS", "14"))


def test_mixed_load_on_an_embedded_store(tmp_path: Path) -> None:
    """4 threads x 25 mixed ops: Chroma == BM25 == model, no duplicates, no leak, one audit line per op."""
    summary = load.run_embedded(threads=THREADS, ops=OPS, seed=11, embedding="hash", path=tmp_path / "store")
    assert summary["violations"] == []
    assert summary["ops"] == THREADS * OPS
    assert set(summary["latency_ms"]) >= {"query", "write"}


@pytest.mark.server
def test_mixed_load_through_a_server_with_a_killed_client_and_a_killed_server(tmp_path: Path) -> None:
    """2 processes x 2 threads sharing users on `chroma run`, a client and the server killed: 0 violations."""
    summary = load.run_server(procs=2, threads=2, seconds=SECONDS, seed=5, folder=tmp_path)
    assert summary["violations"] == []
    assert summary["ops"] > 0 and summary["outcomes"].get("ops:query", 0) > 0
    assert [e.split(" (")[0].split(" at ")[0] for e in summary["events"]] == [
        "victim client killed",
        "server killed",
        "server restarted",
    ]


def _pause_commit_of(store: MemoryStore, thread_name: str) -> tuple[threading.Event, threading.Event]:
    """Make the store's commit stop in thread ``thread_name`` until released; returns (reached, release)."""
    reached, release = threading.Event(), threading.Event()
    target = store.writer.target
    original = target.commit

    def paused(*args: Any, **kwargs: Any) -> None:
        if threading.current_thread().name == thread_name and not reached.is_set():
            reached.set()
            release.wait(10)
        original(*args, **kwargs)

    target.commit = paused  # type: ignore[method-assign]
    return reached, release


@pytest.mark.parametrize("operation", ["forget", "delete"])
def test_regression_forget_or_delete_cannot_slip_into_a_write(tmp_path: Path, operation: str) -> None:
    """A forget/delete started while a correction is committing waits for it, so nothing is revived.

    Found by the load benchmark: forget() ran outside the write gate's lock, deleted a memory a
    correction had just read, and the correction then wrote it back (with its source tombstoned).
    """
    store = make_store(tmp_path)
    [old] = store.add([mem("The standup moves to Monday.", source_record_id="src-1")])
    assert old.id is not None
    reached, release = _pause_commit_of(store, "corrector")
    corrector = threading.Thread(
        target=lambda: store.correct(old.id, memory_space_id="s1", body="The standup moves to Tuesday."),
        name="corrector",
    )
    corrector.start()
    assert reached.wait(10)
    if operation == "forget":
        other = threading.Thread(target=lambda: store.forget("src-1"))
    else:
        other = threading.Thread(target=lambda: store.delete([old.id], memory_space_id="s1"))  # type: ignore[list-item]
    other.start()
    other.join(0.5)
    assert other.is_alive(), f"{operation} did not wait for the write in flight"
    release.set()
    corrector.join(10)
    other.join(10)
    assert old.id not in store.all_ids("s1")
    if operation == "forget":
        assert store.all_ids("s1") == set()
    assert_indexes_agree(store, "s1")
    store.close()


@pytest.mark.parametrize("source", ["src-late", None])
def test_regression_a_retried_write_settles_what_its_first_attempt_left(source: str | None) -> None:
    """A write whose commit landed but whose settle step never ran leaves nothing a forget removed (L2).

    Found by the server load run: client A checked the tombstones, client B forgot the source
    (nothing to delete yet), A's commit landed, and the server died before A's post-commit
    check. A's retry was refused as ``tombstoned`` and the memory of a forgotten source stayed
    on the server. With no source: A writes the same words again (a merge, committed) while B
    deletes the memory's id. Here the two clients share one Chroma, and the server "dies" right
    after A's commit.
    """
    import chromadb

    from shared_core import StoreUnavailableError

    client = chromadb.EphemeralClient()  # process-wide: own prefix
    a = make_store(client=client, collection_prefix=f"late-{source}")
    b = make_store(client=client, collection_prefix=f"late-{source}")
    text = "The kiln in room 4 is unloaded on Fridays."
    item = mem(text, **({"source_record_id": source} if source else {}))
    [seen] = a.add([item], dry_run=True)
    assert seen.id is not None
    b.add([mem("The lab door code changes every Monday.")])  # b has the space's collection
    if not source:
        a.add([item])  # what B deletes while A writes it again
    target = a.writer.target
    original = target.commit

    def commit_then_die(*args, **kwargs):  # type: ignore[no-untyped-def]
        if args[0]:  # a write (forgets and deletes commit no records)
            if source:
                b.forget(source)  # after A's tombstone check: nothing to delete yet
            else:
                b.delete([seen.id], memory_space_id="s1")  # type: ignore[list-item]
            original(*args, **kwargs)
            target.commit = original  # type: ignore[method-assign]
            raise StoreUnavailableError("the Chroma server went away after the commit")
        original(*args, **kwargs)

    target.commit = commit_then_die  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError):
        a.add([item])
    assert seen.id in a.all_ids("s1")  # the first attempt landed: what the retry must settle
    [retry] = a.add([item])
    assert retry.action is WriteAction.REJECT and WriteReason.TOMBSTONED in retry.reasons
    for store in (a, b):
        assert seen.id not in store.all_ids("s1")
        assert text not in {h.record.body for h in store.search("kiln room Fridays", scope=SCOPE)[0]}
        assert_indexes_agree(store, "s1")
    a.close()
    b.close()


def _two_clients(prefix: str) -> tuple[MemoryStore, MemoryStore]:
    import chromadb

    client = chromadb.EphemeralClient()  # process-wide: own prefix
    return make_store(client=client, collection_prefix=prefix), make_store(client=client, collection_prefix=prefix)


def test_regression_a_write_a_forget_undid_is_not_reported_written() -> None:
    """A write whose source another client forgot while it committed is reported ``tombstoned``, not written (L2).

    The settle step after the commit forgets the source once more, so the memory is gone; the decision
    used to say ``write`` all the same, and a caller (the server load run's model) counted it.
    """
    a, b = _two_clients("undone")
    b.add([mem("The lab door code changes every Monday.")])
    target = a.writer.target
    original = target.commit

    def forget_then_commit(*args, **kwargs):  # type: ignore[no-untyped-def]
        if args[0]:
            b.forget("src-undone")  # after A's tombstone check: nothing to delete yet
        original(*args, **kwargs)

    target.commit = forget_then_commit  # type: ignore[method-assign]
    [d] = a.add([mem("The kiln in room 4 is unloaded on Fridays.", source_record_id="src-undone")])
    target.commit = original  # type: ignore[method-assign]
    assert d.action is WriteAction.REJECT and WriteReason.TOMBSTONED in d.reasons and not d.stored
    assert d.record is None and any(x.startswith("source_record_id: ") for x in d.detail)
    for store in (a, b):
        assert store.all_ids("s1") == b.all_ids("s1") and len(store.all_ids("s1")) == 1
    a.close()
    b.close()


def test_regression_a_correction_whose_settle_failed_is_settled_by_the_next_write_call() -> None:
    """A correction committed as its source was forgotten, with the server gone before the settle: the next call settles (L2).

    Found by the server load run (a memory of a forgotten source left on the server): client A read the
    memory to correct, client B forgot its source, A's correction landed, and the server died before
    A's settle could forget the source again. A's retried correction then failed with "no memory" and
    nothing settled. Now the failed settle is kept and run before A's next write-side call.
    """
    from shared_core import InputError, StoreUnavailableError

    a, b = _two_clients("unsettled")
    [old] = a.add([mem("The standup moves to Monday.", source_record_id="src-standup")])
    assert old.id is not None
    target = a.writer.target
    original = target.commit
    ledger = a.writer.ledger  # the settle's first read: where the outage hits
    read = ledger.tombstoned_among

    def forget_then_commit(*args, **kwargs):  # type: ignore[no-untyped-def]
        if args[0]:
            b.forget("src-standup")
            target.commit = original  # type: ignore[method-assign]

            def gone(*a_: object, **k_: object) -> object:
                ledger.tombstoned_among = read  # type: ignore[method-assign]
                raise StoreUnavailableError("the Chroma server went away after the commit")

            ledger.tombstoned_among = gone  # type: ignore[method-assign]
        original(*args, **kwargs)

    target.commit = forget_then_commit  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError):
        a.correct(old.id, memory_space_id="s1", body="The standup moves to Tuesday.")
    assert a.all_ids("s1")  # the correction (and the old memory it re-wrote) landed: what is left to settle
    with pytest.raises(InputError):  # the retry: the memory is gone (and before it, the settle ran)
        a.correct(old.id, memory_space_id="s1", body="The standup moves to Tuesday.")
    for store in (a, b):
        assert store.all_ids("s1") == set()
        assert_indexes_agree(store, "s1")
    a.close()
    b.close()


def test_a_client_that_died_before_its_settle_is_settled_by_the_next_client_to_open() -> None:
    """A write racing a forget whose process died before its settle: the next client to open forgets again (L2).

    The pending settle of :class:`LateWrites` lives in the process that wrote; when that process is
    gone, recall stays safe (the tombstone drops the hit) but the memory's text stayed in Chroma
    until the source was forgotten again by hand. A store opened for writing on a shared Chroma now
    looks for what forgotten sources still hold and forgets it again, audited.
    """
    import chromadb

    from shared_core import StoreUnavailableError

    a, b = _two_clients("died")
    text = "The gate code for the loading dock is rotated on the first of the month."
    target = a.writer.target
    original = target.commit
    ledger = a.writer.ledger
    read = ledger.tombstoned_among

    def forget_then_commit(*args, **kwargs):  # type: ignore[no-untyped-def]
        if args[0]:
            b.forget("src-dock")  # after A's tombstone check: nothing to delete yet
            target.commit = original  # type: ignore[method-assign]

            def died(*a_: object, **k_: object) -> object:
                raise StoreUnavailableError("the process died after its commit")

            ledger.tombstoned_among = died  # type: ignore[method-assign]
        original(*args, **kwargs)

    target.commit = forget_then_commit  # type: ignore[method-assign]
    with pytest.raises(StoreUnavailableError):
        a.add([mem(text, source_record_id="src-dock")])
    ledger.tombstoned_among = read  # type: ignore[method-assign]
    # A never calls again: the memory of the forgotten source is in Chroma, and recall drops it
    assert len(b.all_ids("s1")) == 1
    assert text not in {h.record.body for h in b.search("loading dock gate code", scope=SCOPE)[0]}
    events: list[Any] = []
    c = make_store(client=chromadb.EphemeralClient(), collection_prefix="died", sinks=[events.append])
    for store in (b, c):
        assert store.all_ids("s1") == set()
        assert_indexes_agree(store, "s1")
    forgets = [e for e in events if e.event == "delete" and e.extra.get("source_record_id") == "src-dock"]
    assert len(forgets) == 1 and forgets[0].counts["memories"] == 1
    assert all(text not in repr(e) for e in events)
    clean = make_store(client=chromadb.EphemeralClient(), collection_prefix="died", sinks=[events.append])
    assert len(events) == len(forgets)  # nothing left: the next open forgets nothing
    for store in (a, b, c, clean):
        store.close()


def test_a_hold_that_raced_a_forget_is_released_by_the_next_client_to_open() -> None:
    """A candidate held for review as its source was forgotten, by a client that then died: released at the next open (L2)."""
    import chromadb

    a, b = _two_clients("held")
    ledger = a.writer.ledger
    original = ledger.hold

    def forget_then_hold(entries):  # type: ignore[no-untyped-def]
        b.forget("src-held")  # after A's tombstone check
        original(entries)

    ledger.hold = forget_then_hold  # type: ignore[method-assign]
    [d] = a.add([mem("Invoices from the print shop go to the second inbox.", source_record_id="src-held", origin="external_unverified", cited=False)])
    ledger.hold = original  # type: ignore[method-assign]
    assert d.action is WriteAction.QUARANTINE
    assert [q["id"] for q in b.quarantine_list(memory_space_id="s1")] == [d.id]
    c = make_store(client=chromadb.EphemeralClient(), collection_prefix="held")
    for store in (b, c):
        assert store.quarantine_list(memory_space_id="s1") == []
    for store in (a, b, c):
        store.close()


def test_a_refused_rewrite_leaves_a_live_sources_memory_under_that_id_alone() -> None:
    """A candidate with no source refused as ``tombstoned`` does not delete a memory of a live source that has its id."""
    store = make_store()
    [first] = store.add([mem("The heron survey starts at dawn.")])
    assert first.id is not None
    store.delete([first.id], memory_space_id="s1")
    [again] = store.add([mem("The heron survey starts at dawn.", source_record_id="survey-notes")])
    assert again.stored and again.id == first.id  # the same words from a live source: a new memory
    [refused] = store.add([mem("The heron survey starts at dawn.")])
    assert WriteReason.TOMBSTONED in refused.reasons
    assert first.id in store.all_ids("s1")
    store.close()


def test_regression_one_write_gate_per_store_under_a_race() -> None:
    """Threads that touch store.writer first at the same moment share one write gate (one lock)."""
    store = make_store()
    barrier = threading.Barrier(8)
    seen: list[object] = []

    def touch() -> None:
        barrier.wait()
        seen.append(store.writer)

    threads = [threading.Thread(target=touch) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(w) for w in seen}) == 1
    assert store.query("standup", scope=SCOPE).accepted == ()


def test_regression_shared_then_private_copy_of_one_text_stays_one_memory() -> None:
    """The same text written shared, then private, by one owner merges: it no longer moves the memory.

    Found by the load benchmark: both copies get one deterministic id but live in different
    partitions, so the second upsert silently moved the shared memory into the private partition
    and replaced its source (a later forget of the first source then missed it).
    """
    store = make_store()
    [shared] = store.add(
        [mem("Kites are stored in shed four.", visibility="shared", source_record_id="src-1")]
    )
    [private] = store.add([mem("Kites are stored in shed four.", source_record_id="src-2")])
    assert private.action.value == "merge" and private.id == shared.id
    [rec] = store.get([shared.id or ""], memory_space_id="s1")
    assert rec.visibility.value == "shared" and rec.source_record_id == "src-1" and rec.evidence_count == 2
    assert store.forget("src-1")["memories"] == 1
    assert_indexes_agree(store, "s1", set())


def test_regression_same_memory_twice_in_one_batch() -> None:
    """Shrunk by the write-side state machine: one batch naming the same new memory twice writes it once."""
    store = make_store()
    decisions = store.add([mem("Herons fish at dawn.", source_record_id="msg-1")] * 2)
    assert [d.action.value for d in decisions] == ["write", "merge"]
    assert_indexes_agree(store, "s1", {decisions[0].id or ""})


def test_an_embedded_store_takes_chroma_calls_one_at_a_time() -> None:
    """Chroma's embedded bindings can deadlock a releasing read against a GIL-holding write under
    threads (the mixed load above hung on it once): opening an embedded store serialises Chroma calls."""
    import chromadb

    from shared_core.store import chroma as chroma_mod

    store = MemoryStore.in_memory()
    try:
        assert chroma_mod.is_embedded_client(chromadb.EphemeralClient())
        assert chroma_mod._serialize_calls
    finally:
        store.close()
