"""Hybrid search over a scope's partitions: BM25 and exact vectors, fused by id (H1, R12).

The store hands over the scope's partition views (private bucket and shared bucket, both already
confined to the scope, R1) and the query's embedding; :func:`hybrid_search` ranks them by BM25 and
by cosine, fuses the two rankings (RRF by default), and builds hits carrying the bounded scores the
gate thresholds on (cosine in [-1, 1] and the lexical share in [0, 1], DESIGN "Scores") plus every
channel's rank and raw value as provenance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..model import Hit
from ..text import tokenize
from .bm25 import lexical_scores, top_across, union_stats
from .fusion import ChannelResult, FusionConfig, fuse, query_weights
from .partition import PartitionView

__all__ = ["VectorChannel", "hybrid_search", "vector_ranking"]

VectorChannel = Callable[[Sequence[PartitionView], NDArray[np.float32], int], tuple[list[str], list[float]]]
"""``(views, query vector, n) -> (ids, cosines)``, best first: the vector channel's ranking."""


def vector_ranking(
    views: Sequence[PartitionView], qv: NDArray[np.float32], n: int
) -> tuple[list[str], list[float]]:
    """Exact cosine ranking over the views' matrices (rows and ``qv`` are unit vectors)."""
    pairs: list[tuple[float, str]] = []
    for view in views:
        if not view.ids:
            continue
        sims = view.similarities(qv)
        k = min(n, sims.size)
        top = np.argpartition(-sims, k - 1)[:k]
        pairs.extend((float(sims[i]), view.ids[i]) for i in top)
    pairs.sort(key=lambda x: (-x[0], x[1]))
    pairs = pairs[:n]
    return [m for _, m in pairs], [s for s, _ in pairs]


@dataclass(frozen=True, slots=True)
class _Located:
    view: PartitionView
    index: int


def hybrid_search(
    query: str,
    views: Sequence[PartitionView],
    qv: NDArray[np.float32],
    *,
    fusion: FusionConfig,
    candidates: int,
    vector_channel: VectorChannel = vector_ranking,
) -> tuple[list[Hit], dict[str, Any]]:
    """Rank the views by BM25 and by vector, fuse, and score: hits best first, and timings (ms).

    Args:
        query: the query text.
        views: the partitions the scope may see (R1: confined before any ranking).
        qv: the query's unit embedding.
        fusion: fusion settings.
        candidates: how many fused hits to return (each channel contributes as many).
        vector_channel: the vector ranking (default: exact cosine over the views).
    """
    t0 = time.perf_counter()
    q_tokens = tokenize(query)
    vec_ids, vec_scores = vector_channel(views, qv, candidates)
    # One corpus for the keyword channel: every view scored with the statistics of their union,
    # so a memory's BM25 does not depend on which partition (private or shared) holds it.
    found = top_across([v.bm25 for v in views], q_tokens, candidates)
    kw = sorted(((raw, views[pi].ids[i]) for pi, i, raw in found), key=lambda x: (-x[0], x[1]))
    t1 = time.perf_counter()

    weights = query_weights(query, fusion)
    fused = fuse(
        [
            ChannelResult("keyword", [m for _, m in kw], [s for s, _ in kw]),
            ChannelResult("vector", vec_ids, vec_scores),
        ],
        weights,
        fusion,
    )[:candidates]

    def locate(mid: str) -> _Located | None:
        for view in views:
            i = view.pos.get(mid)
            if i is not None:
                return _Located(view, i)
        return None

    stats = union_stats((v.bm25.stats for v in views), terms=q_tokens)
    n_docs = stats.n_docs
    located = [(item, loc) for item in fused if (loc := locate(item.id)) is not None]
    lex = lexical_scores(q_tokens, [loc.view.doc_sets[loc.index] for _, loc in located], stats=stats)
    hits: list[Hit] = []
    for rank, ((item, loc), lexical) in enumerate(zip(located, lex, strict=True), start=1):
        sem = min(1.0, max(-1.0, float(np.dot(loc.view.matrix[loc.index], qv))))
        channels = tuple(c for c in ("keyword", "vector") if c in item.ranks)
        hits.append(
            Hit.model_construct(
                record=loc.view.records[loc.index],
                score=sem,
                lexical_score=float(lexical),
                vector_rank=item.ranks.get("vector"),
                keyword_rank=item.ranks.get("keyword"),
                vector_distance=1.0 - sem,
                bm25_score=item.raw.get("keyword"),
                fused_score=item.fused_score,
                fused_rank=rank,
                channels=channels,
            )
        )
    t2 = time.perf_counter()
    timings = {
        "retrieve_ms": round((t1 - t0) * 1e3, 3),
        "fuse_ms": round((t2 - t1) * 1e3, 3),
        "candidates": len(hits),
        "in_scope": n_docs,
        "weights": weights,
    }
    return hits, timings
