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

    python benchmarks/write_throughput.py              # 2,000 memories, batches of 100 and single writes
    python benchmarks/write_throughput.py --n 1000 --single 200
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


def unit_vectors(n: int, seed: int = 7) -> NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def raw_chroma(items: list[dict[str, Any]], vectors: NDArray[np.float32], batch: int, folder: Path) -> float:
    """Memories per second of a raw upsert with the store's own metadata encoding."""
    import chromadb

    client = chromadb.PersistentClient(path=str(folder))
    col = client.get_or_create_collection(
        collection_name("raw", SCOPE["memory_space_id"]), metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    now = datetime.now(timezone.utc)
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
    items: list[dict[str, Any]], vectors: NDArray[np.float32], batch: int, folder: Path, skip: Sequence[str] = ()
) -> tuple[float, dict[str, int]]:
    """Memories per second through ``MemoryStore.add`` (embedding excluded), and the actions taken;
    with ``skip``, through ``import_records`` with those steps left out."""
    lookup = LookupEmbedding({it["body"]: v for it, v in zip(items, vectors, strict=True)})
    stem.cache_clear()  # no round starts with the words or ids of an earlier one cached
    memory_id.cache_clear()
    store = MemoryStore(folder, embedding=lookup, config=GateConfig(min_score=0.5))
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
    args = parser.parse_args(argv)
    items = memories(args.n)
    vectors = unit_vectors(len(items))
    rows = []
    warm = MemoryStore.in_memory(embedding=LookupEmbedding({"warm up": vectors[0]}))
    warm.add([{**SCOPE, "body": "warm up", "origin": "user_explicit"}])  # loads the screens' models once
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
                raw = raw_chroma(part, vecs, batch, tmp / "raw")
                rate, actions = gated(part, vecs, batch, tmp / "gated", skip)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            raws.append(raw)
            rates.append(rate)
            ratios.append(rate / raw)
        rows.append((label, count, median(rates), median(raws), median(ratios), actions))
    print(f"medians of {args.rounds} alternating rounds; ratio = median of per-round gated/raw")
    print("| writes | memories | gated /s | raw Chroma upsert /s | ratio | actions |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for label, count, rate, raw, ratio, actions in rows:
        print(f"| {label} | {count} | {rate:,.0f} | {raw:,.0f} | {ratio:.2f}x | {actions} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
