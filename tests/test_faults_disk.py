"""Disk full for real (issue 13/14): a store on a 6 MiB tmpfs fills up; every write then fails typed, never hangs.

chromadb 1.5.9 on a full disk first fails writes with an internal error, then blocks forever in its
Rust code holding the GIL (5/5 runs before the guard): the store's free-space guard refuses a
write before Chroma can get there. The writer runs in a subprocess with a timeout, so a hang fails
the test instead of freezing it. Needs a tmpfs mount (root in a container or VM); elsewhere it is
skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[-200:]}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_full_disk_gives_a_typed_error_every_time_and_never_hangs(tiny_disk: Path) -> None:
    """Fill a 6 MiB disk through store.add: writes succeed, then each fails with StoreError (no hang); freeing space heals."""
    code = f"""
        import json, os, sys, time; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store, mem, SCOPE
        from shared_core import StoreError
        folder = {str(tiny_disk / "store")!r}
        filler = {str(tiny_disk / "filler.bin")!r}
        s = make_store(folder)
        with open(filler, "wb") as f:
            f.write(b"0" * (1 << 20))
        ok, errors, streak, slowest = 0, [], 0, 0.0
        for i in range(3000):
            t = time.monotonic()
            try:
                s.add([mem(f"Memory {{i}}: " + "the kite shed log entry " * 60, source_record_id=f"s{{i}}")])
                ok += 1; streak = 0
            except StoreError as exc:
                errors.append(str(exc)); streak += 1
            except Exception as exc:
                errors.append("UNTYPED " + type(exc).__name__); streak += 1
            slowest = max(slowest, time.monotonic() - t)
            if streak >= 12:
                break
        still = s.search("kite shed", scope=SCOPE)[0]  # reads go on
        os.remove(filler)  # space comes back
        [after] = s.add([mem("After the disk was freed, a kite memory.")])
        s.close()
        print(json.dumps({{"ok": ok, "errors": errors[-12:], "n_errors": len(errors), "slowest": slowest,
                           "read": len(still), "after": after.action.value}}))
    """
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=HERE,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("a write on a full disk hung (no typed error within 300 s)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["ok"] > 5, out  # the disk held a few writes first
    assert out["n_errors"] >= 12 and all(
        e.startswith(("not enough free disk space", "Chroma failed")) for e in out["errors"]
    ), out
    assert any("free disk space" in e for e in out["errors"]), out  # the guard, not Chroma, said no
    assert out["slowest"] < 30, out
    assert out["read"] > 0 and out["after"] == "write", out
    check = f"""
        import sys, json; sys.path.insert(0, {str(HERE)!r})
        from stores import make_store
        with make_store({str(tiny_disk / "store")!r}, read_only=True) as s:
            print(json.dumps(s.all_ids("s1") == s.indexed_ids("s1")))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(check)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("true"), proc.stderr[-2000:]
