"""The authority matrix (issue 13 item 9): one case table through every entry point (R1, R2, W3, L2).

``tests/cases/authority_matrix.json`` holds (caller scope x record claims x operation x
visibility) -> expected decision, for two write-path configurations ("agent" and "user"). Each entry
point gets a driver that performs the operation its own way; the expectations are the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from authority_drivers import ENTRIES, Entry, exception_for

TABLE = json.loads((Path(__file__).parent / "cases" / "authority_matrix.json").read_text(encoding="utf-8"))
CALLERS: dict[str, dict[str, str]] = TABLE["callers"]
SEED = [{**CALLERS[row["owner"]], **{k: v for k, v in row.items() if k != "owner"}} for row in TABLE["seed"]]
SEED_IDS = [row["id"] for row in SEED]


def params() -> list[Any]:
    """Every (entry point, case, path); documented differences assert what the entry point does instead."""
    out = []
    for entry in ENTRIES:
        for case in TABLE["cases"]:
            for path_name, expect in case["expect"].items():
                pid = f"{entry}-{path_name}-{case['id']}"
                diff = exception_for(entry, case["id"], path_name)
                if diff is None:
                    out.append(pytest.param(entry, case, path_name, expect, id=pid))
                elif diff.expect is None:
                    continue  # not expressible there: see test_inexpressible_pairs_are_really_so
                else:
                    out.append(pytest.param(entry, case, path_name, diff.expect, id=f"{pid}-mapped"))
    return out


@pytest.fixture
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Entry:
    """The entry point of the test, seeded with the table's memories."""
    entry = ENTRIES[request.node.callspec.params["entry"]](tmp_path)
    entry.seed(SEED)
    return entry


def _check_recall(views: dict[str, tuple[str, ...]], wanted: set[str], accepted: bool) -> None:
    assert views, "a driver's recall must return at least one view"
    for name, ids in views.items():
        if accepted:
            assert set(ids) & wanted, (name, views, wanted)
        else:
            assert not set(ids) & wanted, (name, views, wanted)


@pytest.mark.parametrize(("entry", "case", "path_name", "expect"), params())
def test_authority_matrix(
    world: Entry, entry: str, case: dict[str, Any], path_name: str, expect: dict[str, Any]
) -> None:
    """Each case decides the same at every entry point: owner and trust from the caller, never from the record."""
    caller = CALLERS[case["caller"]]
    before = world.records(SEED_IDS)
    assert set(before) == set(SEED_IDS)
    op = case["op"]
    if op in ("write", "write_then_recall_as"):
        got = world.write(path_name, caller, case["record"])
        assert got.action == expect["action"], (got, expect)
        if "reason" in expect:
            assert expect["reason"] in got.reasons, (got, expect)
        if op == "write_then_recall_as":
            views = world.recall(CALLERS[case["recall_as"]], case["query"])
            stored = world.records(sorted(world.all_ids()))
            owned = {mid for mid, r in stored.items() if r.user_id == caller["user_id"]}
            _check_recall(views, owned, expect["recall"] == "accepted")
        if "unchanged" in expect:
            after = world.records([expect["unchanged"]])[expect["unchanged"]]
            old = before[expect["unchanged"]]
            assert (after.evidence_count, after.tier, after.body) == (old.evidence_count, old.tier, old.body)
    elif op == "delete":
        got = world.delete(path_name, caller, case["ids"])
        if expect["action"] == "deleted":
            assert set(got.deleted) == set(case["ids"]), got
        else:
            assert got.deleted == (), got
    elif op == "recall":
        views = world.recall(caller, case["query"])
        _check_recall(views, {case["target"]}, expect["action"] == "accepted")
    else:  # pragma: no cover - a typo in the table
        raise AssertionError(f"unknown op {op!r}")
    # Whatever the case did, the seeded memories of others are untouched unless the case deleted its own.
    after_all = world.records(SEED_IDS)
    for mid, old in before.items():
        if op == "delete" and expect["action"] == "deleted" and mid in case["ids"]:
            assert mid not in after_all
        else:
            found = after_all.get(mid)
            assert found is not None and (found.body, found.superseded_by, found.user_id) == (
                old.body,
                None,
                old.user_id,
            )


def test_inexpressible_pairs_are_really_so(capsys: pytest.CaptureFixture[str]) -> None:
    """The pairs left out of the matrix are the CLI's deletes, and the CLI really has no caller-scoped delete."""
    import io

    from shared_core.apps.cli import main as cli_main

    left_out = sorted(
        (entry, case["id"], path_name)
        for entry in ENTRIES
        for case in TABLE["cases"]
        for path_name in case["expect"]
        if (diff := exception_for(entry, case["id"], path_name)) is not None and diff.expect is None
    )
    assert left_out and {entry for entry, _, _ in left_out} == {"cli"}
    assert all(TABLE_OPS[case_id] == "delete" for _, case_id, _ in left_out), left_out
    for name in ("delete", "remove"):
        with pytest.raises(SystemExit) as stop:
            cli_main([name, "--help"], out=io.StringIO())
        assert stop.value.code == 2 and "invalid choice" in capsys.readouterr().err


TABLE_OPS = {case["id"]: case["op"] for case in TABLE["cases"]}
