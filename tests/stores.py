"""Helpers to build stores for tests (in-memory by default, deterministic embedding)."""

from __future__ import annotations

from typing import Any

from shared_core import GateConfig
from shared_core.store import MemoryStore
from shared_core.testing import FrozenClock, HashEmbedding

NOW = "2026-07-13T00:00:00Z"
SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
TRUSTED = {"origin": "user_explicit", "tier": "confirmed", "cited": True}


def make_store(path: Any = None, **kwargs: Any) -> MemoryStore:
    kwargs.setdefault("embedding", HashEmbedding())
    kwargs.setdefault("config", GateConfig(min_score=0.2, min_lexical_score=0.6))
    kwargs.setdefault("clock", FrozenClock(NOW))
    return MemoryStore(path, **kwargs)


def mem(body: str, title: str = "", **fields: Any) -> dict[str, Any]:
    return {**SCOPE, **TRUSTED, "title": title, "body": body, **fields}


def restore(store: MemoryStore, records: Any, **kwargs: Any) -> list[Any]:
    """Restore records as they were (a backup): the gated bulk import, without screens, dedup or implicit supersede."""
    items = [{"origin": "user_explicit", "cited": True, **r.model_dump(exclude_none=True)} for r in records]
    decisions = store.import_records(items, skip=("screens", "dedup", "supersede"), **kwargs)
    assert all(d.stored for d in decisions), [(d.action, d.reasons, d.detail) for d in decisions]
    return decisions


class SpyEmbedding(HashEmbedding):
    """HashEmbedding that records every text it embeds (to prove what never reaches it)."""

    def __init__(self, dimension: int = 256) -> None:
        super().__init__(dimension)
        self.seen: list[str] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed_documents(texts)

    def embed_query(self, text):  # type: ignore[no-untyped-def]
        self.seen.append(text)
        return super().embed_query(text)
