"""Shared fixtures for the LlamaIndex adapter tests: a deterministic LlamaIndex embedding and a small corpus."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index_instrumentation import root_dispatcher
from pydantic import Field

from llamaindex_recall_gate import RecallGateAuditEvent
from shared_core import GateConfig, RecallGate
from shared_core.testing import FrozenClock, HashEmbedding

NOW = "2026-07-13T00:00:00Z"
SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
OTHER_SCOPE = {"user_id": "u2", "agent_id": "a1", "memory_space_id": "s1"}
QUERY = "when do we publish the weekly newsletter"
_BASE = {**SCOPE, "updated_at": "2026-07-01T00:00:00Z", "status": "approved"}

# The right memory, and three that look closer to the query but must never reach the LLM.
CORPUS: dict[str, tuple[str, dict[str, Any]]] = {
    "right": ("The weekly newsletter goes out on Tuesday mornings", {}),
    "superseded": (
        "When do we publish the weekly newsletter? We publish it on Monday",
        {"superseded_by": "right"},
    ),
    "draft": ("When do we publish the weekly newsletter? Draft says Friday", {"status": "draft"}),
    "foreign": ("When do we publish the weekly newsletter? On Sunday", {"user_id": "u2"}),
}


class HashLlamaEmbedding(BaseEmbedding):
    """A deterministic LlamaIndex embedding (feature hashing, no model, no network)."""

    model_name: str = "hash-embedding-256"

    def _get_text_embedding(self, text: str) -> list[float]:
        return [float(x) for x in HashEmbedding().embed_query(text)]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)


def make_nodes(corpus: dict[str, tuple[str, dict[str, Any]]] = CORPUS) -> list[TextNode]:
    """Nodes whose metadata is the memory record; metadata hidden from embeddings and the LLM."""
    nodes = []
    for nid, (text, extra) in corpus.items():
        meta = {**_BASE, **extra}
        nodes.append(
            TextNode(
                id_=nid,
                text=text,
                metadata=meta,
                excluded_embed_metadata_keys=list(meta),
                excluded_llm_metadata_keys=list(meta),
            )
        )
    return nodes


def make_gate(**config: Any) -> RecallGate:
    """A gate with a threshold suited to the hashing embedding and a frozen clock."""
    config.setdefault("min_score", 0.2)
    return RecallGate(GateConfig(**config), clock=FrozenClock(NOW))


class StaticRetriever(BaseRetriever):
    """Returns fixed nodes in order (score 1/rank); counts calls; optionally sleeps in its async path."""

    def __init__(self, nodes: list[TextNode], *, delay: float = 0.0) -> None:
        super().__init__()
        self.nodes = nodes
        self.delay = delay
        self.calls = 0

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls += 1
        return [NodeWithScore(node=n, score=1.0 / (i + 1)) for i, n in enumerate(self.nodes)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        await asyncio.sleep(self.delay)
        return self._retrieve(query_bundle)


class EventCollector(BaseEventHandler):
    """Collects every instrumentation event it sees."""

    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "EventCollector"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)

    def audits(self) -> list[RecallGateAuditEvent]:
        return [e for e in self.events if isinstance(e, RecallGateAuditEvent)]


@contextmanager
def collect_events() -> Iterator[EventCollector]:
    """Attach an EventCollector to the root dispatcher for the duration of the block."""
    handler = EventCollector()
    root_dispatcher.add_event_handler(handler)
    try:
        yield handler
    finally:
        root_dispatcher.event_handlers.remove(handler)
