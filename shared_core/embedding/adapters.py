"""Adapters that turn any embedding (LangChain, LlamaIndex, Chroma, a callable) into an :class:`Embedder`."""

from __future__ import annotations

import inspect
import threading
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from shared_core.errors import ConfigError, EmbeddingError

from .minilm import MiniLMEmbedding
from .protocol import PROBE_TEXT, Embedder, check_int, check_texts, first_row, normalise_rows

__all__ = ["as_embedder"]


_Kind = Literal["langchain", "llamaindex", "chroma", "callable"]
# Module prefixes of classes never taken for a native Embedder (langchain_core, langchain_openai, ...).
_FRAMEWORK_MODULES = ("langchain", "llama_index", "chromadb")


def as_embedder(obj: object, *, name: str | None = None, dimension: int | None = None) -> Embedder:
    """Adapt an embedding model to the :class:`Embedder` protocol.

    Accepted, in this order of detection (by duck typing; no framework is imported):

    1. an :class:`Embedder` (e.g. :class:`MiniLMEmbedding`): returned as is;
    2. a LangChain ``Embeddings``: has ``embed_documents`` and ``embed_query``;
    3. a LlamaIndex embedding: has ``get_text_embedding_batch`` and ``get_query_embedding``;
    4. a Chroma ``EmbeddingFunction``: callable with a parameter named ``input`` (its
       ``embed_query`` is used for queries when it has one);
    5. a plain callable ``list[str] -> list[list[float]]``.

    An object of a LangChain, LlamaIndex or Chroma class is never taken for a native
    :class:`Embedder`, even if it happens to have ``name`` and ``dimension`` attributes.

    The adapter L2-normalises every vector and checks every result (count, equal lengths,
    numbers, finite, not all zero), raising :class:`~shared_core.errors.EmbeddingError` that names
    the problem but never the text. Its ``dimension`` is ``dimension=`` if given, else learnt from
    the first result; reading ``dimension`` before any call embeds a short probe text. An empty
    ``embed_documents`` returns shape ``(0, dimension)`` without calling the model when the
    dimension is known. Its ``name`` is ``name=``, else the object's ``model`` or ``model_name``
    attribute (a non-empty string other than ``"unknown"``), else a Chroma function's ``name()``,
    else the class name.

    Args:
        obj: The embedding model.
        name: Name to report (identifies the model in collections and audit records).
        dimension: Expected vector length; checked on every result.

    Returns:
        An :class:`Embedder`.

    Raises:
        TypeError: if ``obj`` is none of the above.
        ConfigError: if ``name`` or ``dimension`` is invalid.
        EmbeddingError: if ``obj`` is an :class:`Embedder` whose name or dimension disagrees with
            ``name=`` / ``dimension=``.
    """
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ConfigError("name must be a non-empty string")
    if dimension is not None:
        check_int("dimension", dimension, 1, 1 << 20)
    from_framework = any(
        str(getattr(cls, "__module__", "")).startswith(_FRAMEWORK_MODULES) for cls in type(obj).__mro__
    )
    if isinstance(obj, (MiniLMEmbedding, _AdaptedEmbedder)) or (
        not from_framework and isinstance(obj, Embedder)
    ):
        embedder: Embedder = obj
        if name is not None and name != embedder.name:
            raise EmbeddingError(f"name={name!r} given for embedder {embedder.name!r}")
        if dimension is not None and dimension != embedder.dimension:
            raise EmbeddingError(
                f"dimension={dimension} given for embedder {embedder.name!r} of dimension {embedder.dimension}"
            )
        return embedder
    kind = _detect_kind(obj)
    if kind is None:
        raise TypeError(
            f"cannot use {type(obj).__name__} as an embedding: expected an Embedder, a LangChain "
            "Embeddings, a LlamaIndex embedding, a Chroma EmbeddingFunction or a callable "
            "list[str] -> list[list[float]]"
        )
    return _AdaptedEmbedder(obj, kind, name=name or _name_of(obj, kind), dimension=dimension)


def _detect_kind(obj: object) -> _Kind | None:
    """Classify ``obj`` by the methods it has."""
    if _has_methods(obj, "embed_documents", "embed_query"):
        return "langchain"
    if _has_methods(obj, "get_text_embedding_batch", "get_query_embedding"):
        return "llamaindex"
    if callable(obj):
        return "chroma" if _has_parameter(obj, "input") else "callable"
    return None


def _has_methods(obj: object, *names: str) -> bool:
    return all(callable(getattr(obj, attr, None)) for attr in names)


def _has_parameter(func: object, parameter: str) -> bool:
    try:
        return parameter in inspect.signature(func).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):  # builtins and C callables may have no signature
        return False


def _name_of(obj: object, kind: _Kind) -> str:
    """Find a model name on ``obj``: ``model``/``model_name``, Chroma's ``name()``, class name."""
    for attr in ("model", "model_name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip() and value != "unknown":
            return value
    if kind == "chroma":
        name_method = getattr(obj, "name", None)
        if callable(name_method):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # Chroma warns when name() is not implemented
                    value = name_method()
            except Exception:  # a user's name() may fail; the class name will do
                value = None
            if isinstance(value, str) and value.strip():
                return value
    cls_name = type(obj).__name__
    if kind == "callable" and cls_name == "function":
        return getattr(obj, "__name__", cls_name)
    return cls_name


class _AdaptedEmbedder:
    """An :class:`Embedder` over a LangChain, LlamaIndex, Chroma or callable embedding."""

    def __init__(self, obj: object, kind: _Kind, *, name: str, dimension: int | None) -> None:
        self._obj: Any = obj
        self._kind = kind
        self._name = name
        self._dimension = dimension
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"as_embedder({type(self._obj).__name__}, kind={self._kind!r}, name={self._name!r})"

    @property
    def name(self) -> str:
        """Name of the wrapped model."""
        return self._name

    @property
    def dimension(self) -> int:
        """Vector length; if not yet known, learnt by embedding a short probe text."""
        if self._dimension is None:
            self.embed_query(PROBE_TEXT)
        if self._dimension is None:  # pragma: no cover - embed_query sets it or raises
            raise EmbeddingError(f"embedding {self._name!r} did not reveal its dimension")
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts through the wrapped model, then check and L2-normalise the vectors.

        Args:
            texts: The texts, in order.

        Returns:
            An array of shape ``(len(texts), dimension)``, ``float32``, rows L2-normalised.

        Raises:
            TypeError: if ``texts`` is a single string or holds a non-string.
            EmbeddingError: if the model's result has the wrong count or length, is not numeric,
                or holds a non-finite value or an all-zero vector.
        """
        items = check_texts(texts)
        if not items:
            return np.empty((0, self.dimension), dtype=np.float32)
        obj = self._obj
        if self._kind == "langchain":
            raw = obj.embed_documents(items)
        elif self._kind == "llamaindex":
            raw = obj.get_text_embedding_batch(items)
        elif self._kind == "chroma":
            raw = obj(input=items)
        else:
            raw = obj(items)
        return self._check(raw, rows=len(items))

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed one query through the wrapped model, then check and L2-normalise it.

        Args:
            text: The query.

        Returns:
            An array of shape ``(dimension,)``, ``float32``, L2-normalised.

        Raises:
            TypeError: if ``text`` is not a string.
            EmbeddingError: as for :meth:`embed_documents`.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        obj = self._obj
        if self._kind == "langchain":
            return first_row(self._check([obj.embed_query(text)], rows=1))
        if self._kind == "llamaindex":
            return first_row(self._check([obj.get_query_embedding(text)], rows=1))
        if self._kind == "chroma":
            query_method = getattr(obj, "embed_query", None)
            if callable(query_method) and _has_parameter(query_method, "input"):
                return first_row(self._check(query_method(input=[text]), rows=1))
            return first_row(self._check(obj(input=[text]), rows=1))
        return first_row(self._check(obj([text]), rows=1))

    def _check(self, raw: object, *, rows: int) -> NDArray[np.float32]:
        """Validate a raw ``rows x d`` result, learn or check the dimension, normalise."""
        source = f"embedding {self._name!r}"
        try:
            array = np.asarray(raw)
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"{source} returned vectors of unequal length or non-numbers") from exc
        if array.dtype.kind not in "iuf":
            raise EmbeddingError(f"{source} returned non-numeric values (dtype {array.dtype})")
        if array.ndim != 2 or array.shape[0] != rows or array.shape[1] == 0:
            raise EmbeddingError(f"{source} returned an array of shape {array.shape} for {rows} text(s)")
        found = int(array.shape[1])
        expected = self._dimension
        if expected is None:
            with self._lock:
                if self._dimension is None:
                    self._dimension = found
                expected = self._dimension
        if found != expected:
            raise EmbeddingError(f"{source} returned vectors of dimension {found}, expected {expected}")
        return normalise_rows(array, source)
