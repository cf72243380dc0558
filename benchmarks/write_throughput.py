"""Gated write throughput against a raw Chroma upsert of the same texts and vectors (issue 15 item 5).

Both sides write the same memories (SciFact abstract openings, ~300 characters, one user's scope)
with the same precomputed unit vectors into a fresh persistent folder: the raw side calls
``collection.upsert(ids, embeddings, documents, metadatas)`` with the metadata the store would
write; the gated side calls ``MemoryStore.add`` (every step: authority, contract, secret/PII/
injection screens, tombstones, trust, ids, dedup against the partition, supersede, commit to
Chroma and the in-process indexes, audit). Embedding is excluded on both sides: the store's
embedding looks the precomputed vector up by text. Sizes: batches of 100, and one memory per call.
A third row writes the batches through ``MemoryStore.import_records(skip=["screens"])`` (the bulk
import that opts out of the secret / PII / injection screens and says so in its audit record): the
rest of the gate on its own, so the table shows what the screens cost and what is left without them.

``--base N`` first fills both sides with N other memories (later 300-character pieces of the
same abstracts, not timed; the gated side through ``import_records``), so the rows show what a
write costs in a store that already holds N: the gate's dedup search and indexes grow with the
partition, and so does Chroma's index.

    python benchmarks/write_throughput.py              # 2,000 memories, batches of 100 and single writes
    python benchmarks/write_throughput.py --n 1000 --single 200
    python benchmarks/write_throughput.py --n 1000 --single 100 --rounds 1 --base 15000
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared_core import GateConfig, MemoryCandidate, MemoryStore, WritePolicy  # noqa: E402
from shared_core.model import encode_record  # noqa: E402
from shared_core.store.chroma import collection_name  # noqa: E402
from shared_core.text import stem  # noqa: E402
from shared_core.write import build_record  # noqa: E402
from shared_core.write.candidate import memory_id  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "scifact" / "corpus.jsonl"
SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "bench"}
DIM = 384


class LookupEmbedding:
    """Precomputed vectors by exact text: the store's embedding costs a dict lookup."""

    name = "lookup-384"
    dimension = DIM

    def __init__(self, vectors: dict[str, NDArray[np.float32]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self.vectors[text]


def memories(n: int) -> list[dict[str, Any]]:
    out = []
    with DATA.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = " ".join(str(doc.get("text", "")).split())[:300]
            if len(text) < 80:
                continue
            out.append({**SCOPE, "title": "", "body": text, "origin": "user_explicit", "source_record_id": f"doc-{doc['_id']}"})
            if len(out) == n:
                break
    return out


def base_memories(n: int) -> list[dict[str, Any]]:
    """``n`` memories the timed ones never hold: the abstracts' later 300-character pieces."""
    out: list[dict[str, Any]] = []
    with DATA.open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            text = " ".join(str(doc.get("text", "")).split())
            for at in range(300, len(text) - 80, 300):
                body = text[at : at + 300]
                out.append({**SCOPE, "title": "", "body": body, "origin": "user_explicit", "source_record_id": f"base-{doc['_id']}-{at}"})
                if len(out) == n:
                    return out
    if len(out) < n:
        raise SystemExit(f"--base {n}: the corpus has only {len(out)} later pieces")
    return out


def unit_vectors(n: int, seed: int = 7) -> NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


Base = tuple[list[dict[str, Any]], NDArray[np.float32]]
"""Memories (and their vectors) a run's store holds before the timed writes."""

NO_BASE: Base = ([], np.zeros((0, DIM), dtype=np.float32))


def raw_chroma(
    items: list[dict[str, Any]], vectors: NDArray[np.float32], batch: int, folder: Path, base: Base = NO_BASE
) -> float:
    """Memories per second of a raw upsert with the store's own metadata encoding."""
    import chromadb

    client = chromadb.PersistentClient(path=str(folder))
    col = client.get_or_create_collection(
        collection_name("raw", SCOPE["memory_space_id"]), metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    now = datetime.now(timezone.utc)
    base_items, base_vectors = base
    for start in range(0, len(base_items), 1000):  # the store's starting content, not timed
        recs = [build_record(MemoryCandidate.model_validate(it), policy=WritePolicy(), now=now) for it in base_items[start : start + 1000]]
        enc = [encode_record(r) for r in recs]
        col.upsert(
            ids=[r.id for r in recs],
            embeddings=base_vectors[start : start + 1000],
            documents=[d for d, _ in enc],
            metadatas=[m for _, m in enc],
        )
    records = [build_record(MemoryCandidate.model_validate(it), policy=WritePolicy(), now=now) for it in items]
    encoded = [encode_record(r) for r in records]
    t0 = time.perf_counter()
    for start in range(0, len(records), batch):
        part = slice(start, start + batch)
        col.upsert(
            ids=[r.id for r in records[part]],
            embeddings=vectors[part],
            documents=[d for d, _ in encoded[part]],
            metadatas=[m for _, m in encoded[part]],
        )
    return len(records) / (time.perf_counter() - t0)


def gated(
    items: list[dict[str, Any]],
    vectors: NDArray[np.float32],
    batch: int,
    folder: Path,
    skip: Sequence[str] = (),
    base: Base = NO_BASE,
) -> tuple[float, dict[str, int]]:
    """Memories per second through ``MemoryStore.add`` (embedding excluded), and the actions taken;
    with ``skip``, through ``import_records`` with those steps left out."""
    lookup = LookupEmbedding({it["body"]: v for it, v in zip(items, vectors, strict=True)})
    store = MemoryStore(folder, embedding=lookup, config=GateConfig(min_score=0.5))
    base_items, base_vectors = base
    for start in range(0, len(base_items), 1000):  # the store's starting content, not timed
        store.import_records(base_items[start : start + 1000], vectors=base_vectors[start : start + 1000], skip=["screens"])
    stem.cache_clear()  # no round starts with the words or ids of an earlier one cached
    memory_id.cache_clear()
    actions: dict[str, int] = {}
    t0 = time.perf_counter()
    for start in range(0, len(items), batch):
        part = items[start : start + batch]
        decisions = (
            store.import_records(part, vectors=vectors[start : start + batch], skip=skip) if skip else store.add(part)
        )
        for d in decisions:
            actions[d.action.value] = actions.get(d.action.value, 0) + 1
    rate = len(items) / (time.perf_counter() - t0)
    store.close()
    return rate, actions


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000, help="memories per batched run")
    parser.add_argument("--single", type=int, default=300, help="memories written one per call")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="alternating raw/gated runs; medians are printed")
    parser.add_argument("--base", type=int, default=0, help="memories both stores hold before the timed writes")
    args = parser.parse_args(argv)
    items = memories(args.n)
    vectors = unit_vectors(len(items))
    base: Base = (base_memories(args.base), unit_vectors(args.base, seed=11)) if args.base else NO_BASE
    rows = []
    # What a process loads once (the screens' models, each rule's guard, the semantic encoder that
    # a text with the right cues wakes) is loaded before any timing, by writes of other texts of the
    # same kind: a first round that pays it measured the start-up, not the gate.
    warm_items = base_memories(args.base + 500)[args.base :]
    warm_vectors = unit_vectors(len(warm_items), seed=13)
    warm = MemoryStore.in_memory(embedding=LookupEmbedding({it["body"]: v for it, v in zip(warm_items, warm_vectors, strict=True)}))
    for start in range(0, len(warm_items), 100):
        warm.add(warm_items[start : start + 100])
    warm.close()
    runs: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
        (f"batches of {args.batch}", args.batch, len(items), ()),
        ("one per call", 1, args.single, ()),
        (f"batches of {args.batch}, screens skipped (import_records)", args.batch, len(items), ("screens",)),
    )
    for label, batch, count, skip in runs:
        part, vecs = items[:count], vectors[:count]
        raws, rates, ratios = [], [], []
        for _ in range(args.rounds):  # raw and gated alternate, so load on the machine hits both
            tmp = Path(tempfile.mkdtemp(prefix="rg-write-"))
            try:
                raw = raw_chroma(part, vecs, batch, tmp / "raw", base)
                rate, actions = gated(part, vecs, batch, tmp / "gated", skip, base)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            raws.append(raw)
            rates.append(rate)
            ratios.append(rate / raw)
        rows.append((label, count, median(rates), median(raws), median(ratios), actions))
    held = f"; both stores held {args.base:,} other memories first" if args.base else ""
    print(f"medians of {args.rounds} alternating rounds; ratio = median of per-round gated/raw{held}")
    print("| writes | memories | gated /s | raw Chroma upsert /s | ratio | actions |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, count, rate, raw, ratio, actions in rows:
        print(f"| {label} | {count} | {rate:,.0f} | {raw:,.0f} | {ratio:.2f}x | {actions} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
