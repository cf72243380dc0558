"""The memory store: scoped hybrid memory over Chroma (source of truth) and BM25 (derived)."""

from __future__ import annotations

from .memory_store import MemoryStore

__all__ = ["MemoryStore"]
