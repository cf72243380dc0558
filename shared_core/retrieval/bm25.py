"""BM25 over one scope partition, with a bounded lexical score for the gate (H1, H4).

Two engines behind one small interface:

* ``rank_bm25`` (default, as the users asked): :class:`rank_bm25.BM25Okapi` with the IDF replaced by
  Lucene's ``log(1 + (N - n + 0.5) / (n + 0.5))``. rank-bm25's own Okapi IDF is
  ``log((N - n + 0.5) / (n + 0.5))``, which is zero for a term in half the documents and negative
  (floored) above that, so a two-memory partition scores 0 for a word found in one of them; the
  Lucene form is always positive. ``k1 = 0.9, b = 0.4`` (Anserini's defaults, measured best on
  SciFact in FACTS.md). Scoring is a Python loop over the partition per query term: fine for the
  hundreds to few thousands of memories a scope usually holds.
* ``bm25s`` (optional extra ``recall-gate[bm25s]``): sparse-matrix scoring, much faster on large
  partitions, but it has no incremental add (we rebuild a partition's index lazily after writes
  anyway). Same Lucene IDF (``method="lucene"``) and parameters.

The gate does not threshold on raw BM25 (unbounded). :meth:`BM25Partition.lexical_scores` gives the
**bounded** keyword score of DESIGN "Scores": the IDF-weighted share of distinct query terms a memory
contains, in ``[0, 1]``, with IDF from the same partition statistics.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi

__all__ = ["BM25Engine", "BM25Partition", "LuceneBM25Okapi", "lexical_scores", "lucene_idf"]

BM25Engine = Literal["rank_bm25", "bm25s"]
K1 = 0.9
B = 0.4


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 IDF: always positive, defined for an empty partition."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


class LuceneBM25Okapi(BM25Okapi):  # type: ignore[misc]
    """rank-bm25's Okapi BM25 with Lucene's IDF, scored over postings (see module docstring).

    rank-bm25 builds the statistics (term frequencies per document, document lengths, average
    length) and we keep its formula; but its ``get_scores`` walks every document in Python for
    each query term (~10 ms for 5k memories). We build postings (term -> documents, term
    frequencies) once from rank-bm25's own ``doc_freqs`` and add the same per-term contribution
    to the documents that contain the term only: identical scores (tested against the plain
    loop), cost proportional to the postings of the query's terms.
    """

    def __init__(self, corpus: Sequence[Sequence[str]], *, k1: float = K1, b: float = B) -> None:
        super().__init__(corpus, k1=k1, b=b)
        doc_len = np.asarray(self.doc_len, dtype=np.float64)
        self._norm = self.k1 * (1 - self.b + self.b * doc_len / self.avgdl)
        rows: dict[str, list[int]] = {}
        tfs: dict[str, list[float]] = {}
        for i, freqs in enumerate(self.doc_freqs):
            for term, tf in freqs.items():
                rows.setdefault(term, []).append(i)
                tfs.setdefault(term, []).append(float(tf))
        self._postings = {
            t: (np.asarray(rows[t], dtype=np.int64), np.asarray(tfs[t], dtype=np.float64)) for t in rows
        }

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {word: lucene_idf(self.corpus_size, freq) for word, freq in nd.items()}

    def get_scores(self, query: Sequence[str]) -> NDArray[np.float64]:
        """Scores of every document; terms absent from the partition contribute nothing."""
        score = np.zeros(self.corpus_size)
        for q in query:
            posting = self._postings.get(q)
            if posting is None:
                continue
            docs, tf = posting
            score[docs] += self.idf[q] * (tf * (self.k1 + 1) / (tf + self._norm[docs]))
        return score

    def get_scores_reference(self, query: Sequence[str]) -> NDArray[np.float64]:
        """The same scores by rank-bm25's per-document loop (kept to test the postings path)."""
        score = np.zeros(self.corpus_size)
        for q in query:
            idf = self.idf.get(q)
            if idf is None:
                continue
            q_freq = np.array([doc.get(q, 0) for doc in self.doc_freqs], dtype=np.float64)
            score += idf * (q_freq * (self.k1 + 1) / (q_freq + self._norm))
        return score


class BM25Partition:
    """A BM25 index over the memories of one partition, built from their token lists.

    Args:
        ids: memory ids, aligned with ``tokens``.
        tokens: the tokens of each memory (see :func:`shared_core.text.tokenize`).
        engine: ``"rank_bm25"`` (default) or ``"bm25s"``.
    """

    def __init__(
        self, ids: Sequence[str], tokens: Sequence[Sequence[str]], *, engine: BM25Engine = "rank_bm25"
    ) -> None:
        self.ids = list(ids)
        self.engine = engine
        self.doc_sets = [frozenset(t) for t in tokens]
        self.df: Counter[str] = Counter()
        for s in self.doc_sets:
            self.df.update(s)
        self._index: Any = None
        if not self.ids:
            return
        # rank-bm25 divides by the average length: give empty documents one empty token.
        corpus = [list(t) if t else [""] for t in tokens]
        if engine == "rank_bm25":
            self._index = LuceneBM25Okapi(corpus, k1=K1, b=B)
        elif engine == "bm25s":
            import bm25s

            retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
            retriever.index(corpus, show_progress=False)
            self._index = retriever
        else:  # pragma: no cover - guarded by the Literal type and the store
            raise ValueError(f"unknown BM25 engine {engine!r}")

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query_tokens: Sequence[str]) -> NDArray[np.float64]:
        """Raw BM25 score of every memory in the partition (unbounded, >= 0)."""
        if not self.ids or not query_tokens:
            return np.zeros(len(self.ids))
        if self.engine == "rank_bm25":
            return np.asarray(self._index.get_scores(list(query_tokens)), dtype=np.float64)
        vocab = self._index.vocab_dict
        ids = [vocab[t] for t in query_tokens if t in vocab]
        if not ids:
            return np.zeros(len(self.ids))
        return np.asarray(self._index.get_scores(ids), dtype=np.float64)

    def top(self, query_tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Indices and raw scores of the best ``k`` memories with a positive score."""
        s = self.scores(query_tokens)
        if s.size == 0:
            return []
        k = min(k, s.size)
        idx = np.argpartition(-s, k - 1)[:k]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0.0]


def lexical_scores(
    query_tokens: Sequence[str], doc_sets: Sequence[frozenset[str]], *, n_docs: int, df: Counter[str]
) -> list[float]:
    """Bounded keyword score per document: IDF-weighted share of distinct query terms present.

    Args:
        query_tokens: tokens of the query.
        doc_sets: the token set of each scored document.
        n_docs: number of documents the IDF statistics come from.
        df: document frequency per term over those documents.

    Returns:
        One value in ``[0, 1]`` per document (``0.0`` for an empty query).
    """
    terms = set(query_tokens)
    if not terms:
        return [0.0] * len(doc_sets)
    weights = {t: lucene_idf(n_docs, df.get(t, 0)) for t in terms}
    total = sum(weights.values())
    out = []
    for ds in doc_sets:
        got = sum(w for t, w in weights.items() if t in ds)
        out.append(min(1.0, got / total) if total > 0 else 0.0)
    return out
