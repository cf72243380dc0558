"""Test doubles for the LangChain adapter tests: fixed-order retrievers, an embedding, a recorder."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever

from shared_core.testing import HashEmbedding

NOW = "2026-07-13T00:00:00Z"
SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
BASE = {**SCOPE, "updated_at": "2026-07-01T00:00:00Z", "status": "approved", "score": 0.9}


def doc(mid: str | None, text: str = "note", **meta: Any) -> Document:
    """A document in the seeds' flat shape: in scope ``u1/a1/s1``, approved, fresh, score 0.9."""
    return Document(id=mid, page_content=text, metadata={**BASE, **meta})


class StaticRetriever(BaseRetriever):
    """Returns its documents in the given order; counts calls; optional async delay."""

    docs: list[Document]
    delay: float = 0.0
    calls: int = 0

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls += 1
        return list(self.docs)

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        self.calls += 1
        if self.delay:
            await asyncio.sleep(self.delay)
        return list(self.docs)


class HashEmbeddings(Embeddings):
    """shared_core.testing.HashEmbedding as a LangChain ``Embeddings`` (deterministic, no model)."""

    def __init__(self, dimension: int = 256) -> None:
        self._inner = HashEmbedding(dimension)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in row] for row in self._inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        return [float(x) for x in self._inner.embed_query(text)]


class EventRecorder(BaseCallbackHandler):
    """Records custom events (name, data) seen by a callback handler."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(
        self,
        name: str,
        data: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.events.append((name, data))
