"""Per-query overhead of the LlamaIndex ``GatedRetriever`` over the bare retriever(s) it wraps.

Run: ``python benchmarks/llamaindex_overhead.py [--queries 400] [--docs 1000]``.

Data: ``--docs`` memories (in scope, approved, fresh) in a ``VectorStoreIndex`` (in-memory
``SimpleVectorStore``) built with a fixed, deterministic 64-d feature-hashing embedding; its
retriever returns 20 candidates. The query embedding is computed once per query up front and
passed in the ``QueryBundle`` (so neither side pays for embedding the query). Each configuration
is timed over the same queries after a warm-up, one ``retrieve`` per query, bare and gated
interleaved (machine load hits both alike); the figure is the p50 in microseconds, printed with the
overhead (gated - bare) and the ratio gated / bare, plus the p50 of the core ``gate.evaluate``
alone (the audit records' ``elapsed_ms``).

Configurations (the same as ``benchmarks/langchain_overhead.py``):

* ``1 retriever, lexical``: the gate thresholds on the lexical share only (no embedding);
* ``1 retriever, cosine``: ``embedding=`` the index's embedding, so every query embeds the 20
  candidates once more to get the bounded cosine (the cost a real model would multiply);
* ``2 retrievers``: the vector retriever and LlamaIndex's ``BM25Retriever`` fused by the gate;
  compared with both bare retrievers and with ``QueryFusionRetriever`` (reciprocal_rerank,
  num_queries=1, MockLLM) over the same two.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from _common import WORDS
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.schema import QueryBundle, TextNode
from llama_index.retrievers.bm25 import BM25Retriever

from llamaindex_recall_gate import GatedRetriever
from shared_core import GateConfig, RecallGate, capture_audit
from shared_core.testing import FrozenClock, HashEmbedding

SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
_HASH = HashEmbedding(64)


class FixedEmbedding(BaseEmbedding):
    """A fixed, deterministic 64-d embedding (feature hashing; no model, no network)."""

    model_name: str = "hash-embedding-64"

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in _HASH.embed_query(text)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def make_nodes(n: int, seed: int = 7) -> list[TextNode]:
    rnd = random.Random(seed)
    base = {**SCOPE, "updated_at": "2026-07-01T00:00:00Z", "status": "approved", "tier": "confirmed"}
    return [
        TextNode(
            id_=f"m{i}",
            text=" ".join(rnd.choices(WORDS, k=12)),
            metadata=dict(base),
            excluded_embed_metadata_keys=list(base),
            excluded_llm_metadata_keys=list(base),
        )
        for i in range(n)
    ]


def paired_p50_us(
    bare: Callable[[QueryBundle], Any], gated: Callable[[QueryBundle], Any], queries: list[QueryBundle]
) -> tuple[float, float]:
    """p50 of bare and gated, timed interleaved per query (so machine load hits both alike)."""
    for q in queries[:20]:
        bare(q)
        gated(q)  # warm-up
    t_bare, t_gated = [], []
    for i, q in enumerate(queries):
        pair = ((bare, t_bare), (gated, t_gated))
        for fn, times in pair if i % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            fn(q)
            times.append(time.perf_counter() - t0)
    return statistics.median(t_bare) * 1e6, statistics.median(t_gated) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--docs", type=int, default=1000)
    args = parser.parse_args()

    embed = FixedEmbedding()
    rnd = random.Random(11)
    texts = [" ".join(rnd.sample(WORDS, 3)) for _ in range(args.queries)]
    queries = [QueryBundle(query_str=t, embedding=embed.get_query_embedding(t)) for t in texts]
    nodes = make_nodes(args.docs)
    index = VectorStoreIndex(nodes, embed_model=embed)
    vector = index.as_retriever(similarity_top_k=20)
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=20)
    gate = RecallGate(
        GateConfig(min_score=0.0, min_lexical_score=0.3), clock=FrozenClock("2026-07-13T00:00:00Z")
    )
    lexical = GatedRetriever(vector, gate=gate, scope=SCOPE, k=4)
    cosine = GatedRetriever(vector, gate=gate, scope=SCOPE, k=4, embed_model=embed)
    two = GatedRetriever([vector, bm25], gate=gate, scope=SCOPE, k=4)
    fusion = QueryFusionRetriever(
        [vector, bm25],
        mode="reciprocal_rerank",
        num_queries=1,
        llm=MockLLM(),
        use_async=False,
        similarity_top_k=4,
    )

    def both_bare(q: QueryBundle) -> None:
        vector.retrieve(q)
        bm25.retrieve(q)

    with capture_audit() as records:
        rows = [
            ("1 retriever, lexical", *paired_p50_us(vector.retrieve, lexical.retrieve, queries)),
            ("1 retriever, cosine", *paired_p50_us(vector.retrieve, cosine.retrieve, queries)),
            ("2 retrievers vs both bare", *paired_p50_us(both_bare, two.retrieve, queries)),
            ("2 retrievers vs QueryFusionRetriever", *paired_p50_us(fusion.retrieve, two.retrieve, queries)),
        ]
    gate_ms = statistics.median(r.elapsed_ms for r in records if r.input_count > 20)
    print(f"{args.docs} nodes, {args.queries} queries, 20 candidates per retriever, k=4; p50 per query")
    print(f"{'configuration':38} {'bare us':>10} {'gated us':>10} {'overhead us':>12} {'ratio':>7}")
    for name, bare, gated in rows:
        print(f"{name:38} {bare:10.0f} {gated:10.0f} {gated - bare:12.0f} {gated / bare:7.2f}")
    print(f"core gate.evaluate alone (audit elapsed_ms), 2 retrievers: p50 {gate_ms * 1e3:.0f} us")


if __name__ == "__main__":
    main()
