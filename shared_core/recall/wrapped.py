"""Gate the output of retrievers you already have (the "wrap what you have" way in, P2).

Both adapters turn their framework's results (LangChain ``Document``, LlamaIndex
``NodeWithScore``) into :class:`Candidate` objects and call :func:`gate_candidates`, which does
everything that decides: fuse several retrievers by stable id with applied weights, compute the
bounded scores the gate thresholds on, build hits from the documents' metadata, and run the
recall gate. Adapters then convert the accepted ids back; they contain no rules (DESIGN).

Scores of wrapped retrievers are not comparable across frameworks (raw distance, ``1 - d``,
``exp(-d)``, BM25, RRF...). So the semantic score the gate sees is, in order of preference:
the cosine the core computes with ``embedder`` (when given), or the value of metadata
``score_key`` (when the caller declares it a similarity in [-1, 1]); otherwise none, and only the
lexical score can pass ``low_score``.

The lexical score is the store's, :func:`shared_core.retrieval.bm25.lexical_scores` (one
definition, compared with one ``min_lexical_score``): the IDF-weighted share of the distinct query
terms a document contains. Its IDF comes from ``lexical_stats`` when the caller has the corpus
statistics of what the wrapped retrievers index (:class:`~shared_core.retrieval.bm25.CorpusStats`),
else from the candidate pool (every distinct candidate of the call): a wrapped retriever does not
expose its corpus, and the pool is the corpus the gate sees. When the pool is the whole corpus
(a small memory space), the score equals the store's exactly.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..model import Hit, MemoryRecord, Scope, coerce_scope
from ..retrieval.bm25 import CorpusStats, lexical_scores
from ..retrieval.fusion import ChannelResult, FusionConfig, fuse
from ..text import tokenize
from .gate import GateResult, RecallGate

__all__ = ["Candidate", "WrappedResult", "gate_candidates", "hit_metadata", "lexical_share"]

_RECORD_FIELDS = frozenset(MemoryRecord.model_fields) - {"id", "body"}


@dataclass(frozen=True)
class Candidate:
    """One result of a wrapped retriever: a stable id, its text, its metadata, its native score."""

    id: str | None
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    native_score: float | None = None


@dataclass(frozen=True)
class WrappedResult:
    """The gate result plus, for each accepted id, the candidate it came from."""

    result: GateResult
    accepted: tuple[tuple[Candidate, Hit], ...]


def lexical_share(
    query_tokens: Sequence[str], text: str, *, stats: CorpusStats | None = None
) -> float:
    """The lexical score of one text (IDF-weighted share of distinct query terms, in [0, 1]).

    Args:
        query_tokens: tokens of the query.
        text: the document's text (title and body).
        stats: corpus statistics for the IDF; default: a corpus of this one text (every present
            term then weighs the same, and absent terms more).
    """
    doc = frozenset(tokenize(text))
    return lexical_scores(query_tokens, [doc], stats=stats or CorpusStats.of_doc_sets([doc]))[0]


_LIST_FIELDS = ("tags", "supersedes")


def _flat(cand: Candidate) -> dict[str, Any]:
    """The seeds' flat hit shape from a candidate's metadata (unknown keys are ignored).

    A candidate without an id gets none, so the gate rejects it as ``invalid``. Vector stores
    that only hold scalar metadata (Chroma) keep lists as JSON strings: they are decoded here.
    """
    flat = {k: v for k, v in cand.metadata.items() if k in _RECORD_FIELDS}
    for key in _LIST_FIELDS:
        value = flat.get(key)
        if isinstance(value, str) and value.startswith("["):
            # left as is when not JSON: the gate then rejects the hit as invalid
            with contextlib.suppress(ValueError):
                flat[key] = json.loads(value)
    if cand.id is not None and str(cand.id).strip():
        flat["id"] = cand.id
    flat["body"] = cand.text
    return flat


def gate_candidates(
    query: str,
    channels: Sequence[Sequence[Candidate]],
    *,
    scope: Scope | Mapping[str, Any] | None,
    gate: RecallGate,
    names: Sequence[str] | None = None,
    weights: Sequence[float] | None = None,
    fusion: FusionConfig | None = None,
    embedder: Any = None,
    score_key: str | None = None,
    lexical_key: str | None = None,
    lexical_stats: CorpusStats | None = None,
    dry_run: bool = False,
    k: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> WrappedResult:
    """Fuse the channels by id, score, build hits from metadata and run the recall gate.

    Args:
        query: the query text.
        channels: each wrapped retriever's candidates, best first.
        scope: the query's scope (required, R1).
        gate: the recall gate to apply.
        names: channel names (default ``retriever_0``, ``retriever_1``, ...).
        weights: channel weights for fusion (default all 1.0); really applied.
        fusion: fusion settings (RRF by default).
        embedder: an :class:`~shared_core.embedding.Embedder`; when given, the semantic score is the
            cosine between the query and each candidate's text.
        score_key: metadata key holding a similarity in [-1, 1] (used when no ``embedder``).
        lexical_key: metadata key holding a keyword score in [0, 1] to use instead of the lexical
            score the core computes (e.g. scores exported from another system).
        lexical_stats: corpus statistics for the lexical score's IDF (default: the candidate
            pool of this call; see the module docstring).
        dry_run: mark the run as a preview (R10).
        k: at most ``k`` accepted (overrides ``max_hits`` for this call).
        extra: text-free fields for the audit record.

    A candidate without an id is rejected as ``invalid`` (fusing by page content would merge two
    memories that happen to share a text); an id listed twice by one retriever is two hits, and
    the gate rejects the second as ``invalid``. The same id from two retrievers is one memory.
    """
    scope_obj = coerce_scope(scope)  # fail fast: no scope, no retrieval work (R1)
    cfg_fusion = fusion or FusionConfig()
    names = list(names or [f"retriever_{i}" for i in range(len(channels))])
    ws = list(weights or [1.0] * len(channels))
    first: dict[str, Candidate] = {}
    unidentified: list[Candidate] = []
    repeated: list[Candidate] = []
    results = []
    for name, chan in zip(names, channels, strict=True):
        ids: list[str] = []
        scores: list[float] = []
        seen_here: set[str] = set()
        for pos, cand in enumerate(chan):
            if cand.id is None or not str(cand.id).strip():
                unidentified.append(cand)
                continue
            if cand.id in seen_here:
                repeated.append(cand)
                continue
            seen_here.add(cand.id)
            first.setdefault(cand.id, cand)
            ids.append(cand.id)
            ns = cand.native_score
            scores.append(float(ns) if isinstance(ns, (int, float)) and np.isfinite(ns) else 1.0 / (pos + 1))
        results.append(ChannelResult(name, ids, scores))
    fused = fuse(results, dict(zip(names, ws, strict=True)), cfg_fusion)

    q_tokens = tokenize(query)
    cands = [first[item.id] for item in fused]
    semantic: list[float | None] = [None] * len(cands)
    if embedder is not None and cands:
        qv = embedder.embed_query(query)
        dv = embedder.embed_documents([c.text for c in cands])
        semantic = [float(np.clip(v @ qv, -1.0, 1.0)) for v in dv]
    elif score_key is not None:
        semantic = [c.metadata.get(score_key) for c in cands]  # validated by the gate

    def doc_set(cand: Candidate) -> frozenset[str]:
        title = cand.metadata.get("title")
        text = f"{title}\n{cand.text}" if isinstance(title, str) and title else cand.text
        return frozenset(tokenize(text))

    pool = [doc_set(c) for c in cands]
    others = [doc_set(c) for c in (*repeated, *unidentified)]
    stats = lexical_stats or CorpusStats.of_doc_sets(pool)
    lex_values = lexical_scores(q_tokens, [*pool, *others], stats=stats) if lexical_key is None else []

    def lexical(cand: Candidate, position: int) -> object:
        if lexical_key is not None:
            return cand.metadata.get(lexical_key)  # validated by the gate
        return lex_values[position]

    flats: list[dict[str, Any]] = []
    for rank, (item, cand, sem) in enumerate(zip(fused, cands, semantic, strict=True), start=1):
        flat = _flat(cand)
        flat.update(
            score=sem,
            lexical_score=lexical(cand, rank - 1),
            fused_score=item.fused_score,
            fused_rank=rank,
            channels=tuple(item.ranks),
            channel_ranks=dict(item.ranks),
            vector_rank=item.ranks.get("vector"),
            keyword_rank=item.ranks.get("keyword"),
        )
        flats.append(flat)
    for offset, cand in enumerate((*repeated, *unidentified)):
        flat = _flat(cand)
        flat.update(
            score=cand.metadata.get(score_key) if score_key else None,
            lexical_score=lexical(cand, len(cands) + offset),
        )
        flats.append(flat)

    cfg = gate.config_for(scope_obj)
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InputError("k must be a positive integer")
        cfg = cfg.replace(max_hits=k)
    result = gate.evaluate(flats, scope=scope_obj, query=query, dry_run=dry_run, config=cfg, extra=extra)
    by_id = {c.id: c for c in cands}
    accepted = tuple((by_id[h.record.id], h) for h in result.accepted if h.record.id in by_id)
    return WrappedResult(result=result, accepted=accepted)


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """Provenance of an accepted hit, for an adapter to put into its document's metadata (R12)."""
    return {"id": hit.record.id, **hit.provenance()}
