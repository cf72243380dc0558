"""Shared helpers of the benchmarks: SciFact loading, cached MiniLM vectors, metrics, timers.

Nothing here downloads anything. Vectors come from :class:`shared_core.embedding.MiniLMEmbedding`
(the offline all-MiniLM-L6-v2 int8 default) and are cached as ``.npy`` files under
``/tmp/recall_gate_bench/`` keyed by the model, its settings and the exact texts, so that reruns
take seconds and every system in a run sees *the same* vectors.

The embedding wrappers (:class:`CachedEmbedding` for the core, :func:`langchain_embeddings` and
:func:`llamaindex_embedding` for the peers) look a vector up by its exact text and raise
``KeyError`` on a text they were not given: query latency therefore never includes embedding, and
no system can fall back to a model that would download (Chroma's default embedding function,
LlamaIndex's default OpenAI embedding).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import platform
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "scifact"
CACHE = Path(os.environ.get("RECALL_GATE_BENCH_CACHE", "/tmp/recall_gate_bench"))
DIM = 384
MODEL_NAME = "all-MiniLM-L6-v2-int8"


# -- data -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SciFact:
    """One SciFact split: documents, the queries that have judgements, and the judgements."""

    doc_ids: list[str]
    titles: list[str]
    bodies: list[str]
    query_ids: list[str]
    queries: list[str]
    qrels: dict[str, dict[str, int]]

    def doc_texts(self) -> list[str]:
        """What is embedded and indexed per document (the store's ``record_text``: title, body)."""
        return [doc_text(t, b) for t, b in zip(self.titles, self.bodies, strict=True)]


def doc_text(title: str, body: str) -> str:
    """The same string as ``shared_core.partition.record_text`` for a record with this title/body."""
    return f"{title}\n{body}" if title else body


def load_scifact(data: Path = DEFAULT_DATA, split: str = "train") -> SciFact:
    """Load corpus, ``queries.<split>.jsonl`` and ``qrels/<split>.tsv``; skip unjudged queries."""
    doc_ids, titles, bodies = [], [], []
    with (data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            doc_ids.append(str(row["_id"]))
            titles.append(str(row.get("title") or ""))
            bodies.append(str(row.get("text") or ""))
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with (data / "qrels" / f"{split}.tsv").open(encoding="utf-8") as fh:
        for rec in csv.DictReader(fh, delimiter="\t"):
            if int(rec["score"]) > 0:
                qrels[str(rec["query-id"])][str(rec["corpus-id"])] = int(rec["score"])
    query_ids, queries = [], []
    with (data / f"queries.{split}.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                query_ids.append(str(row["_id"]))
                queries.append(str(row["text"]))
    return SciFact(doc_ids, titles, bodies, query_ids, queries, dict(qrels))


# -- cached MiniLM vectors --------------------------------------------------------------------


def _texts_key(texts: Sequence[str], extra: str) -> str:
    h = hashlib.sha256(extra.encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def minilm_vectors(texts: Sequence[str], label: str, *, threads: int = 2) -> NDArray[np.float32]:
    """MiniLM vectors of ``texts`` (unit rows, float32), from the cache or embedded once."""
    from shared_core import embedding as emb_mod
    from shared_core.embedding import MiniLMEmbedding

    model = MiniLMEmbedding(threads=threads)
    extra = f"{getattr(emb_mod, '_MODEL_SHA256', '?')}|{model.name}|{model.max_length}"
    path = CACHE / f"{label}-{_texts_key(texts, extra)}.npy"
    if path.exists():
        arr: NDArray[np.float32] = np.load(path)
        if arr.shape == (len(texts), DIM):
            return arr
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    arr = model.embed_documents(list(texts))
    dt = time.perf_counter() - t0
    print(f"  embedded {len(texts)} {label} texts with MiniLM in {dt:.0f} s ({len(texts) / dt:.0f}/s)")
    np.save(path, arr)
    return arr


def random_unit_vectors(n: int, seed: int, dim: int = DIM) -> NDArray[np.float32]:
    """``n`` random unit vectors (Gaussian, normalised)."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, dim), dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return v


class VectorTable:
    """Text -> precomputed vector (the lookup every embedding wrapper uses)."""

    def __init__(self) -> None:
        self._rows: dict[str, NDArray[np.float32]] = {}

    def add(self, texts: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Register vectors for texts (rows aligned with ``texts``)."""
        for t, v in zip(texts, vectors, strict=True):
            self._rows[t] = np.asarray(v, dtype=np.float32)

    def get(self, text: str) -> NDArray[np.float32]:
        """The vector of ``text``; ``KeyError`` (never a model call) if it was not registered."""
        try:
            return self._rows[text]
        except KeyError:
            raise KeyError(f"no cached vector for a text of {len(text)} characters") from None

    def many(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors of several texts, stacked."""
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        return np.stack([self.get(t) for t in texts])


class CachedEmbedding:
    """A native ``shared_core`` Embedder over a :class:`VectorTable` (lookup, no model)."""

    dimension = DIM
    recommended_min_score = 0.54  # the same as MiniLMEmbedding's, since these are its vectors

    def __init__(self, table: VectorTable, name: str = MODEL_NAME) -> None:
        self.table = table
        self.name = name

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Stacked cached vectors."""
        return self.table.many(list(texts))

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The cached vector of the query."""
        return self.table.get(text)


def langchain_embeddings(table: VectorTable) -> Any:
    """A LangChain ``Embeddings`` that returns cached vectors (for ``langchain_chroma.Chroma``)."""
    from langchain_core.embeddings import Embeddings

    class _Cached(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return table.many(texts).tolist()

        def embed_query(self, text: str) -> list[float]:
            return table.get(text).tolist()

    return _Cached()


def llamaindex_embedding(table: VectorTable) -> Any:
    """A LlamaIndex ``BaseEmbedding`` that returns cached vectors."""
    from llama_index.core.embeddings import BaseEmbedding

    class _Cached(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return table.get(query).tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return table.get(text).tolist()

        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            return table.many(texts).tolist()

    return _Cached(model_name="cached-minilm", embed_batch_size=256)


def ephemeral_chroma() -> Any:
    """An in-memory Chroma client (no telemetry); collections get explicit embeddings only."""
    import chromadb

    return chromadb.EphemeralClient()


# -- metrics ----------------------------------------------------------------------------------


def ndcg_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains ``rel`` (BEIR/pytrec_eval: gain = rel, discount log2(rank+1))."""
    dcg = sum(rels.get(d, 0) / np.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
    return float(dcg / idcg) if idcg > 0 else 0.0


def recall_at_k(ranked: Sequence[str], rels: dict[str, int], k: int = 100) -> float:
    """Share of relevant documents in the top ``k``."""
    if not rels:
        return 0.0
    top = set(ranked[:k])
    return sum(1 for d in rels if d in top) / len(rels)


def dedup(ids: Sequence[str]) -> list[str]:
    """Keep the first occurrence of each id (peers may return one document twice)."""
    seen: set[str] = set()
    out = []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


# -- timing -----------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (linear interpolation)."""
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else float("nan")


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """Run ``fn``; return its result and the wall time in milliseconds."""
    t0 = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - t0) * 1e3


def machine() -> str:
    """A one-line description of the machine and the versions that matter."""
    from importlib.metadata import PackageNotFoundError, version

    vers = []
    for pkg in (
        "chromadb",
        "rank-bm25",
        "bm25s",
        "langchain-classic",
        "langchain-community",
        "langchain-chroma",
        "llama-index-core",
        "llama-index-retrievers-bm25",
    ):
        with contextlib.suppress(PackageNotFoundError):
            vers.append(f"{pkg} {version(pkg)}")
    return (
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        + ", ".join(vers)
    )


def median(values: Sequence[float]) -> float:
    """Median of ``values``."""
    return statistics.median(values) if values else float("nan")


# Vocabulary of the synthetic memories in the adapter-overhead benchmarks.
WORDS = [
    "posting",
    "policy",
    "newsletter",
    "tuesday",
    "invoice",
    "billing",
    "deploy",
    "release",
    "standup",
    "office",
    "holiday",
    "refund",
    "customer",
    "support",
    "escalation",
    "tone",
    "guide",
    "onboarding",
    "security",
    "review",
    "backup",
    "incident",
    "ticket",
]
