"""Fusion of ranked channels by stable id (H1): reciprocal rank fusion or a weighted sum.

Pure functions, no I/O. Both keep what each channel said (rank and raw score) so that the fused
hit's provenance can show it (R12). Weights are really applied in both modes (LlamaIndex's RRF
ignores ``retriever_weights``; ours does not).

Per-query-type weighting: :func:`query_weights` leans lexical for queries that look like ids,
codes or error numbers, and semantic for long natural-language questions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ChannelResult", "FusedItem", "FusionConfig", "fuse", "query_weights"]

FusionMode = Literal["rrf", "weighted"]


class FusionConfig(BaseModel):
    """How channels are fused.

    Attributes:
        mode: ``"rrf"`` (reciprocal rank fusion, default) or ``"weighted"`` (sum of weighted,
            per-channel max-normalised scores).
        rrf_k: the RRF constant.
        lexical_weight: base weight of the keyword channel.
        semantic_weight: base weight of the vector channel.
        adaptive: adjust the weights to the query type (see :func:`query_weights`).
        candidates: how many hits each channel contributes before fusion.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # RRF with k=5, chosen on the two tuning sets (issue 11, stemmed BM25): SciFact TRAIN nDCG@10
    # 0.7205 (halves even/odd 0.7356 / 0.7054, both above k=10's 0.7299 / 0.7003) against
    # LlamaIndex QueryFusionRetriever's 0.7179 in the same run; LoCoMo dev pre-gate recall@10
    # 0.6454 (k=10: 0.6499). The weighted mode scores higher on SciFact (0.7294) but loses 0.046
    # recall@10 on conversational memory (0.6035), so it stays an option for document corpora.
    # benchmarks/retrieval_quality.py --sweep and benchmarks/README.md.
    mode: FusionMode = "rrf"
    rrf_k: float = Field(default=5.0, gt=0.0)
    lexical_weight: float = Field(default=1.0, ge=0.0)
    semantic_weight: float = Field(default=1.0, ge=0.0)
    adaptive: bool = True
    candidates: int = Field(default=50, ge=1, le=10_000)


@dataclass(frozen=True, slots=True)
class ChannelResult:
    """One channel's ranked output: ids best first, with raw scores."""

    name: str
    ids: Sequence[str]
    scores: Sequence[float]


@dataclass(slots=True)
class FusedItem:
    """A fused id with its fused score and what each channel said about it."""

    id: str
    fused_score: float
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)


_CODE = re.compile(r"(?=\S*\d)(?=\S*[A-Za-z_])\S{3,}|[A-Z]{2,}[-_][A-Z0-9]+|#\d+|\b[0-9a-f]{8,}\b")


def query_weights(query: str, cfg: FusionConfig) -> dict[str, float]:
    """Channel weights for this query: ids and codes lean lexical, long questions lean semantic."""
    lex, sem = cfg.lexical_weight, cfg.semantic_weight
    if cfg.adaptive:
        if _CODE.search(query):
            lex, sem = lex * 1.5, sem * 0.75
        elif len(query.split()) >= 8:
            lex, sem = lex * 0.9, sem * 1.1
    return {"keyword": lex, "vector": sem}


def fuse(
    channels: Sequence[ChannelResult], weights: Mapping[str, float], cfg: FusionConfig
) -> list[FusedItem]:
    """Fuse ranked channels by id; returns items best first (ties broken by id for determinism)."""
    items: dict[str, FusedItem] = {}
    for ch in channels:
        w = float(weights.get(ch.name, 1.0))
        top = max((s for s in ch.scores), default=0.0) if cfg.mode == "weighted" else 0.0
        for rank, (mid, raw) in enumerate(zip(ch.ids, ch.scores, strict=True), start=1):
            item = items.get(mid)
            if item is None:
                item = items[mid] = FusedItem(mid, 0.0)
            if ch.name in item.ranks:  # an id listed twice by one channel keeps its best rank
                continue
            item.ranks[ch.name] = rank
            item.raw[ch.name] = float(raw)
            if cfg.mode == "rrf":
                item.fused_score += w / (cfg.rrf_k + rank)
            else:
                item.fused_score += w * (float(raw) / top if top > 0 else 0.0)
    return sorted(items.values(), key=lambda it: (-it.fused_score, it.id))
