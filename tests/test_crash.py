"""Crash at any step of a write: after reopen each memory is fully present or fully absent (H2)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent

# Where the writer process dies: before Chroma sees the batch, after Chroma but before the BM25
# partition update, and in the middle of the BM25 update (after the first of two memories).
CRASH_POINTS = {
    "before_chroma_upsert": "shared_core.store.backend.chroma_call",
    "after_chroma_before_bm25": "shared_core.retrieval.partition.Partition.upsert",
    "during_bm25_update": "shared_core.retrieval.partition.tokenize",
}


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, cwd=HERE
    )


@pytest.mark.parametrize("point", list(CRASH_POINTS))
def test_crash_then_reopen_is_all_or_nothing(tmp_path: Path, point: str) -> None:
    """Kill the writer at a step; a fresh process sees Chroma == BM25 and whole memories only."""
    setup = run(
        f"""
        import sys; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store, mem
        with make_store({str(tmp_path)!r}) as s:
            s.add([mem("Existing memory about herons.")])
        """
    )
    assert setup.returncode == 0, setup.stderr[-2000:]
    target = CRASH_POINTS[point]
    module, _, attr = target.rpartition(".")
    crash = run(
        f"""
        import os, sys, importlib; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store, mem
        s = make_store({str(tmp_path)!r})
        s.search("warm up", scope={{"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}})
        mod_name, cls_name = {module!r}, None
        try:
            mod = importlib.import_module(mod_name)
            owner, name = mod, {attr!r}
        except ModuleNotFoundError:
            mod_name, cls_name = mod_name.rsplit(".", 1)
            owner, name = getattr(importlib.import_module(mod_name), cls_name), {attr!r}
        original = getattr(owner, name)
        calls = []
        def boom(*a, **k):
            calls.append(1)
            if {point!r} == "before_chroma_upsert" and a and a[0] != "upsert":
                return original(*a, **k)
            if {point!r} == "during_bm25_update" and len(calls) < 2:
                return original(*a, **k)
            os._exit(17)
        setattr(owner, name, boom)
        s.add([mem("New memory about kites one."), mem("New memory about kites two.")])
        print("no crash")
        """
    )
    assert crash.returncode == 17, (crash.stdout, crash.stderr[-2000:])
    check = run(
        f"""
        import sys, json; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store
        with make_store({str(tmp_path)!r}) as s:
            chroma = s.all_ids("s1"); bm25 = s.indexed_ids("s1")
            bodies = sorted(r.body for r in s.get(sorted(chroma), memory_space_id="s1"))
            hits = s.search("kites herons", scope={{"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}})[0]
            print(json.dumps({{"same": chroma == bm25, "bodies": bodies, "hits": len(hits)}}))
        """
    )
    assert check.returncode == 0, check.stderr[-2000:]
    import json

    state = json.loads(check.stdout)
    assert state["same"] is True
    assert state["bodies"] in (
        ["Existing memory about herons."],
        ["Existing memory about herons.", "New memory about kites one.", "New memory about kites two."],
    )
    assert state["hits"] == len(state["bodies"])
