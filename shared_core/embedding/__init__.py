"""Embeddings: the offline default (all-MiniLM-L6-v2 int8), an offline multilingual extra, adapters.

Every embedding carries the thresholds measured for it (:class:`~shared_core.config.ScoreCalibration`,
DESIGN "Scores"): :func:`calibration_of` reads them, and the store hands them to its recall gate.
"""

from __future__ import annotations

from .adapters import as_embedder
from .calibration import calibration_of
from .minilm import MiniLMEmbedding, default_embedding
from .multilingual import UniversalSentenceEncoder
from .protocol import Embedder

__all__ = [
    "Embedder",
    "MiniLMEmbedding",
    "UniversalSentenceEncoder",
    "as_embedder",
    "calibration_of",
    "default_embedding",
]
