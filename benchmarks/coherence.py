"""Store benchmark (issue 14): incremental writes, cold start, coherence through a server, bounded memory.

What is measured, as ratios within one run (SciFact sentences as memory text, the deterministic
384-d ``HashEmbedding`` so no model is measured; an embedded store on disk unless said otherwise):

* ``write``: a query right after a write (``store.add`` of one memory, then ``store.search``) vs a
  query without one, at 1k and 10k memories in ONE scope (p50 over ``--rounds`` pairs);
* ``cold``: the first query of a 10k-memory scope in a fresh process (open + first search), from
  the partition snapshot and with the snapshot deleted (read from Chroma), median of 3 processes;
* ``server``: query p50 through a ``chroma run`` server (the change-feed check on every query) vs
  the embedded store, same 10k memories over 100 users, interleaved;
* ``rss``: resident memory after one query in each of 100 scopes of a 100k-memory store, without
  and with a byte budget (``cache_bytes``), one fresh process each.

Run (repository root)::

    python benchmarks/coherence.py                       # everything (~10 min on 2 cores)
    python benchmarks/coherence.py --only write,cold     # parts
    RECALL_GATE_ROOT=/path/to/other/checkout python benchmarks/coherence.py --only write,cold   # a baseline

The script uses the public store API only, so it also runs against an older checkout for a baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CODE = Path(os.environ.get("RECALL_GATE_ROOT", HERE.parent))  # another checkout, for a baseline
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(CODE))

from _common import DEFAULT_DATA, machine, percentile  # noqa: E402
from scale import make_corpus, records_of, scope_of, sentence_pool  # noqa: E402

from shared_core.store import MemoryStore  # noqa: E402  (first: from CODE)
from shared_core.testing import HashEmbedding  # noqa: E402

DIM = 384


def load(store: MemoryStore, n: int, users: int, seed: int, pool: list[tuple[str, list[str]]]) -> Any:
    corpus = make_corpus(n, pool, users=users, seed=seed)
    recs = records_of(corpus)
    vectors = HashEmbedding(DIM).embed_documents(corpus.texts())
    for s in range(0, n, 2000):
        items = [{"cited": True, **r.model_dump(exclude_none=True)} for r in recs[s : s + 2000]]
        store.import_records(items, vectors=vectors[s : s + 2000], skip=("screens", "dedup", "supersede"))
    return corpus


def bench_write(
    pool: list[tuple[str, list[str]]], sizes: Sequence[int], rounds: int, root: Path
) -> list[str]:
    out = []
    for n in sizes:
        folder = root / f"write-{n}"
        store = MemoryStore(folder, embedding=HashEmbedding(DIM))
        corpus = load(store, n, 1, 11 + n, pool)
        scope = scope_of(corpus.users[0])
        extra = make_corpus(rounds + 5, pool, users=1, seed=999)
        asked = make_corpus(2 * rounds + 1, pool, users=1, seed=998)
        queries = [
            f"{t} {b[:40]}" for t, b in zip(asked.titles, asked.bodies, strict=True)
        ]  # each asked once
        store.search(queries[-1], scope=scope)
        plain, after, writes = [], [], []
        for j in range(rounds):
            t0 = time.perf_counter()
            store.search(queries[j], scope=scope)
            plain.append((time.perf_counter() - t0) * 1e3)
            cand = {"title": extra.titles[j], "body": extra.bodies[j] + f" (note {j})", "user_id": scope.user_id,
                    "agent_id": scope.agent_id, "memory_space_id": scope.memory_space_id,
                    "origin": "user_explicit", "cited": True}  # fmt: skip
            t0 = time.perf_counter()
            store.add([cand])
            writes.append((time.perf_counter() - t0) * 1e3)
            t0 = time.perf_counter()
            store.search(queries[rounds + j], scope=scope)
            after.append((time.perf_counter() - t0) * 1e3)
        store.close()
        p, a = percentile(plain, 50), percentile(after, 50)
        out.append(
            f"| {n:,} in one scope | {p:.2f} ms | {a:.2f} ms | {a / p:.2f}x | {percentile(writes, 50):.1f} ms |"
        )
        print(out[-1], flush=True)
    return out


COLD = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from shared_core.store import MemoryStore
from shared_core.testing import HashEmbedding
from shared_core.model import Scope
t1 = time.perf_counter()
s = MemoryStore({folder!r}, embedding=HashEmbedding({dim}), read_only=True)
t2 = time.perf_counter()
hits, _ = s.search({query!r}, scope=Scope(user_id={user!r}, agent_id="bench-agent", memory_space_id="bench-space"))
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "open": t2 - t1, "first": t3 - t2, "hits": len(hits)}}))
"""


def _cold_once(folder: Path, query: str, user: str) -> dict[str, float]:
    code = COLD.format(root=str(CODE), folder=str(folder), dim=DIM, query=query, user=user)
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    out: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def bench_cold(pool: list[tuple[str, list[str]]], n: int, root: Path) -> list[str]:
    folder = root / "cold"
    store = MemoryStore(folder, embedding=HashEmbedding(DIM))
    corpus = load(store, n, 1, 7, pool)
    store.search(corpus.titles[0], scope=scope_of(corpus.users[0]))  # loads, and saves a snapshot
    store.close()
    rows = []
    for label, drop in (("from the snapshot", False), ("snapshot deleted (from Chroma)", True)):
        runs = []
        for _ in range(3):
            if drop:
                shutil.rmtree(folder / "cache", ignore_errors=True)
            runs.append(_cold_once(folder, corpus.titles[1], corpus.users[0]))
        first = sorted(r["first"] for r in runs)[1] * 1e3
        opened = sorted(r["open"] for r in runs)[1] * 1e3
        rows.append(f"| {n:,} in one scope, {label} | open {opened:.0f} ms | first query {first:.0f} ms |")
        print(rows[-1], flush=True)
    return rows


def bench_server(pool: list[tuple[str, list[str]]], n: int, rounds: int, root: Path) -> list[str]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from test_server import _free_port, start_server, stop_server

    port = _free_port()
    proc = start_server(root / "server", port)
    try:
        remote = MemoryStore.http("127.0.0.1", port, embedding=HashEmbedding(DIM), collection_prefix="bench")
        local = MemoryStore(root / "embedded", embedding=HashEmbedding(DIM))
        corpus = load(remote, n, 100, 5, pool)
        load(local, n, 100, 5, pool)
        users = sorted(set(corpus.users))[:20]
        times: dict[str, list[float]] = {"server": [], "embedded": []}
        for j in range(rounds + len(users)):
            u, q = users[j % len(users)], corpus.titles[j % len(corpus.titles)]
            for name, st in (("server", remote), ("embedded", local))[:: 1 if j % 2 else -1]:
                t0 = time.perf_counter()
                st.search(q, scope=scope_of(u))
                if j >= len(users):  # the first pass loads the partitions
                    times[name].append((time.perf_counter() - t0) * 1e3)
        remote.close()
        local.close()
    finally:
        stop_server(proc)
    s, e = percentile(times["server"], 50), percentile(times["embedded"], 50)
    row = f"| {n:,} over 100 users | server {s:.2f} ms | embedded {e:.2f} ms | {s / e:.2f}x |"
    print(row, flush=True)
    return [row]


RSS = """
import json, sys
sys.path.insert(0, {root!r})
from shared_core.store import MemoryStore
from shared_core.testing import HashEmbedding
from shared_core.model import Scope
def rss(key="VmRSS"):
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith(key)) * 1024
kw = {{}} if {budget!r} is None else {{"cache_bytes": {budget!r}}}
s = MemoryStore({folder!r}, embedding=HashEmbedding({dim}), read_only=True, **kw)
base = rss()
for i in range(100):
    s.search("cell protein expression", scope=Scope(user_id=f"u{{i:03d}}", agent_id="bench-agent", memory_space_id="bench-space"))
held = getattr(getattr(s, "_backend", None), "cache", None)
print(json.dumps({{"base": base, "rss": rss(), "peak": rss("VmHWM"),
                  "held": held.cached_bytes() if held is not None else None,
                  "evictions": held.evictions if held is not None else None}}))
"""


def bench_rss(
    pool: list[tuple[str, list[str]]], n: int, budgets: Sequence[int | None], root: Path
) -> list[str]:
    folder = root / "rss"
    store = MemoryStore(folder, embedding=HashEmbedding(DIM))
    t0 = time.perf_counter()
    load(store, n, 100, 3, pool)
    for i in range(100):  # every partition loaded once (snapshots saved)
        store.search("cell", scope=scope_of(f"u{i:03d}"))
    store.close()
    print(f"(loaded {n:,} in {time.perf_counter() - t0:.0f} s)", flush=True)
    rows = []
    for budget in budgets:
        code = RSS.format(root=str(CODE), folder=str(folder), dim=DIM, budget=budget)
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-2000:])
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        label = "no budget" if budget is None else f"cache_bytes={budget >> 20} MiB"
        rows.append(
            f"| {n:,} over 100 users, {label} | RSS {r['rss'] >> 20} MiB (peak {r['peak'] >> 20}, after open "
            f"{r['base'] >> 20}) | partitions held {(r['held'] or 0) >> 20} MiB, evictions {r['evictions']} |"
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--only", default="write,cold,server,rss")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--rss-size", type=int, default=100_000)
    ap.add_argument("--budget-mib", type=int, default=32)
    ap.add_argument("--keep", type=Path, default=None, help="work folder to keep (default: a temporary one)")
    args = ap.parse_args(argv)
    parts = set(args.only.split(","))
    pool = sentence_pool(args.data)
    root = args.keep or Path(tempfile.mkdtemp(prefix="rg-coherence-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}\ncode: {CODE}\n")
    report: list[str] = []
    try:
        if "write" in parts:
            report += ["| memories | query without a write | query right after a write | ratio | the write |",
                       "| --- | ---: | ---: | ---: | ---: |"]  # fmt: skip
            report += bench_write(pool, (1_000, 10_000), args.rounds, root)
        if "cold" in parts:
            report += ["", "| cold start | open | first query |", "| --- | ---: | ---: |"]
            report += bench_cold(pool, 10_000, root)
        if "server" in parts:
            report += ["", "| query p50 | server | embedded | ratio |", "| --- | ---: | ---: | ---: |"]
            report += bench_server(pool, 10_000, args.rounds * 3, root)
        if "rss" in parts:
            report += ["", "| memory | RSS | held |", "| --- | --- | --- |"]
            report += bench_rss(pool, args.rss_size, (None, args.budget_mib << 20), root)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    print("\n" + "\n".join(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
