"""Opening a store: its Chroma client, tombstone mirror and recovery of a writer (H2, L2).

:func:`recover` runs when a writer opens: it settles the writer's own unfinished change-feed
heads, writes back tombstones the mirror holds and the ledger lacks (a restore of the data rolled
them back) and journals their forgets, finishes every journaled forget (``lifecycle.resume``),
and compacts if a crash or a restore may have left deleted text on disk.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, StoreError
from ..write import lifecycle
from ..write.gate import WriteGate
from .backend import ChromaBackend
from .chroma import chroma_call
from .erasure import scrub_hnsw
from .ledger import ChromaLedger
from .mirror import TombstoneMirror, default_mirror_path

__all__ = ["mirror_for", "open_client", "persistent_client", "recover"]


def persistent_client(folder: Path, *, scrub: bool) -> Any:
    """A ``PersistentClient`` on ``folder/chroma`` (first zeroing what a crash left in its HNSW files)."""
    import chromadb

    if scrub:  # what a crash left in the HNSW files (see erasure)
        with contextlib.suppress(StoreError):
            scrub_hnsw(folder / "chroma")
    chroma_dir = str(folder / "chroma")
    return chroma_call(
        "open",
        lambda: chromadb.PersistentClient(path=chroma_dir),
    )


def open_client(
    path: Path | None, client: Any, prefix: str | None, *, read_only: bool
) -> tuple[Any, str, bool]:
    """``(client, prefix, owned)``: the given client, or a persistent or ephemeral one of our own.

    Chroma is opened with its *default* settings, like every other library in the process: Chroma
    keeps one system per path (and one ephemeral system) per process and refuses a second client
    of it with other settings, and LangChain's ``Chroma()`` and LlamaIndex open theirs with the
    defaults. Passing ``Settings(anonymized_telemetry=False)`` here made a user's own
    ``Chroma(...)`` fail after a ``MemoryStore.in_memory()`` in the same process. Telemetry follows
    the user's ``ANONYMIZED_TELEMETRY`` (chromadb 1.5's product telemetry sends nothing either way).
    """
    import chromadb

    if client is not None:
        return client, prefix or "rg", False
    if path is not None:
        return persistent_client(path, scrub=not read_only), prefix or "rg", True
    # The in-process ephemeral system is shared: a fresh prefix isolates this store.
    ephemeral = chromadb.EphemeralClient()
    return ephemeral, prefix or f"rg{uuid.uuid4().hex[:10]}", True


def mirror_for(
    path: Path | None, option: str | Path | bool | None, *, embedded: bool
) -> TombstoneMirror | None:
    """The tombstone mirror an option asks for (default: next to an embedded store's folder)."""
    if option is False:
        return None
    if option is None or option is True:
        if path is None or not embedded:
            if option is True:
                raise InputError("tombstone_mirror=True needs an embedded store; give a file path")
            return None
        return TombstoneMirror(default_mirror_path(path))
    if isinstance(option, (str, Path)):
        return TombstoneMirror(option)
    raise InputError("tombstone_mirror must be a path, True, False or None")


def recover(
    gate: WriteGate, backend: ChromaBackend, ledger: ChromaLedger, *, embedded: bool, mark: Callable[[], None]
) -> None:
    """A writer's open: settle heads, re-apply mirrored tombstones, finish forgets (see module docstring).

    ``mark`` notes that a compaction is due (deleted text may be on disk).
    """
    with gate.lock, backend.operation():
        if embedded:
            backend.feed.settle()
        sources, mems = ledger.reapply_mirror(at=gate.now())
        for src in sources:  # resume() below deletes what the restore brought back
            ledger.journal_begin(f"forget:{src}", {"source_record_id": src, "ids": []})
        found = [
            (space, r.id)
            for space in (backend.spaces() if mems else [])
            for r in backend.get(mems, memory_space_id=space)
            if not r.source_record_id
        ]
        if found:
            backend.commit([], None, found)
        resumed = lifecycle.resume(gate)  # finish any forget a crash (or a restore) interrupted
    if resumed or found:
        mark()
