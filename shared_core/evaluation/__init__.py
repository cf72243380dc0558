"""Evaluation over labelled cases (E1): retrieval quality *and* gate safety.

A case file is JSON lines, one case per line::

    {"id": "posting-time",                      # optional case id (default: the line number)
     "query": "When do official posts go out?",
     "scope": {"user_id": "aiko", "agent_id": "writer", "memory_space_id": "brand",
               "route_id": "official"},         # route_id optional
     "expected_memory_ids": ["mem-posting-v3"], # what a perfect gate returns (may be empty)
     "must_not_return": ["mem-posting-v2"],     # stale, superseded, drafts, other users' notes ...
     "sensitive_ids": ["mem-hr-note"],          # optional: memories that must never surface
     "deleted_ids": ["mem-legacy-export"],      # optional: memories deleted before the run
     "relevance": {"mem-posting-v3": 2},        # optional: graded gains for nDCG (default 1 each)
     "note": "free text for people"}            # optional, ignored

Each case runs :meth:`MemoryStore.query <shared_core.store.MemoryStore.query>` as a dry run
(``k`` = K, so at most K memories are accepted) and is scored on the **accepted** memories, in
order. Metrics (``None`` when no case can define them):

``recall@K``
    ``|accepted ∩ expected| / |expected|``, averaged over cases with expected ids.
``precision@K``
    ``|accepted ∩ expected| / |accepted|`` (the share of what reached the model that was right),
    averaged over cases that accepted at least one memory. A gate that declines does not lose
    precision (it loses recall); a case with no expected ids that accepts anything scores 0.
``mrr``
    ``1 / rank`` of the first expected memory among the accepted ones (0 if none), averaged over
    cases with expected ids.
``ndcg@K``
    ``DCG / IDCG`` with gains 1 for expected ids (or the graded ``relevance`` of BEIR qrels) and
    ``log2(rank + 1)`` discounts; IDCG orders the expected ids ideally. Averaged over cases with
    expected ids.
``retrieval_recall@K`` / ``retrieval_ndcg@K``
    the same on the top K fused candidates *before* the gate, to show what the gate costs.
``stale_rate``
    share of all accepted memories (pooled over cases) that are out of date at the evaluation
    instant, judged from the stored records independently of the gate's rules. A memory is out
    of date when (a) ``updated_at`` is more than the scope's ``max_age_days`` before now and it
    carries none of ``freshness_exempt_tags``; or (b) it is superseded: ``superseded_by`` is set,
    another memory of its memory space lists it in ``supersedes``, or its validity window
    (``valid_from`` / ``valid_to``) does not cover now; or (c) its retention ``expires_at`` is
    past. Should be 0.
``leakage_rate``
    share of accepted memories that the query's scope may not see: another memory space or
    route, or private to another user/agent. Should be 0.
``sensitive_exposure_rate``
    share of accepted memories listed in the case's ``must_not_return`` or ``sensitive_ids``.
    Should be 0.
``deletion_propagation``
    share of the ``deleted_ids`` (of all cases) absent from Chroma, from the BM25 partitions and
    from every case's results (accepted or rejected). Should be 1.

Rates are pooled over accepted memories (micro averages) so each accepted memory counts once;
the report keeps the counts behind every rate.

BEIR: :func:`load_beir` reads ``corpus.jsonl``, ``queries.<split>.jsonl`` (or ``queries.jsonl``)
and ``qrels/<split>.tsv``; :func:`beir_store` builds an in-memory store in one scope and
:func:`beir_cases` turns the judged queries into cases (expected = qrels ids). Public benchmark
documents are loaded with the gated bulk import (``MemoryStore.import_records``) opting out of
two steps, which the audit records: ``screens`` (they are not agent memories; screening 5,000
abstracts would only measure the screens) and ``dedup`` (it would merge near-identical abstracts
that BEIR counts separately). Embeddings use the store's embedding (default: the offline MiniLM) and are cached in
a temporary folder keyed by the embedding and the exact texts, so re-runs skip the model.
"""

from __future__ import annotations

from .beir import BEIR_SCOPE, BeirData, beir_cases, beir_store, beir_texts, load_beir
from .cache import CachedEmbedder, cached_vectors, embedding_cache_path
from .cases import EvalCase, load_cases
from .command import run_eval_command
from .example import EXAMPLE_FORGET, build_example_store, example_cases_path, example_memories_path
from .exported import exported_store, read_jsonl_records
from .metrics import is_out_of_date, ndcg_at_k, precision_at_k, recall_at_k, reciprocal_rank, visible_to
from .report import CaseResult, EvalReport
from .runner import evaluate_cases, ranked_candidates

__all__ = [
    "BEIR_SCOPE",
    "EXAMPLE_FORGET",
    "BeirData",
    "CachedEmbedder",
    "CaseResult",
    "EvalCase",
    "EvalReport",
    "beir_cases",
    "beir_store",
    "beir_texts",
    "build_example_store",
    "cached_vectors",
    "embedding_cache_path",
    "evaluate_cases",
    "example_cases_path",
    "example_memories_path",
    "exported_store",
    "is_out_of_date",
    "load_beir",
    "load_cases",
    "ndcg_at_k",
    "precision_at_k",
    "ranked_candidates",
    "read_jsonl_records",
    "recall_at_k",
    "reciprocal_rank",
    "run_eval_command",
    "visible_to",
]
