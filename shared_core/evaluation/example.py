"""The shipped example: memories and cases in ``shared_core/data`` (README, notebooks, tests)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["EXAMPLE_FORGET", "build_example_store", "example_cases_path", "example_memories_path"]


def _data_path(name: str) -> Path:
    from importlib.resources import files

    return Path(str(files("shared_core") / "data" / name))


def example_cases_path() -> Path:
    """The shipped case file (``shared_core/data/eval_cases.jsonl``)."""
    return _data_path("eval_cases.jsonl")


def example_memories_path() -> Path:
    """The memories the shipped cases refer to (``shared_core/data/example_memories.jsonl``)."""
    return _data_path("example_memories.jsonl")


EXAMPLE_FORGET = ("ticket-legacy-export",)
"""Source records the example forgets after loading (their memories are the cases' deleted ids)."""


def build_example_store(path: str | Path | None = None, **kwargs: Any) -> MemoryStore:
    """Build the store the shipped cases refer to: add the example memories, then forget a source.

    The command-line equivalent::

        recall-gate add --store DIR --input shared_core/data/example_memories.jsonl
        recall-gate forget --store DIR --source ticket-legacy-export
        recall-gate eval shared_core/data/eval_cases.jsonl --store DIR

    Args:
        path: a folder for a persistent store, or ``None`` for an in-memory one.
        **kwargs: passed to :class:`~shared_core.store.MemoryStore` (e.g. ``embedding``).

    Returns:
        The open store (close it, or use it as a context manager).
    """
    from ..model.jsonl import read_jsonl
    from ..store import MemoryStore

    store = MemoryStore(path, **kwargs)
    store.add(read_jsonl(example_memories_path()))
    for source in EXAMPLE_FORGET:
        store.forget(source)
    return store
