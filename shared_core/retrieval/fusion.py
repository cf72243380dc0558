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
        mode: ``"weighted"`` (default: sum of weighted, per-channel max-normalised scores) or
            ``"rrf"`` (reciprocal rank fusion).
        rrf_k: the RRF constant.
        lexical_weight: base weight of the keyword channel.
        semantic_weight: base weight of the vector channel.
        adaptive: adjust the weights to the query type (see :func:`query_weights`).
        candidates: how many hits each channel contributes before fusion.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # Weighted (per-channel max-normalised scores, 1:1, adaptive): best on SciFact TRAIN with the
    # stemmed BM25 of issue 11, on both halves (even/odd claims: 0.7465 / 0.7122 against RRF k=10
    # 0.7299 / 0.7003; all claims 0.7294 vs 0.7151; LlamaIndex QueryFusionRetriever 0.7179 in the same
    # run; benchmarks/README.md). The normalisation only orders candidates: the gate thresholds on
    # the bounded scores of DESIGN "Scores", never on fused values.
    mode: FusionMode = "weighted"
    # k=10 (not the customary 60) when mode="rrf": better on SciFact TRAIN, on both halves.
    rrf_k: float = Field(default=10.0, gt=0.0)
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
