"""Retrieval quality and query latency on SciFact TRAIN: our channels and fusion against the peers.

What is measured (issue 3)
    All 5,183 SciFact abstracts become memories of ONE scope in a ``MemoryStore.in_memory`` (title ->
    ``title``, abstract -> ``body``, approved, confirmed tier, updated yesterday). The 809 TRAIN
    claims that have judgements are the queries. For each system: nDCG@10 and Recall@100 (mean
    over queries), and p50/p95 query latency in milliseconds **excluding query embedding** (every
    embedding wrapper looks a precomputed MiniLM vector up by its text; see ``_common.py``).

    Ours, ranked by the order of ``store.search(query, scope=..., candidates=100)`` (the fused
    candidates *before* the gate: relevance is about ranking; the gate then only drops hits):

    * BM25 only (``rank_bm25`` engine and ``bm25s`` engine) and dense only: the channel rankings
      computed directly on the scope's partition view with the store's own code
      (``view.bm25.top(tokenize(q), 100)`` and the exact dot product over ``view.matrix``), i.e.
      exactly the lists that ``search`` fuses, each with up to 100 candidates;
    * fused, RRF with adaptive weights (the default ``FusionConfig``), with each BM25 engine, and
      with ``vector_search="chroma"`` (Chroma's HNSW with the scope in ``where``);
    * fused, weighted mode (``FusionConfig(mode="weighted")``).

    ``store.query`` (search + the recall gate) latency is printed too, for the default store.

    Peers, on the same documents and the same vectors, in the same run:

    * LangChain ``EnsembleRetriever([BM25Retriever, Chroma.as_retriever()])`` (``langchain_classic``,
      ``langchain_community`` BM25Retriever with k=100; ``langchain_chroma`` with k=100 and a
      cosine collection), once with BM25Retriever's default whitespace ``preprocess_func`` and once
      with a lower-case ``\\w+`` one;
    * LlamaIndex ``QueryFusionRetriever([BM25Retriever.from_defaults(nodes=...),
      VectorStoreIndex(...).as_retriever()], mode="reciprocal_rerank", num_queries=1,
      llm=MockLLM(), use_async=False)`` with ``similarity_top_k=100`` everywhere and a Chroma
      vector store.

Bulk loading goes through the write gate's bulk import (``store.import_records``) with the cached
vectors and two steps skipped, which the audit records: the screens and dedup (the documents are
public abstracts, not agent memories; dedup would merge abstracts BEIR counts separately).

Tuning (``--sweep``) runs on TRAIN only: RRF k, channel weights, adaptive weights, candidates per
channel, BM25 k1/b and stemming, all measured through the core's own ``fuse`` on the same channel
lists. Nothing is tuned on the test split (which is not in ``shared/data``).

Run (repository root)::

    /work/venv/bin/python benchmarks/retrieval_quality.py            # the table (~5 min; the
                                                                    # first run also embeds ~5 min)
    /work/venv/bin/python benchmarks/retrieval_quality.py --sweep    # + the tuning sweep
    /work/venv/bin/python benchmarks/retrieval_quality.py --limit 100 --no-peers   # quick look
"""

from __future__ import annotations

import argparse
import gc
import re
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import (
    DEFAULT_DATA,
    CachedEmbedding,
    SciFact,
    VectorTable,
    dedup,
    ephemeral_chroma,
    langchain_embeddings,
    llamaindex_embedding,
    load_scifact,
    machine,
    ndcg_at_k,
    percentile,
    recall_at_k,
)

from shared_core.config import GateConfig
from shared_core.embedding import MiniLMEmbedding, calibration_of
from shared_core.evaluation import cached_vectors
from shared_core.model import MemoryRecord, Origin, Scope, Status, Tier
from shared_core.retrieval.bm25 import BM25Partition
from shared_core.retrieval.fusion import ChannelResult, FusionConfig, fuse, query_weights
from shared_core.store import MemoryStore
from shared_core.text import tokenize

warnings.filterwarnings("ignore", category=DeprecationWarning)

SCOPE = Scope(user_id="bench-user", agent_id="bench-agent", memory_space_id="scifact")
K = 100
WARMUP = 20
GATE_CONFIG = GateConfig().resolved(calibration_of(MiniLMEmbedding()))
"""The gate settings the shipped embedding calibrates (relative rule on)."""


@dataclass
class Result:
    """Per-system metrics."""

    name: str
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    @property
    def mean_ndcg(self) -> float:
        return float(np.mean(self.ndcg)) if self.ndcg else float("nan")

    @property
    def mean_recall(self) -> float:
        return float(np.mean(self.recall)) if self.recall else float("nan")

    @property
    def p50(self) -> float:
        return percentile(self.ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.ms, 95)


Retrieve = Callable[[str, int], list[str]]


def score_system(name: str, retrieve: Retrieve, data: SciFact, qidx: Sequence[int]) -> Result:
    """Quality: run every query once and score the ranked ids."""
    res = Result(name)
    for i in qidx:
        ranked = dedup(retrieve(data.queries[i], i))
        rels = data.qrels[data.query_ids[i]]
        res.ndcg.append(ndcg_at_k(ranked, rels, 10))
        res.recall.append(recall_at_k(ranked, rels, K))
    print(f"  {name:<48} nDCG@10 {res.mean_ndcg:.4f}  R@100 {res.mean_recall:.4f}")
    return res


def time_systems(
    systems: dict[str, Retrieve], results: dict[str, Result], data: SciFact, qidx: Sequence[int], rounds: int
) -> None:
    """Latency, interleaved: per query, every system in turn (order rotated), ``rounds`` times.

    A query's latency is the best of its ``rounds`` runs, so that a burst of load from another
    process on the machine hits one run of one system rather than biasing a whole system.
    """
    names = list(systems)
    for i in qidx[:WARMUP]:
        for n in names:
            systems[n](data.queries[i], i)
    best = {n: [float("inf")] * len(qidx) for n in names}
    gc.collect()
    for r in range(rounds):
        for j, i in enumerate(qidx):
            q = data.queries[i]
            rot = (j + r) % len(names)
            for n in names[rot:] + names[:rot]:
                t0 = time.perf_counter()
                systems[n](q, i)
                best[n][j] = min(best[n][j], (time.perf_counter() - t0) * 1e3)
    for n in names:
        results[n].ms = best[n]


# -- ours -------------------------------------------------------------------------------------


def build_records(data: SciFact) -> list[MemoryRecord]:
    """One approved, confirmed, recent memory per abstract, all in SCOPE (id = SciFact doc id)."""
    now = datetime.now(timezone.utc)
    recent = now - timedelta(days=1)
    return [
        MemoryRecord(
            id=did,
            title=title,
            body=body,
            user_id=SCOPE.user_id,
            agent_id=SCOPE.agent_id,
            memory_space_id=SCOPE.memory_space_id,
            status=Status.APPROVED,
            tier=Tier.CONFIRMED,
            origin=Origin.EXTERNAL_VERIFIED,
            source="scifact",
            created_at=recent,
            updated_at=recent,
        )
        for did, title, body in zip(data.doc_ids, data.titles, data.bodies, strict=True)
    ]


def make_store(
    emb: CachedEmbedding,
    records: list[MemoryRecord],
    vectors: np.ndarray,
    *,
    engine: str = "rank_bm25",
    fusion: FusionConfig | None = None,
    vector_search: str = "memory",
    over: MemoryStore | None = None,
) -> MemoryStore:
    """An in-memory store holding every abstract.

    Without ``over``, the records go through the write gate's bulk import with the precomputed
    vectors, skipping the screens and dedup (public abstracts, not agent memories; the audit
    records the skip). With ``over``, the new store opens the same Chroma collections read-only
    (same client and collection prefix) and builds its own in-process partition from them, so the
    abstracts are loaded into Chroma once for all configurations. Every store gets the embedding's
    calibrated gate settings (``GateConfig().resolved(calibration_of(MiniLM))``).
    """
    opts: dict[str, Any] = {
        "embedding": emb,
        "bm25_engine": engine,
        "fusion": fusion,
        "vector_search": vector_search,
        "config": GATE_CONFIG,
    }
    if over is not None:
        client, prefix = over._bench_chroma  # type: ignore[attr-defined]
        return MemoryStore(None, client=client, collection_prefix=prefix, read_only=True, **opts)
    client, prefix = ephemeral_chroma(), f"rq{time.time_ns() % 10**9}"
    store = MemoryStore(None, client=client, collection_prefix=prefix, **opts)
    store._bench_chroma = (client, prefix)  # type: ignore[attr-defined]
    items = [{**r.model_dump(mode="json", exclude_none=True), "cited": True} for r in records]
    for start in range(0, len(items), 1000):
        decisions = store.import_records(
            items[start : start + 1000], vectors=vectors[start : start + 1000], skip=("screens", "dedup")
        )
        assert all(d.stored for d in decisions), "every abstract is stored"
    return store


@dataclass(frozen=True)
class ChannelView:
    """The scope's corpus as the store ranks it: ids, unit vectors and a BM25 partition.

    Built with the store's own code (``BM25Partition`` over ``tokenize(record_text)``, exact dot
    products), so its channel lists are exactly those ``search`` fuses (checked in ``main``).
    """

    ids: tuple[str, ...]
    matrix: np.ndarray
    bm25: BM25Partition

    def similarities(self, qv: np.ndarray) -> np.ndarray:
        return np.einsum("ij,j->i", self.matrix, qv)


def partition_view(data: SciFact, dvecs: np.ndarray, engine: str = "rank_bm25") -> ChannelView:
    """The channel view of the whole corpus (every benchmark memory lives in one scope)."""
    order = sorted(range(len(data.doc_ids)), key=lambda i: data.doc_ids[i])  # partitions sort ids
    ids = tuple(data.doc_ids[i] for i in order)
    texts = data.doc_texts()
    tokens = [tokenize(texts[i]) for i in order]
    return ChannelView(ids, dvecs[order], BM25Partition(ids, tokens, engine=engine))  # type: ignore[arg-type]


def keyword_channel(view: Any, query: str, k: int = K) -> tuple[list[str], list[float]]:
    """The store's keyword channel: BM25 top-k over the partition, as ``search`` computes it."""
    top = view.bm25.top(tokenize(query), k)
    pairs = sorted(((s, view.ids[i]) for i, s in top), key=lambda x: (-x[0], x[1]))  # as search() sorts
    return [m for _, m in pairs], [s for s, _ in pairs]


def vector_channel(view: Any, qv: np.ndarray, k: int = K) -> tuple[list[str], list[float]]:
    """The store's exact vector channel (``vector_search="memory"``)."""
    sims = view.similarities(qv)
    k = min(k, sims.size)
    top = np.argpartition(-sims, k - 1)[:k]
    pairs = sorted(((float(sims[i]), view.ids[i]) for i in top), key=lambda x: (-x[0], x[1]))
    return [m for _, m in pairs], [s for s, _ in pairs]


# -- peers ------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


def lower_words(text: str) -> list[str]:
    """The ``\\w+`` lower-case tokenizer given to LangChain's BM25Retriever."""
    return _WORD.findall(text.lower())


def langchain_ensemble(data: SciFact, table: VectorTable, client: Any, *, preprocess: Callable | None) -> Any:
    """LangChain EnsembleRetriever(BM25Retriever, Chroma retriever), k=100 each, equal weights."""
    from langchain_chroma import Chroma
    from langchain_classic.retrievers import EnsembleRetriever
    from langchain_community.retrievers import BM25Retriever

    texts = data.doc_texts()
    metas = [{"doc_id": d} for d in data.doc_ids]
    kwargs: dict[str, Any] = {"k": K}
    if preprocess is not None:
        kwargs["preprocess_func"] = preprocess
    bm25 = BM25Retriever.from_texts(texts, metadatas=metas, **kwargs)
    name = f"lc-{'ws' if preprocess is None else 'w'}-{time.time_ns() % 10**9}"
    vs = Chroma(
        collection_name=name,
        embedding_function=langchain_embeddings(table),
        client=client,
        collection_metadata={"hnsw:space": "cosine"},
    )
    for start in range(0, len(texts), 5000):
        vs.add_texts(
            texts[start : start + 5000],
            metadatas=metas[start : start + 5000],
            ids=data.doc_ids[start : start + 5000],
        )
    return EnsembleRetriever(retrievers=[bm25, vs.as_retriever(search_kwargs={"k": K})], weights=[0.5, 0.5])


def llamaindex_fusion(data: SciFact, table: VectorTable, client: Any) -> Any:
    """LlamaIndex QueryFusionRetriever(BM25Retriever, VectorStoreIndex retriever), RRF, k=100."""
    from llama_index.core import Settings, StorageContext, VectorStoreIndex
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.core.schema import TextNode
    from llama_index.retrievers.bm25 import BM25Retriever
    from llama_index.vector_stores.chroma import ChromaVectorStore

    embed = llamaindex_embedding(table)
    Settings.embed_model = embed  # never the default OpenAI embedding
    Settings.llm = MockLLM()
    nodes = [TextNode(id_=d, text=t) for d, t in zip(data.doc_ids, data.doc_texts(), strict=True)]
    col = client.get_or_create_collection(
        f"li-{time.time_ns() % 10**9}", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=ChromaVectorStore(chroma_collection=col)),
        embed_model=embed,
        show_progress=False,
    )
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=K)
    return QueryFusionRetriever(
        [bm25, index.as_retriever(similarity_top_k=K)],
        similarity_top_k=K,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
    )


# -- tuning sweep (TRAIN only) ----------------------------------------------------------------


def sweep(data: SciFact, qidx: Sequence[int], qvecs: np.ndarray, store: MemoryStore, view: ChannelView) -> None:
    """Measure fusion and BM25 settings through the core's ``fuse`` on precomputed channel lists."""
    import bm25s

    print("\n== tuning sweep on SciFact TRAIN (fuse() of the core on precomputed channel lists) ==")
    deep = 200
    kw_lists = [keyword_channel(view, data.queries[i], deep) for i in qidx]
    vec_lists = [vector_channel(view, qvecs[i], deep) for i in qidx]

    def evaluate(
        cfg: FusionConfig, kws: list, vecs: list, *, adaptive_query: bool = True
    ) -> tuple[float, float]:
        nd, rc = [], []
        for (kid, ksc), (vid, vsc), i in zip(kws, vecs, qidx, strict=True):
            n = cfg.candidates
            w = (
                query_weights(data.queries[i], cfg)
                if adaptive_query
                else {"keyword": cfg.lexical_weight, "vector": cfg.semantic_weight}
            )
            fused = fuse(
                [ChannelResult("keyword", kid[:n], ksc[:n]), ChannelResult("vector", vid[:n], vsc[:n])],
                w,
                cfg,
            )
            ranked = [it.id for it in fused[:K]]
            rels = data.qrels[data.query_ids[i]]
            nd.append(ndcg_at_k(ranked, rels, 10))
            rc.append(recall_at_k(ranked, rels, K))
        return float(np.mean(nd)), float(np.mean(rc))

    def single(lists: list) -> tuple[float, float]:
        nd = [
            ndcg_at_k(ids, data.qrels[data.query_ids[i]], 10) for (ids, _), i in zip(lists, qidx, strict=True)
        ]
        rc = [
            recall_at_k(ids[:K], data.qrels[data.query_ids[i]], K)
            for (ids, _), i in zip(lists, qidx, strict=True)
        ]
        return float(np.mean(nd)), float(np.mean(rc))

    bk, bv = single(kw_lists), single(vec_lists)
    print(f"  BM25 (core tokenize, k1=0.9 b=0.4): nDCG@10 {bk[0]:.4f}   dense: {bv[0]:.4f}")
    base = FusionConfig(candidates=K)
    print(
        f"  current default (rrf k={base.rrf_k:g}, adaptive={base.adaptive}, {base.candidates} cand): "
        f"{evaluate(base, kw_lists, vec_lists)[0]:.4f}"
    )
    print(
        f"  adaptive=False                         : {evaluate(base.model_copy(update={'adaptive': False}), kw_lists, vec_lists)[0]:.4f}"
    )
    print(
        "  RRF k (adaptive on):   "
        + "  ".join(
            f"k={k:g}:{evaluate(base.model_copy(update={'rrf_k': k}), kw_lists, vec_lists)[0]:.4f}"
            for k in (1, 5, 10, 20, 30, 60, 100)
        )
    )
    print(
        "  candidates per channel: "
        + "  ".join(
            f"{n}:{evaluate(base.model_copy(update={'candidates': n}), kw_lists, vec_lists)[0]:.4f}"
            for n in (20, 50, 100, 200)
        )
    )
    print(
        "  lexical weight (semantic 1, adaptive off): "
        + "  ".join(
            f"{w:g}:{evaluate(base.model_copy(update={'lexical_weight': w, 'adaptive': False}), kw_lists, vec_lists)[0]:.4f}"
            for w in (0.5, 0.7, 0.8, 1.0, 1.2, 1.5)
        )
    )
    wbase = FusionConfig(mode="weighted", candidates=K)
    print(
        "  weighted mode, lexical weight (adaptive off): "
        + "  ".join(
            f"{w:g}:{evaluate(wbase.model_copy(update={'lexical_weight': w, 'adaptive': False}), kw_lists, vec_lists)[0]:.4f}"
            for w in (0.2, 0.3, 0.5, 0.7, 1.0)
        )
    )
    # Robustness of the candidate changes: each measured on the two halves of TRAIN (even / odd).
    halves = [qidx[0::2], qidx[1::2]]
    kw_h = [kw_lists[0::2], kw_lists[1::2]]
    vec_h = [vec_lists[0::2], vec_lists[1::2]]

    def on_halves(cfg: FusionConfig) -> str:
        out = []
        for h in range(2):
            nd = []
            for (kid, ksc), (vid, vsc), i in zip(kw_h[h], vec_h[h], halves[h], strict=True):
                n = cfg.candidates
                w = query_weights(data.queries[i], cfg)
                fused = fuse(
                    [ChannelResult("keyword", kid[:n], ksc[:n]), ChannelResult("vector", vid[:n], vsc[:n])],
                    w,
                    cfg,
                )
                nd.append(ndcg_at_k([it.id for it in fused[:K]], data.qrels[data.query_ids[i]], 10))
            out.append(f"{np.mean(nd):.4f}")
        return " / ".join(out)

    print("  halves (even / odd queries):")
    for label, cfg in (
        (f"current default (rrf k={base.rrf_k:g})", base),
        ("rrf k=60", base.model_copy(update={"rrf_k": 60})),
        ("rrf k=10", base.model_copy(update={"rrf_k": 10})),
        ("rrf k=20", base.model_copy(update={"rrf_k": 20})),
        ("weighted 1:1 adaptive", wbase),
        ("weighted lex 0.3 adaptive", wbase.model_copy(update={"lexical_weight": 0.3})),
        ("weighted lex 0.5 adaptive", wbase.model_copy(update={"lexical_weight": 0.5})),
        ("weighted lex 0.7 adaptive", wbase.model_copy(update={"lexical_weight": 0.7})),
        ("rrf k=5", base.model_copy(update={"rrf_k": 5})),
    ):
        print(f"    {label:<28} {on_halves(cfg)}")
    # Which queries does the adaptive rule touch?
    n_code = sum(1 for i in qidx if query_weights(data.queries[i], base)["keyword"] > 1.0)
    n_long = sum(1 for i in qidx if 0 < query_weights(data.queries[i], base)["keyword"] < 1.0)
    print(
        f"  adaptive rule: {n_code} queries lean lexical (code-like token), {n_long} lean semantic (>= 8 words), of {len(qidx)}"
    )

    # BM25 variants through bm25s (method="lucene", the formula of our engines): the core's tokens
    # (Snowball-stemmed since issue 11) against the same tokens without stemming.
    import shared_core.text as text_mod

    texts = data.doc_texts()
    ids = list(data.doc_ids)
    tok_stem = [tokenize(t) for t in texts]
    q_stem = [tokenize(data.queries[i]) for i in qidx]
    real_stem = text_mod.stem
    text_mod.stem = lambda w: w  # type: ignore[assignment]
    try:
        tok_plain = [tokenize(t) for t in texts]
        q_plain = [tokenize(data.queries[i]) for i in qidx]
    finally:
        text_mod.stem = real_stem
    variants = {"core tokenize (stemmed)": (tok_stem, q_stem), "core tokenize, no stemming": (tok_plain, q_plain)}
    for label, (dtoks, qtoks) in variants.items():
        for k1, b in ((0.9, 0.4), (1.2, 0.75)):
            r = bm25s.BM25(method="lucene", k1=k1, b=b)
            r.index([t or [""] for t in dtoks], show_progress=False)
            vocab = r.vocab_dict
            lists = []
            for qt in qtoks:
                qi = [vocab[t] for t in qt if t in vocab]
                s = r.get_scores(qi) if qi else np.zeros(len(ids))
                top = np.argsort(-s, kind="stable")[:deep]
                lists.append(([ids[j] for j in top if s[j] > 0], [float(s[j]) for j in top if s[j] > 0]))
            nd_b = single(lists)[0]
            nd_f10 = evaluate(base.model_copy(update={"rrf_k": 10}), lists, vec_lists)[0]
            nd_w = evaluate(wbase.model_copy(update={"lexical_weight": 0.5}), lists, vec_lists)[0]
            print(
                f"  BM25 {label:<28} k1={k1} b={b}: BM25 {nd_b:.4f}  fused rrf10 {nd_f10:.4f}  "
                f"weighted(lex .5) {nd_w:.4f}"
            )


# -- diagnostics: where the time of one search goes, and measured alternatives ----------------


def diagnose(data: SciFact, qidx: Sequence[int], qvecs: np.ndarray, store: MemoryStore, view: ChannelView) -> None:
    """Time the parts of ``search`` on this partition and prototypes of cheaper equivalents."""
    from collections import defaultdict

    print("\n== diagnostics (5,183 memories in one scope; medians over the judged queries) ==")
    qs = [data.queries[i] for i in qidx]
    toks = [tokenize(q) for q in qs]

    def med(fn: Callable[[int], Any], n: int = 3) -> float:
        out = []
        for j in range(len(qs)):
            best = float("inf")
            for _ in range(n):
                t0 = time.perf_counter()
                fn(j)
                best = min(best, (time.perf_counter() - t0) * 1e3)
            out.append(best)
        return float(np.median(out))

    tm = [store.search(q, scope=SCOPE, candidates=K)[1] for q in qs]
    print(
        "  search() own timings: "
        + ", ".join(
            f"{k} {np.median([t[k] for t in tm]):.2f}"
            for k in ("load_ms", "embed_ms", "retrieve_ms", "fuse_ms")
        )
    )

    # 1. rank_bm25 engine: rank-bm25's loop over every document per query term vs postings.
    idx = view.bm25._index
    if hasattr(idx, "get_scores_reference"):  # the core scores over postings already
        diff = max(float(np.max(np.abs(idx.get_scores(t) - idx.get_scores_reference(t)))) for t in toks[:200])
        print(
            f"  BM25 scores, rank_bm25 engine: core (postings) {med(lambda j: view.bm25.scores(toks[j])):.2f} ms; "
            f"rank-bm25's per-document loop {med(lambda j: idx.get_scores_reference(toks[j])):.2f} ms "
            f"(max |diff| {diff:.1e})"
        )
    elif hasattr(idx, "doc_freqs"):
        post: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for d, freqs in enumerate(idx.doc_freqs):
            for t, f in freqs.items():
                post[t][0].append(d)
                post[t][1].append(f)
        arr = {
            t: (np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.float64)) for t, (a, b) in post.items()
        }
        norm = idx.k1 * (1 - idx.b + idx.b * np.asarray(idx.doc_len, dtype=np.float64) / idx.avgdl)

        def inverted(qt: list[str]) -> np.ndarray:
            sc = np.zeros(idx.corpus_size)
            for t in qt:
                w = idx.idf.get(t)
                if w is None:
                    continue
                d, f = arr[t]
                sc[d] += w * (f * (idx.k1 + 1) / (f + norm[d]))
            return sc

        diff = max(float(np.max(np.abs(inverted(t) - view.bm25.scores(t)))) for t in toks[:200])
        print(
            f"  BM25 scores, rank_bm25 engine (per-document loop): {med(lambda j: view.bm25.scores(toks[j])):.2f} ms; "
            f"inverted-index numpy prototype: {med(lambda j: inverted(toks[j])):.2f} ms (max |diff| {diff:.1e})"
        )

    # 2. the exact vector channel: BLAS matmul vs einsum (no BLAS threads).
    qv = [qvecs[i] for i in qidx]
    print(
        f"  vector channel: view.matrix @ qv {med(lambda j: view.matrix @ qv[j]):.2f} ms; "
        f"np.einsum('ij,j->i') {med(lambda j: np.einsum('ij,j->i', view.matrix, qv[j])):.2f} ms"
    )

    # 3. the id -> (view, row) map that search() rebuilt for every query (before views had ``pos``).
    def where_map(_: int) -> dict[str, tuple[Any, int]]:
        w: dict[str, tuple[Any, int]] = {}
        for i, mid in enumerate(view.ids):
            w[mid] = (view, i)
        return w

    has_pos = "(views now carry a prebuilt id -> row map, pos)" if hasattr(view, "pos") else ""
    print(f"  per-query id map over the scope, where[mid] = (view, i): {med(where_map):.2f} ms {has_pos}")

    # 4. the fuse step of search(): fuse(), bounded lexical scores, one Hit per candidate.
    from shared_core.model import Hit
    from shared_core.retrieval.bm25 import lexical_scores

    chans = [(keyword_channel(view, q), vector_channel(view, v)) for q, v in zip(qs, qv, strict=True)]
    cfg = FusionConfig()
    fused_lists = [
        fuse(
            [ChannelResult("keyword", k[0], k[1]), ChannelResult("vector", v[0], v[1])],
            query_weights(q, cfg),
            cfg,
        )[:K]
        for (k, v), q in zip(chans, qs, strict=True)
    ]
    row = {m: i for i, m in enumerate(view.ids)}
    t_fuse = med(
        lambda j: fuse(
            [
                ChannelResult("keyword", chans[j][0][0], chans[j][0][1]),
                ChannelResult("vector", chans[j][1][0], chans[j][1][1]),
            ],
            query_weights(qs[j], cfg),
            cfg,
        )
    )
    t_lex = med(
        lambda j: lexical_scores(
            toks[j], [view.doc_sets[row[it.id]] for it in fused_lists[j]], n_docs=len(view.ids), df=view.df
        )
    )

    def hits_loop(j: int) -> list[Any]:
        out = []
        for it in fused_lists[j]:
            i = row[it.id]
            sem = float(np.clip(float(view.matrix[i] @ qv[j]), -1.0, 1.0))
            out.append(
                Hit.model_construct(
                    record=view.records[i],
                    score=sem,
                    lexical_score=0.5,
                    vector_rank=it.ranks.get("vector"),
                    keyword_rank=it.ranks.get("keyword"),
                    vector_distance=1.0 - sem,
                    bm25_score=it.raw.get("keyword"),
                    fused_score=it.fused_score,
                    fused_rank=1,
                    channels=("keyword",),
                )
            )
        return out

    def sims_vectorised(j: int) -> np.ndarray:
        rows = np.fromiter((row[it.id] for it in fused_lists[j]), dtype=np.int64)
        return np.clip(view.matrix[rows] @ qv[j], -1.0, 1.0)

    def per_hit_clip(j: int) -> list[float]:
        return [float(np.clip(float(view.matrix[row[it.id]] @ qv[j]), -1.0, 1.0)) for it in fused_lists[j]]

    print(
        f"  fuse step for {K} candidates: fuse() {t_fuse:.2f} ms, lexical_scores {t_lex:.2f} ms, "
        f"Hit loop as in search() {med(hits_loop):.2f} ms (of which per-hit np.clip cosine {med(per_hit_clip):.2f} ms; "
        f"vectorised cosines {med(sims_vectorised):.2f} ms)"
    )


# -- main -------------------------------------------------------------------------------------


def fmt_table(results: list[Result], ours: Result) -> str:
    lines = [
        "| system | nDCG@10 | Recall@100 | p50 ms | p95 ms | p50 vs ours |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        ratio = r.p50 / ours.p50 if ours.p50 > 0 else float("nan")
        lines.append(
            f"| {r.name} | {r.mean_ndcg:.4f} | {r.mean_recall:.4f} | {r.p50:.2f} | {r.p95:.2f} | {ratio:.2f}x |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=0, help="only the first N judged queries")
    ap.add_argument("--latency-queries", type=int, default=200, help="queries timed (seeded sample; 0: none)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved timing rounds (best of)")
    ap.add_argument("--no-peers", action="store_true", help="skip LangChain and LlamaIndex")
    ap.add_argument("--sweep", action="store_true", help="also run the tuning sweep (TRAIN)")
    ap.add_argument("--diagnose", action="store_true", help="also time the parts of one search")
    args = ap.parse_args(argv)

    print(f"machine: {machine()}")
    data = load_scifact(args.data, "train")
    qidx = list(range(len(data.queries)))[: args.limit or None]
    print(f"SciFact train: {len(data.doc_ids)} documents, {len(qidx)} judged queries")
    texts = data.doc_texts()
    model = MiniLMEmbedding(threads=2)
    dvecs = cached_vectors(model, texts, progress=True)  # the evaluation cache (by model and texts)
    qvecs = cached_vectors(model, data.queries, progress=True)
    table = VectorTable()
    table.add(texts, dvecs)
    table.add(data.queries, qvecs)
    emb = CachedEmbedding(table)
    records = build_records(data)

    print("\nloading (gated bulk import, screens and dedup skipped) ...")
    t0 = time.perf_counter()
    store = make_store(emb, records, dvecs)
    store_s = make_store(emb, records, dvecs, engine="bm25s", over=store)
    store_w = make_store(emb, records, dvecs, fusion=FusionConfig(mode="weighted"), over=store)
    store_c = make_store(emb, records, dvecs, vector_search="chroma", over=store)
    view, view_s = partition_view(data, dvecs), partition_view(data, dvecs, "bm25s")
    for st in (store_w, store_c, store_s):
        st.search(data.queries[0], scope=SCOPE)  # build their partitions now
    assert len(view.ids) == len(records), "every abstract is in the scope's partition"
    print(
        f"  {len(records)} memories in Chroma once, 4 stores' partitions built: {time.perf_counter() - t0:.0f} s"
    )

    # The direct channel rankings are exactly the ranks search() reports for its fused hits.
    for i in qidx[:10]:
        hits, _ = store.search(data.queries[i], scope=SCOPE, candidates=K)
        kid, _ = keyword_channel(view, data.queries[i])
        vid, _ = vector_channel(view, qvecs[i])
        for h in hits:
            assert h.keyword_rank is None or kid[h.keyword_rank - 1] == h.id, "keyword rank mismatch"
            assert h.vector_rank is None or vid[h.vector_rank - 1] == h.id, "vector rank mismatch"

    def searcher(st: MemoryStore) -> Retrieve:
        return lambda q, i: [h.id for h in st.search(q, scope=SCOPE, candidates=K)[0]]

    systems: dict[str, Retrieve] = {
        "ours BM25 only (rank_bm25)": lambda q, i: keyword_channel(view, q)[0],
        "ours BM25 only (bm25s)": lambda q, i: keyword_channel(view_s, q)[0],
        "ours dense only (exact)": lambda q, i: vector_channel(view, emb.embed_query(q))[0],
        DEFAULT: searcher(store),
        "ours fused RRF adaptive (bm25s)": searcher(store_s),
        "ours fused weighted (rank_bm25)": searcher(store_w),
        "ours fused RRF adaptive (rank_bm25, Chroma HNSW)": searcher(store_c),
        GATED: lambda q, i: [h.id for h in store.query(q, scope=SCOPE, candidates=K, k=10).accepted],
    }
    if not args.no_peers:
        print("building the peers (same documents, same vectors) ...")
        client = ephemeral_chroma()
        lc_ws = langchain_ensemble(data, table, client, preprocess=None)
        lc_w = langchain_ensemble(data, table, client, preprocess=lower_words)
        li = llamaindex_fusion(data, table, client)
        systems[LC_WS] = lambda q, i: [d.metadata["doc_id"] for d in lc_ws.invoke(q)]
        systems[LC_W] = lambda q, i: [d.metadata["doc_id"] for d in lc_w.invoke(q)]
        systems[LI] = lambda q, i: [n.node.node_id for n in li.retrieve(q)]

    print("\nquality (every judged query):")
    results = {n: score_system(n, fn, data, qidx) for n, fn in systems.items()}
    rnd = np.random.default_rng(3)
    lat_idx = sorted(rnd.choice(qidx, size=min(args.latency_queries, len(qidx)), replace=False).tolist())
    if lat_idx:
        print(
            f"\nlatency: {len(lat_idx)} queries x {len(systems)} systems, interleaved, best of {args.rounds} ..."
        )
        time_systems(systems, results, data, lat_idx, args.rounds)

    fused, fused_s, fused_w = (
        results[DEFAULT],
        results["ours fused RRF adaptive (bm25s)"],
        results["ours fused weighted (rank_bm25)"],
    )
    singles = [
        results[n]
        for n in ("ours BM25 only (rank_bm25)", "ours BM25 only (bm25s)", "ours dense only (exact)")
    ]
    best_single = max(r.mean_ndcg for r in singles)
    print(
        f"\n## SciFact TRAIN: {len(data.doc_ids)} docs in one scope, {len(qidx)} judged queries "
        f"(latency: {len(lat_idx)} queries, best of {args.rounds} interleaved runs, query embedding excluded)"
    )
    print(f"{machine()}")
    print(f"default fusion: FusionConfig({FusionConfig()!r}); candidates per channel in this run: {K}\n")
    print(fmt_table([r for n, r in results.items() if n != GATED], fused))
    g = results[GATED]
    print(
        f"\n{GATED}: p50 {g.p50:.2f} ms, p95 {g.p95:.2f} ms; accepted hits only: nDCG@10 {g.mean_ndcg:.4f}, "
        f"Recall@100 {g.mean_recall:.4f} (min_score {store.gate.config_for(SCOPE).min_score})"
    )
    print(
        f"ours_ndcg - best_single_channel ({best_single:.4f}): default {fused.mean_ndcg - best_single:+.4f}, "
        f"bm25s {fused_s.mean_ndcg - best_single:+.4f}, weighted {fused_w.mean_ndcg - best_single:+.4f} (target >= +0.02)"
    )
    for n in (LC_WS, LC_W, LI):
        if n in results:
            p = results[n]
            print(
                f"{n}: peer_latency/ours p50 {p.p50 / fused.p50:.2f}x (vs bm25s store {p.p50 / fused_s.p50:.2f}x); "
                f"nDCG@10 ours - peer {fused.mean_ndcg - p.mean_ndcg:+.4f}"
            )

    if args.diagnose:
        diagnose(data, qidx, qvecs, store, view)
    if args.sweep:
        sweep(data, qidx, qvecs, store, view)
    return 0


DEFAULT = "ours fused RRF adaptive (rank_bm25) [default]"
GATED = "ours store.query (search + gate, default store)"
LC_WS = "LangChain Ensemble (BM25 whitespace + Chroma)"
LC_W = "LangChain Ensemble (BM25 \\w+ lower + Chroma)"
LI = "LlamaIndex QueryFusion (BM25 + Chroma, RRF)"


if __name__ == "__main__":
    raise SystemExit(main())
