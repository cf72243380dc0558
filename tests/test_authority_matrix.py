"""The authority matrix (issue 13 item 9): one case table through every entry point (R1, R2, W3, L2).

``tests/cases/authority_matrix.json`` holds (caller scope x record claims x operation x
visibility) -> expected decision, for two write-path configurations ("agent" and "user"). Each entry
point gets a driver that performs the operation its own way; the expectations are the same.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from stores import make_store

from shared_core import MemoryStore, WritePath

TABLE = json.loads((Path(__file__).parent / "cases" / "authority_matrix.json").read_text(encoding="utf-8"))
CALLERS: dict[str, dict[str, str]] = TABLE["callers"]
PATHS = {
    "agent": lambda scope: WritePath.pinned(scope, name="agent", origin="agent_inferred"),
    "user": lambda scope: WritePath.pinned(
        scope, name="user", origin="user_explicit", allow_shared=True, cited=True
    ),
}


@dataclass
class Outcome:
    """What an entry point did: the write action and reasons, or the ids a query accepted."""

    action: str | None = None
    reasons: tuple[str, ...] = ()
    accepted: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


def seeded_store() -> MemoryStore:
    store = make_store()
    for row in TABLE["seed"]:
        owner = CALLERS[row["owner"]]
        item = {k: v for k, v in row.items() if k != "owner"}
        [d] = store.add([{**owner, **item, "origin": "user_explicit", "cited": True}])
        assert d.stored, d
    return store


# -- drivers: one per entry point ----------------------------------------------------------------


def store_write(store: MemoryStore, path: WritePath, record: dict[str, Any]) -> Outcome:
    [d] = store.add([record], path=path)
    return Outcome(action=d.action.value, reasons=tuple(r.value for r in d.reasons))


def store_recall(store: MemoryStore, scope: dict[str, str], query: str) -> Outcome:
    return Outcome(accepted=tuple(store.query(query, scope=scope).accepted_ids))


def store_delete(store: MemoryStore, scope: dict[str, str], ids: list[str]) -> Outcome:
    before = store.all_ids(scope["memory_space_id"])
    store.delete(ids, memory_space_id=scope["memory_space_id"], scope=scope)
    return Outcome(deleted=tuple(sorted(before - store.all_ids(scope["memory_space_id"]))))


DRIVERS: dict[str, dict[str, Callable[..., Outcome]]] = {
    "store": {"write": store_write, "recall": store_recall, "delete": store_delete},
}


def params() -> list[Any]:
    out = []
    for entry in DRIVERS:
        for case in TABLE["cases"]:
            for path_name, expect in case["expect"].items():
                out.append(
                    pytest.param(entry, case, path_name, expect, id=f"{entry}-{path_name}-{case['id']}")
                )
    return out


@pytest.mark.parametrize(("entry", "case", "path_name", "expect"), params())
def test_authority_matrix(entry: str, case: dict[str, Any], path_name: str, expect: dict[str, Any]) -> None:
    """Each case decides the same at every entry point: owner and trust from the caller, never from the record."""
    drive = DRIVERS[entry]
    store = seeded_store()
    caller = CALLERS[case["caller"]]
    path = PATHS[path_name](caller)
    before = {r.id: r for r in store.get([row["id"] for row in TABLE["seed"]], memory_space_id="s1")}
    op = case["op"]
    if op in ("write", "write_then_recall_as"):
        got = drive["write"](store, path, case["record"])
        assert got.action == expect["action"], (got, expect)
        if "reason" in expect:
            assert expect["reason"] in got.reasons, (got, expect)
        if op == "write_then_recall_as":
            seen = drive["recall"](store, CALLERS[case["recall_as"]], case["query"])
            owned = {
                r.id
                for r in store.get(sorted(store.all_ids("s1")), memory_space_id="s1")
                if r.user_id == "alice"
            }
            if expect["recall"] == "accepted":
                assert set(seen.accepted) & owned, seen
            else:
                assert not set(seen.accepted) & owned, seen
        if "unchanged" in expect:
            [after] = store.get([expect["unchanged"]], memory_space_id="s1")
            old = before[expect["unchanged"]]
            assert (after.evidence_count, after.tier, after.body) == (old.evidence_count, old.tier, old.body)
    elif op == "delete":
        got = drive["delete"](store, caller, case["ids"])
        if expect["action"] == "deleted":
            assert set(got.deleted) == set(case["ids"]), got
        else:
            assert got.deleted == (), got
    elif op == "recall":
        got = drive["recall"](store, caller, case["query"])
        if expect["action"] == "accepted":
            assert case["target"] in got.accepted, got
        else:
            assert case["target"] not in got.accepted, got
    else:  # pragma: no cover - a typo in the table
        raise AssertionError(f"unknown op {op!r}")
    # Whatever the case did, the seeded memories of others are untouched unless the case deleted its own.
    for mid, old in before.items():
        found = store.get([mid], memory_space_id="s1")
        if op == "delete" and expect["action"] == "deleted" and mid in case["ids"]:
            assert found == []
        else:
            assert found and (found[0].body, found[0].superseded_by, found[0].user_id) == (
                old.body,
                None,
                old.user_id,
            )
