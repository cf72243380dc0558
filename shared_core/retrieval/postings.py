"""An immutable BM25 snapshot over postings: what a partition view ranks with (H1).

:class:`PostingsBM25` has the interface of :class:`~.bm25.BM25Partition` (``scores``,
``scores_with``, ``top``, ``stats``, ``df``, ``doc_sets``) and reproduces rank-bm25's
``LuceneBM25Okapi`` scores term by term with the same floating-point expression. It is written
here rather than taken from rank-bm25 because rank-bm25 has no incremental index: the postings of
:class:`~.partition.Partition` are changed in place per memory, and a snapshot scores them as
they are (tested bit for bit against ``BM25Partition`` under random writes and deletes).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from .bm25 import K1, B, BM25Engine, CorpusStats, lucene_idf

__all__ = ["EMPTY_TOKEN", "Postings", "PostingsBM25", "Room", "append_postings"]

Postings = dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]
"""term -> (rows holding it, its frequency in each)."""

Room = dict[str, tuple[NDArray[np.int64], NDArray[np.float64]]]
"""term -> buffers with room to grow whose filled start is that term's postings."""

EMPTY_TOKEN = ""  # rank-bm25 divides by the average length: an empty memory gets one empty token


class _Row(Protocol):
    def token_set(self) -> frozenset[str]: ...


class _DocSets(Sequence[frozenset[str]]):
    """Token sets of a view's memories, computed for the rows a query asks about only."""

    def __init__(self, rows: Sequence[_Row]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [r.token_set() for r in self._rows[i]]
        return self._rows[i].token_set()


class _DocFreq(Mapping[str, int]):
    """Document frequency per term, read from a postings snapshot."""

    def __init__(self, postings: Mapping[str, tuple[NDArray[np.int64], NDArray[np.float64]]]) -> None:
        self._p = postings

    def __getitem__(self, term: str) -> int:
        if term == EMPTY_TOKEN or term not in self._p:
            raise KeyError(term)
        return int(self._p[term][0].size)

    def __contains__(self, term: object) -> bool:
        return term != EMPTY_TOKEN and term in self._p

    def __iter__(self) -> Iterator[str]:
        return (t for t in self._p if t != EMPTY_TOKEN)

    def __len__(self) -> int:
        return len(self._p) - (1 if EMPTY_TOKEN in self._p else 0)


class PostingsBM25:
    """An immutable BM25 snapshot over postings (the interface of ``BM25Partition``).

    Scores are rank-bm25's ``LuceneBM25Okapi`` scores, computed the same way (see module docstring).
    """

    def __init__(
        self,
        ids: Sequence[str],
        rows: Sequence[_Row],
        postings: Mapping[str, tuple[NDArray[np.int64], NDArray[np.float64]]],
        doc_len: NDArray[np.float64],
        total_len: int,
    ) -> None:
        self.ids = ids
        self.engine: BM25Engine = "rank_bm25"
        self._postings = postings
        self._doc_len = doc_len
        self._total = total_len
        self._norm: NDArray[np.float64] | None = None
        self.doc_sets: Sequence[frozenset[str]] = _DocSets(rows)
        self.df: Mapping[str, int] = _DocFreq(postings)
        self.stats = CorpusStats(n_docs=len(ids), df=self.df, total_len=total_len)

    def __len__(self) -> int:
        return len(self.ids)

    def scores(self, query_tokens: Sequence[str]) -> NDArray[np.float64]:
        """Raw BM25 score of every memory in the partition (unbounded, >= 0)."""
        n = len(self.ids)
        if not n or not query_tokens:
            return np.zeros(n)
        if self._norm is None:
            avgdl = self._total / n
            self._norm = K1 * (1 - B + B * self._doc_len / avgdl)
        norm = self._norm
        score = np.zeros(n)
        for q in query_tokens:
            posting = self._postings.get(q)
            if posting is None:
                continue
            docs, tf = posting
            idf = lucene_idf(n, int(docs.size))
            score[docs] += idf * (tf * (K1 + 1) / (tf + norm[docs]))
        return score

    def scores_with(self, query_tokens: Sequence[str], stats: CorpusStats) -> NDArray[np.float64]:
        """BM25 of every memory with the statistics ``stats`` of a corpus this partition is part of.

        The same expression as ``BM25Partition.scores_with`` (a scope's partitions scored as one
        corpus, H1); with the partition's own ``stats`` it equals :meth:`scores`.
        """
        n = len(self.ids)
        out = np.zeros(n)
        if not n or not query_tokens:
            return out
        norm = K1 * (1 - B + B * self._doc_len / stats.avgdl)
        for q in query_tokens:
            posting = self._postings.get(q)
            if posting is None:
                continue
            docs, tf = posting
            idf = lucene_idf(stats.n_docs, int(stats.df.get(q, 0)))
            out[docs] += idf * (tf * (K1 + 1) / (tf + norm[docs]))
        return out

    def top(self, query_tokens: Sequence[str], k: int) -> list[tuple[int, float]]:
        """Indices and raw scores of the best ``k`` memories with a positive score."""
        s = self.scores(query_tokens)
        if s.size == 0:
            return []
        k = min(k, s.size)
        idx = np.argpartition(-s, k - 1)[:k]
        idx = idx[np.argsort(-s[idx], kind="stable")]
        return [(int(i), float(s[i])) for i in idx if s[i] > 0.0]


def append_postings(post: Postings, room: Room, pending: Mapping[str, tuple[list[int], list[float]]]) -> None:
    """Append ``pending`` rows (term -> rows, frequencies) to ``post``, in place.

    Views share the postings arrays, so an array a view holds is never changed. A term seen again
    gets buffers with room (twice what it needs): its postings are the filled start of them, later
    rows are written after the end any view holds, then the postings re-sliced. A term whose
    postings are replaced some other way (a removal, a renumbering) must leave ``room``. A batch
    used to copy the whole postings of each of its terms (its common words' grow with the
    partition: 0.2 -> 0.5 ms a memory from 1,000 to 15,000 memories); now a term's rows are copied
    only when its room runs out, amortised constant time per row.
    """
    for term, (rows, tfs) in pending.items():
        got = post.get(term)
        if got is None:  # most terms are rare: exact arrays, no room
            post[term] = (np.array(rows, dtype=np.int64), np.array(tfs, dtype=np.float64))
            continue
        n, k = got[0].size, len(rows)
        buffers = room.get(term)
        if buffers is None or buffers[0].size < n + k:
            buffers = (np.empty(2 * (n + k), dtype=np.int64), np.empty(2 * (n + k), dtype=np.float64))
            buffers[0][:n], buffers[1][:n] = got
            room[term] = buffers
        buffers[0][n : n + k] = rows
        buffers[1][n : n + k] = tfs
        post[term] = (buffers[0][: n + k], buffers[1][: n + k])
