"""``GatedVectorStoreRetriever``: the retriever of a LangChain ``GatedVectorStore`` (A1)."""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig
from langchain_core.vectorstores import VectorStore, VectorStoreRetriever

from .callbacks import adispatch_audit, dispatch_audit
from .convert import with_config_scope

__all__ = ["GatedVectorStoreRetriever"]


class GatedVectorStoreRetriever(VectorStoreRetriever):
    """The retriever of a :class:`GatedVectorStore`: gated similarity search plus audit events.

    Made by :meth:`GatedVectorStore.as_retriever`. Each call dispatches one ``recall_gate.audit``
    custom event. ``scope`` may come from ``search_kwargs``, the call's keyword arguments or
    ``config["configurable"]["scope"]`` (per call wins).
    """

    vectorstore: VectorStore
    allowed_search_types: ClassVar[tuple[str, ...]] = ("similarity",)

    def invoke(self, input: str, config: RunnableConfig | None = None, **kwargs: Any) -> list[Document]:
        """Retrieve and gate; ``scope`` and ``k`` may be given per call."""
        return super().invoke(input, config, **with_config_scope(config, kwargs))

    async def ainvoke(
        self, input: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async :meth:`invoke`."""
        return await super().ainvoke(input, config, **with_config_scope(config, kwargs))

    @property
    def _gated(self) -> Any:
        return self.vectorstore  # a GatedVectorStore (it makes this retriever)

    def _kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        merged = self.search_kwargs | kwargs
        ambient = merged.pop("ambient_scope", None)
        merged["scope"] = self._gated.resolve_scope(merged.pop("scope", None), ambient)
        return merged

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        found, result = self._gated.similarity_search_with_result(query, **self._kwargs(kwargs))
        dispatch_audit(result.audit, run_manager)
        return [doc for doc, _ in found]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        found, result = await self._gated.asimilarity_search_with_result(query, **self._kwargs(kwargs))
        await adispatch_audit(result.audit, run_manager)
        return [doc for doc, _ in found]
