"""Stores built from records as another memory system exports them (LoCoMo, SituatedQA dev sets).

:func:`exported_store` loads a JSON-lines file of exported records *as it is* through the write
gate's bulk import (``MemoryStore.import_records``) with **no step skipped**: the same contract,
authority, screens, dedup and supersede links as ``store.add`` / ``recall-gate add``. Only the
embedding work is cached (:mod:`.cache`): record texts and the cases' queries are embedded once
per model and reused on later runs. The decisions are returned with the store, so a caller can
report what was refused and why (issue 11: 0 records refused for their shape).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import ConfigBook, GateConfig
from ..model.jsonl import read_jsonl
from ..timeutil import Clock, system_clock
from .cache import CachedEmbedder, cached_vectors

if TYPE_CHECKING:
    from ..store import MemoryStore
    from ..write.candidate import WriteDecision

__all__ = ["exported_store", "read_jsonl_records"]

_BATCH = 1000


def read_jsonl_records(path: str | Path) -> list[dict[str, Any]]:
    """Read exported records, one JSON object per line (see :func:`shared_core.model.jsonl.read_jsonl`)."""
    return read_jsonl(path, what="records file")


def _record_text(item: dict[str, Any]) -> str:
    title, body = item.get("title") or "", item.get("body") or ""
    return f"{title}\n{body}" if title else str(body)


def exported_store(
    records: str | Path | Sequence[dict[str, Any]],
    *,
    embedding: Any = None,
    config: GateConfig | ConfigBook | None = None,
    clock: Clock = system_clock,
    queries: Iterable[str] = (),
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> tuple[MemoryStore, list[WriteDecision]]:
    """An in-memory store holding exported records, loaded through the full write gate.

    Args:
        records: a JSON-lines file of exported records, or the records themselves.
        embedding: the embedding (default: the offline MiniLM); wrapped in a
            :class:`~shared_core.evaluation.cache.CachedEmbedder`.
        config: gate settings (default: the store's, i.e. the embedding's calibrated ones).
        clock: the store's clock.
        queries: texts to embed ahead (and cache), e.g. the cases' queries.
        cache_dir: the embedding cache folder.
        progress: show progress bars on stderr.

    Returns:
        The open store and one write decision per record, in order.
    """
    from ..embedding import as_embedder, default_embedding
    from ..store import MemoryStore

    items = read_jsonl_records(records) if isinstance(records, (str, Path)) else [dict(r) for r in records]
    inner = default_embedding() if embedding is None else as_embedder(embedding)
    emb = CachedEmbedder(inner)
    texts = [_record_text(it) for it in items]
    vectors = cached_vectors(inner, texts, cache_dir=cache_dir, progress=progress)
    emb.remember(texts, vectors)
    qs = sorted(set(queries))
    if qs:
        emb.remember(qs, cached_vectors(inner, qs, cache_dir=cache_dir, progress=progress))
    store = MemoryStore.in_memory(embedding=emb, config=config, clock=clock)
    decisions: list[WriteDecision] = []
    for start in range(0, len(items), _BATCH):
        decisions.extend(
            store.import_records(items[start : start + _BATCH], vectors=vectors[start : start + _BATCH])
        )
    return store, decisions
