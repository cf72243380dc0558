"""Embedding cache of the evaluation: vectors keyed by the embedding and the exact texts.

Embedding a corpus (5,183 SciFact abstracts, 4,431 LoCoMo turns) takes minutes on two cores; the
vectors are cached as ``.npy`` files so that reruns skip the model. The key is the embedding's
name, dimension and ``max_length`` plus a hash of every text, so a changed text or model never
reuses stale vectors. Caching is an optimisation only: an unwritable or damaged cache is ignored.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["CachedEmbedder", "cached_vectors", "embedding_cache_path"]


def _cache_dir(cache_dir: str | Path | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("RECALL_GATE_EVAL_CACHE")
    return Path(env) if env else Path(tempfile.gettempdir()) / "recall-gate-eval-cache"


def _texts_key(texts: Sequence[str], extra: str) -> str:
    h = hashlib.sha256(extra.encode("utf-8"))
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def embedding_cache_path(embedder: Any, texts: Sequence[str], cache_dir: str | Path | None = None) -> Path:
    """Where the vectors of ``texts`` under ``embedder`` are cached (keyed by model and exact texts)."""
    extra = f"{embedder.name}|{embedder.dimension}|{getattr(embedder, 'max_length', '')}"
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(embedder.name))
    return _cache_dir(cache_dir) / f"{safe}-{_texts_key(texts, extra)}.npy"


def cached_vectors(
    embedder: Any, texts: Sequence[str], *, cache_dir: str | Path | None = None, progress: bool = False
) -> NDArray[np.float32]:
    """The vectors of ``texts`` under ``embedder``: from the cache, or embedded once and cached.

    Args:
        embedder: an :class:`~shared_core.embedding.Embedder`.
        texts: the texts, in order.
        cache_dir: the cache folder (default: ``$RECALL_GATE_EVAL_CACHE`` or a temp folder).
        progress: show a tqdm progress bar on stderr.
    """
    from tqdm import tqdm

    path = embedding_cache_path(embedder, texts, cache_dir)
    dim = int(embedder.dimension)
    if path.exists():
        try:
            arr: NDArray[np.float32] = np.load(path)
            if arr.shape == (len(texts), dim) and np.isfinite(arr).all():
                return arr.astype(np.float32, copy=False)
        except (OSError, ValueError):
            pass  # a damaged cache file is recomputed
    out = np.empty((len(texts), dim), dtype=np.float32)
    step = 256
    with tqdm(total=len(texts), desc="embed", unit="doc", disable=not progress, file=sys.stderr) as bar:
        for start in range(0, len(texts), step):
            chunk = list(texts[start : start + step])
            out[start : start + len(chunk)] = embedder.embed_documents(chunk)
            bar.update(len(chunk))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(tmp, out)
        os.replace(tmp, path)
    except OSError:
        pass  # caching is an optimisation only
    return out


class CachedEmbedder:
    """An :class:`~shared_core.embedding.Embedder` that answers known texts from a table.

    Evaluation runs embed the same corpus and the same queries again and again; this wrapper
    returns the cached vector of a text it was given (:meth:`remember`) and asks the wrapped
    model for any other text, so results are those of the model, only faster. ``name``,
    ``dimension`` and ``recommended_min_score`` are the wrapped model's.
    """

    def __init__(self, embedder: Any) -> None:
        self.inner = embedder
        self._table: dict[str, NDArray[np.float32]] = {}

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return str(self.inner.name)

    @property
    def dimension(self) -> int:
        """The wrapped model's dimension."""
        return int(self.inner.dimension)

    @property
    def max_length(self) -> object:
        """The wrapped model's ``max_length`` (part of the cache key), if it has one."""
        return getattr(self.inner, "max_length", "")

    def __getattr__(self, attr: str) -> Any:
        # recommended_min_score and other calibrated values of the wrapped model
        if attr.startswith("recommended_") or attr == "calibration":
            return getattr(self.inner, attr)
        raise AttributeError(attr)

    def remember(self, texts: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Register the vectors of ``texts`` (rows aligned with the texts)."""
        for text, vec in zip(texts, vectors, strict=True):
            self._table[text] = np.asarray(vec, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Cached vectors where known, the model's for the rest."""
        items = list(texts)
        missing = [t for t in dict.fromkeys(items) if t not in self._table]
        if missing:
            self.remember(missing, self.inner.embed_documents(missing))
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        return np.stack([self._table[t] for t in items])

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """The cached vector of ``text``, else the model's query embedding."""
        vec = self._table.get(text)
        if vec is None:
            vec = self._table[text] = np.asarray(self.inner.embed_query(text), dtype=np.float32)
        return vec
