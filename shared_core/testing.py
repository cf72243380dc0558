"""Test doubles for users of recall-gate (and for its own tests).

* :class:`FrozenClock` — a clock that stands still until you move it.
* :func:`capture_audit` — collect the audit records emitted inside a ``with`` block.
* :class:`HashEmbedding` — a deterministic, dependency-free embedding for tests that are about
  gating, not about embeddings: a signed feature-hashing bag of BM25 tokens, L2-normalised, so
  texts sharing words are close and the same text always gives the same vector.
* :func:`make_record` / :func:`make_hit` — records and hits with sensible defaults.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from .audit import capture_audit
from .model import Hit, MemoryRecord
from .text import tokenize
from .timeutil import to_utc

__all__ = ["FrozenClock", "HashEmbedding", "capture_audit", "make_hit", "make_record"]


class FrozenClock:
    """A clock for tests: returns the same aware UTC instant until advanced.

    Example:
        >>> clock = FrozenClock("2026-07-13T10:00:00Z")
        >>> clock.advance(days=91)
    """

    def __init__(self, at: datetime | str = "2026-07-13T00:00:00+00:00") -> None:
        self.now = to_utc(datetime.fromisoformat(at.replace("Z", "+00:00")) if isinstance(at, str) else at)

    def __call__(self) -> datetime:
        """The frozen instant."""
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)`` and return the new instant."""
        self.now = self.now + timedelta(**delta)
        return self.now


class HashEmbedding:
    """Deterministic feature-hashing embedding (no model, no network).

    Args:
        dimension: vector size.
    """

    def __init__(self, dimension: int = 256) -> None:
        self.dimension = dimension
        self.name = f"hash-embedding-{dimension}"

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float32)
        for token in tokenize(text) or ["<empty>"]:
            digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            vec[value % self.dimension] += 1.0 if (value >> 63) & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:
            vec[0] = 1.0
            norm = 1.0
        return vec / norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: shape ``(n, dimension)``, rows L2-normalised."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        """Embed a query: shape ``(dimension,)``, L2-normalised."""
        return self._vector(text)


_DEFAULT_TIME = datetime(2026, 7, 1, tzinfo=timezone.utc)


def make_record(id: str = "m1", **fields: Any) -> MemoryRecord:
    """A valid approved, confirmed, private record in scope ``u1/a1/s1``; override any field."""
    base: dict[str, Any] = {
        "id": id,
        "title": f"title {id}",
        "body": f"body of {id}",
        "user_id": "u1",
        "agent_id": "a1",
        "memory_space_id": "s1",
        "updated_at": _DEFAULT_TIME,
    }
    base.update(fields)
    return MemoryRecord.model_validate(base)


def make_hit(id: str = "m1", *, score: float | None = 0.9, **fields: Any) -> Hit:
    """A hit on :func:`make_record` with semantic ``score``; ``fields`` go to the record or hit."""
    hit_keys = {
        "lexical_score",
        "vector_rank",
        "keyword_rank",
        "bm25_score",
        "fused_score",
        "fused_rank",
        "channels",
    }
    hit_fields = {k: fields.pop(k) for k in list(fields) if k in hit_keys}
    return Hit(record=make_record(id, **fields), score=score, **hit_fields)
