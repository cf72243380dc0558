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

A scope sees several partitions (its private bucket and the shared one), each indexed on its own.
Raw BM25 from separately indexed partitions is not comparable: each has its own N, IDF and average
length, so a one-memory shared partition gives its memory a huge IDF for every query term and
outranks equally matching private memories. :func:`top_across` therefore scores the partitions
of a scope as ONE corpus, with the statistics of their union (:class:`CorpusStats`,
:func:`union_stats`), over each partition's postings; with a single non-empty partition that is
its own index, unchanged.

The gate does not threshold on raw BM25 (unbounded). :func:`lexical_scores` gives the **bounded**
keyword score of DESIGN "Scores", the ONE definition every path uses (the store's hybrid search
and the wrapped-retriever path alike): the IDF-weighted share of the distinct query terms a memory
contains, in ``[0, 1]``, with Lucene's IDF from the statistics of the documents the memory was
retrieved from (the scope's partitions for the store; for wrapped retrievers, the statistics the
caller gives or else the candidate pool, see :mod:`shared_core.recall.wrapped`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi

__all__ = [
    "BM25Engine",
    "BM25Partition",
    "CorpusStats",
    "LuceneBM25Okapi",
    "lexical_scores",
    "lucene_idf",
    "top_across",
    "union_stats",
]

BM25Engine = Literal["rank_bm25", "bm25s"]
K1 = 0.9
B = 0.4


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 IDF: always positive, defined for an empty partition."""
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


@dataclass(frozen=True)
class CorpusStats:
    """The corpus statistics BM25 and the lexical share are computed from.

    Attributes:
        n_docs: number of documents.
        df: document frequency per term.
        total_len: sum of the documents' lengths in tokens (an empty document counts 1, as the
            index gives it one empty token).
    """

    n_docs: int
    df: Mapping[str, int] = field(default_factory=dict)
    total_len: int = 0

    @property
    def avgdl(self) -> float:
        """Average document length (1.0 for an empty corpus)."""
        return self.total_len / self.n_docs if self.n_docs else 1.0

    @classmethod
    def of_doc_sets(cls, doc_sets: Sequence[frozenset[str]]) -> CorpusStats:
        """Statistics of documents given as token sets (lengths are the set sizes)."""
        df: Counter[str] = Counter()
        for ds in doc_sets:
            df.update(ds)
        return cls(n_docs=len(doc_sets), df=df, total_len=sum(max(1, len(ds)) for ds in doc_sets))


def union_stats(stats: Iterable[CorpusStats], *, terms: Iterable[str] | None = None) -> CorpusStats:
    """The statistics of the union of disjoint corpora (documents, frequencies and lengths add up).

    Args:
        stats: the statistics of each corpus.
        terms: keep document frequencies of these terms only (a query's terms: merging whole
            vocabularies per query would cost more than the search). ``None``: every term.
    """
    parts = list(stats)
    if len(parts) == 1 and terms is None:
        return parts[0]
    wanted = None if terms is None else set(terms)
    df: Counter[str] = Counter()
    n = total = 0
    for st in parts:
        n += st.n_docs
        total += st.total_len
        if wanted is None:
            df.update(st.df)
        else:
            df.update({t: st.df[t] for t in wanted if t in st.df})
    return CorpusStats(n_docs=n, df=df, total_len=total)


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
        self._tokens = tokens
        self._postings: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] | None = None
        # rank-bm25 divides by the average length: give empty documents one empty token.
        self.doc_len = np.fromiter((max(1, len(t)) for t in tokens), dtype=np.float64, count=len(tokens))
        self.stats = CorpusStats(n_docs=len(self.ids), df=self.df, total_len=int(self.doc_len.sum()))
        if not self.ids:
            return
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
        return _top(self.scores(query_tokens), k)

    def postings(self) -> dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]:
        """Term -> (document indices, term frequencies): the index's, or built once from the tokens."""
        if isinstance(self._index, LuceneBM25Okapi):
            own: dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]] = self._index._postings
            return own
        if self._postings is None:
            rows: dict[str, list[int]] = {}
            tfs: dict[str, list[float]] = {}
            for i, toks in enumerate(self._tokens):
                for term, tf in Counter(toks).items():
                    rows.setdefault(term, []).append(i)
                    tfs.setdefault(term, []).append(float(tf))
            self._postings = {
                t: (np.asarray(rows[t], dtype=np.int64), np.asarray(tfs[t], dtype=np.float64)) for t in rows
            }
        return self._postings

    def scores_with(self, query_tokens: Sequence[str], stats: CorpusStats) -> NDArray[np.float64]:
        """Okapi BM25 (Lucene IDF, ``K1``, ``B``) of every memory with corpus statistics ``stats``.

        ``stats`` are those of a corpus this partition is part of (e.g. :func:`union_stats` of a
        scope's partitions), so that scores of several partitions are comparable. With the
        partition's own ``stats`` this equals :meth:`scores`.
        """
        out = np.zeros(len(self.ids))
        if not self.ids or not query_tokens:
            return out
        postings = self.postings()
        norm = K1 * (1 - B + B * self.doc_len / stats.avgdl)
        for q in query_tokens:
            posting = postings.get(q)
            if posting is None:
                continue
            docs, tf = posting
            idf = lucene_idf(stats.n_docs, int(stats.df.get(q, 0)))
            out[docs] += idf * (tf * (K1 + 1) / (tf + norm[docs]))
        return out


def _top(s: NDArray[np.float64], k: int) -> list[tuple[int, float]]:
    if s.size == 0 or k < 1:
        return []
    k = min(k, s.size)
    idx = np.argpartition(-s, k - 1)[:k]
    idx = idx[np.argsort(-s[idx], kind="stable")]
    return [(int(i), float(s[i])) for i in idx if s[i] > 0.0]


def top_across(
    partitions: Sequence[BM25Partition], query_tokens: Sequence[str], k: int
) -> list[tuple[int, int, float]]:
    """The best ``k`` memories of several partitions, scored as one corpus (H1).

    Every partition is scored with the statistics of their union (:func:`union_stats`), so a
    memory's score does not depend on which partition holds it. With at most one non-empty
    partition its own index is used (same statistics, and the ``bm25s`` engine's speed).

    Returns:
        ``(partition index, memory index, raw score)`` triples, best first (ties: partition
        order, then memory order), positive scores only.
    """
    nonempty = [i for i, p in enumerate(partitions) if len(p)]
    if not nonempty or not query_tokens:
        return []
    if len(nonempty) == 1:
        pi = nonempty[0]
        return [(pi, i, s) for i, s in partitions[pi].top(query_tokens, k)]
    stats = union_stats((partitions[i].stats for i in nonempty), terms=query_tokens)
    found: list[tuple[int, int, float]] = []
    for pi in nonempty:
        found.extend((pi, i, s) for i, s in _top(partitions[pi].scores_with(query_tokens, stats), k))
    found.sort(key=lambda x: (-x[2], x[0], x[1]))
    return found[:k]


def lexical_scores(
    query_tokens: Sequence[str],
    doc_sets: Sequence[frozenset[str]],
    *,
    n_docs: int | None = None,
    df: Mapping[str, int] | None = None,
    stats: CorpusStats | None = None,
) -> list[float]:
    """Bounded keyword score per document: IDF-weighted share of distinct query terms present.

    The one lexical score of the project (DESIGN "Scores"): ``sum(idf(t) for query terms t in the
    document) / sum(idf(t) for all query terms)``, Lucene IDF. A rare term (an error code, a
    ticket id, a name) weighs more than a common word; a query term absent from the corpus still
    counts in the denominator (with the highest IDF), so a memory matching half a query scores
    below one matching all of it.

    Args:
        query_tokens: tokens of the query (:func:`shared_core.text.tokenize`).
        doc_sets: the token set of each scored document.
        n_docs: number of documents the IDF statistics come from (with ``df``).
        df: document frequency per term over those documents.
        stats: the statistics as one object (instead of ``n_docs`` and ``df``).

    Returns:
        One value in ``[0, 1]`` per document (``0.0`` for an empty query).
    """
    if stats is not None:
        n_docs, df = stats.n_docs, stats.df
    if n_docs is None or df is None:
        raise TypeError("lexical_scores needs stats=, or n_docs= and df=")
    terms = set(query_tokens)
    if not terms:
        return [0.0] * len(doc_sets)
    weights = {t: lucene_idf(n_docs, int(df.get(t, 0))) for t in terms}
    total = sum(weights.values())
    out = []
    for ds in doc_sets:
        got = sum(w for t, w in weights.items() if t in ds)
        out.append(min(1.0, got / total) if total > 0 else 0.0)
    return out
