"""The :class:`Embedder` protocol and the checks every embedding's output goes through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from shared_core.errors import ConfigError, EmbeddingError

__all__ = ["PROBE_TEXT", "Embedder", "check_int", "check_texts", "first_row", "normalise_rows"]

PROBE_TEXT = "dimension probe"
"""The short text an adapter embeds to learn an unknown dimension."""

@runtime_checkable
class Embedder(Protocol):
    """What recall-gate needs from an embedding model.

    Implementations return ``float32`` arrays whose rows have unit L2 norm, so that the dot product
    of a query and a document vector is their cosine similarity. ``name`` identifies the model (a
    collection built with one model must not be queried with another); ``dimension`` is the length
    of every vector.
    """

    @property
    def name(self) -> str:
        """Identifier of the model, e.g. ``"all-MiniLM-L6-v2-int8"``."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts to store.

        Args:
            texts: The texts, in order.

        Returns:
            An array of shape ``(len(texts), dimension)``, ``float32``, rows L2-normalised.
        """
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query.

        Args:
            text: The query.

        Returns:
            An array of shape ``(dimension,)``, ``float32``, L2-normalised.
        """
        ...


def normalise_rows(array: NDArray[Any], source: str) -> NDArray[np.float32]:
    """Return ``array`` with unit-norm rows as float32, rejecting non-finite and all-zero rows."""
    values = np.asarray(array, dtype=np.float64)
    finite = np.isfinite(values).all(axis=1)
    if not finite.all():
        index = int(np.flatnonzero(~finite)[0])
        raise EmbeddingError(f"{source} returned a non-finite value (NaN or infinity) in vector {index}")
    scale = np.abs(values).max(axis=1)  # scale first so that huge values cannot overflow the norm
    if not (scale > 0).all():
        index = int(np.flatnonzero(~(scale > 0))[0])
        raise EmbeddingError(f"{source} returned an all-zero vector at index {index}")
    scaled = values / scale[:, None]
    unit: NDArray[np.float32] = (scaled / np.linalg.norm(scaled, axis=1, keepdims=True)).astype(np.float32)
    return unit


def first_row(matrix: NDArray[np.float32]) -> NDArray[np.float32]:
    """The first row of a matrix (typed)."""
    row: NDArray[np.float32] = matrix[0]
    return row


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, rejecting a bare string and non-string items."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be a sequence of strings, not a single string")
    items = list(texts)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"texts[{index}] must be a str, not {type(item).__name__}")
    return items


def check_int(option: str, value: object, low: int, high: int) -> None:
    """Raise :class:`ConfigError` unless ``value`` is an int (not a bool) in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{option} must be an integer from {low} to {high}, got {value!r}")
