"""Named invariants, reused by example tests, property tests and adapter tests (STYLE 6)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping

from shared_core import GateResult, MemoryRecord, Scope
from shared_core.audit import AuditRecord
from shared_core.store import MemoryStore

Event = tuple[float, str, str, str]
"""``(time.monotonic(), "write" | "merge" | "forget", memory id or "", source_record_id)``."""


def events_from_json(rows: Iterable[Iterable[object]]) -> list[Event]:
    """Events as a client process reported them in JSON (lists), typed again."""
    out: list[Event] = []
    for t, kind, mid, src in rows:
        out.append((float(str(t)), str(kind), str(mid), str(src)))
    return out


def lineage_alive(events: list[Event]) -> set[str]:
    """The memory ids alive after replaying writes, merges and forgets in time order (L2).

    A write (re)starts an id's lineage with its source, a merge adds its source to it, and a
    forget deletes every id whose lineage holds the forgotten source: the store deletes what a
    source wrote and what it merged into, and a deleted memory's links go with it (the same words
    written again later are a new memory of the new source alone). Writes and merges are timed at
    their start and forgets at their end, so a write that committed before a forget sorts before
    it; ``time.monotonic`` is one clock for every process of the machine (server mode).
    """
    lineage: dict[str, set[str]] = {}
    for _t, kind, mid, src in sorted(events, key=lambda e: (e[0], e[1] == "forget")):
        if kind == "write":
            lineage[mid] = {src}
        elif kind == "merge":
            lineage.setdefault(mid, set()).add(src)
        else:
            for gone in [m for m, sources in lineage.items() if src in sources]:
                del lineage[gone]
    return set(lineage)


def assert_partition(result: GateResult, input_count: int) -> None:
    """Accepted + rejected = the input, and no hit is both (R8)."""
    assert len(result.accepted) + len(result.rejected) == input_count
    assert result.audit.input_count == input_count
    accepted = [id(h) for h in result.accepted]
    assert len(set(accepted)) == len(accepted)
    rejected_hits = [id(r.hit) for r in result.rejected if r.hit is not None]
    assert not set(accepted) & set(rejected_hits)


def visible_to(record: MemoryRecord, scope: Scope) -> bool:
    """The oracle of R1/R2, written here independently of the gate's rule (so a bug there is caught).

    Same memory space, same route (none matches none), and either shared or owned by the scope's
    user *and* agent.
    """
    if record.memory_space_id != scope.memory_space_id:
        return False
    if (record.route_id or None) != (scope.route_id or None):
        return False
    if str(getattr(record.visibility, "value", record.visibility)) == "shared":
        return True
    return record.user_id == scope.user_id and record.agent_id == scope.agent_id


def assert_scope_safe(result: GateResult, scope: Scope) -> None:
    """Every accepted hit is visible to the scope (R1, R2), by the independent oracle."""
    for hit in result.accepted:
        assert visible_to(hit.record, scope), hit.record.id


def assert_finite_scores(result: GateResult) -> None:
    """Accepted hits carry only finite scores."""
    for hit in result.accepted:
        for value in (hit.score, hit.lexical_score):
            assert value is None or math.isfinite(value)


def assert_no_text(record: AuditRecord | str, texts: Iterable[str]) -> None:
    """No memory body or title appears in an audit record or an error message (R9)."""
    dumped = record if isinstance(record, str) else record.to_json()
    for text in texts:
        if text and len(text) >= 6:
            assert text not in dumped, "memory text leaked"


# -- store, audit and error invariants (issue 8: load, faults, hostile input) ---------------------


def assert_indexes_agree(
    store: MemoryStore, memory_space_id: str, expected: Iterable[str] | None = None
) -> None:
    """Ids in Chroma == ids in the BM25 partitions (== the model's ids, when given) (H2)."""
    chroma = store.all_ids(memory_space_id)
    bm25 = store.indexed_ids(memory_space_id)
    assert chroma == bm25, f"Chroma and BM25 disagree: {sorted(chroma ^ bm25)[:10]}"
    if expected is not None:
        want = set(expected)
        assert chroma == want, (
            f"store != model: missing {sorted(want - chroma)[:10]}, unexpected {sorted(chroma - want)[:10]}"
        )


def assert_partition_agrees(store: MemoryStore, key: tuple[str, str, str]) -> None:
    """One in-process partition holds exactly the ids Chroma holds for it (no refresh)."""
    state = store.index_state(key[0])
    loaded = state["loaded"].get(key)
    if loaded is None:  # not loaded yet: load it through a query-free path and compare
        store.indexed_ids(key[0])
        state = store.index_state(key[0])
        loaded = state["loaded"].get(key, set())
    assert loaded == state["chroma"].get(key, set()), f"partition {key} disagrees with Chroma"


def assert_no_duplicates(store: MemoryStore, memory_space_id: str) -> None:
    """No id twice in two partitions, and no two active memories with one text in one partition (W2)."""
    from shared_core.write import memory_id

    state = store.index_state(memory_space_id)
    for where in ("chroma", "loaded"):
        held = [i for ids in state[where].values() for i in ids]
        assert len(held) == len(set(held)), f"an id is in two partitions ({where})"
    ids = sorted(i for ids in state["chroma"].values() for i in ids)
    texts: dict[tuple[object, ...], str] = {}
    for rec in store.get(ids, memory_space_id=memory_space_id):
        if rec.superseded_by is not None:
            continue
        key = (rec.visibility, memory_id(rec.scope, rec.title, rec.body))
        assert key not in texts, f"{rec.id} and {texts[key]} hold the same text"
        texts[key] = rec.id


def assert_never_returned(result: GateResult, ids: Iterable[str] = (), texts: Iterable[str] = ()) -> None:
    """No accepted hit is one of ``ids`` (e.g. quarantined) or carries one of ``texts`` (W6)."""
    banned, bodies = set(ids), set(texts)
    for hit in result.accepted:
        assert hit.record.id not in banned, f"{hit.record.id} must never be recalled"
        assert hit.record.body not in bodies, f"{hit.record.id} carries a held text"


def assert_audit_complete(records: Iterable[AuditRecord], expected: Mapping[str, int]) -> None:
    """One audit record per operation: counts by event equal ``expected`` (R9)."""
    seen = Counter(r.event for r in records)
    assert dict(seen) == {k: v for k, v in expected.items() if v}, (
        f"audit {dict(seen)} != ops {dict(expected)}"
    )


def assert_typed_rejection(exc: BaseException, texts: Iterable[str] = ()) -> None:
    """An error from bad input is one of ours (RecallGateError) and quotes no memory text."""
    from shared_core import RecallGateError

    assert isinstance(exc, RecallGateError), f"untyped error {type(exc).__name__}"
    assert_no_text(str(exc), texts)
