"""Opening a store: its Chroma client, tombstone mirror and recovery of a writer (H2, L2).

:func:`recover` runs when a writer opens: it settles the writer's own unfinished change-feed
heads, writes back tombstones the mirror holds and the ledger lacks (a restore of the data rolled
them back) and journals their forgets, finishes every journaled forget (``lifecycle.resume``),
forgets again what another client of a shared Chroma left when it died between a write's commit
and its settle (:func:`~.safety.settle_tombstoned`; not for a sole embedded writer, whose writes
and forgets never race), and compacts if a crash or a restore may have left deleted text on disk.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InputError, StoreError, StoreLockedError
from ..write import lifecycle
from ..write.gate import WriteGate
from .backend import ChromaBackend
from .chroma import chroma_call, is_embedded_client, serialize_embedded_calls, set_http_timeout
from .erasure import compact_chroma, scrub_hnsw
from .ledger import ChromaLedger
from .mirror import TombstoneMirror, default_mirror_path
from .safety import delete_sourceless, settle_tombstoned

__all__ = [
    "Compaction",
    "acquire_writer_lock",
    "connect_http",
    "mirror_for",
    "open_client",
    "persistent_client",
    "recover",
]


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
        if is_embedded_client(client):
            serialize_embedded_calls()
        return client, prefix or "rg", False
    serialize_embedded_calls()  # see there: Chroma's embedded bindings deadlock under threads
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
        found = delete_sourceless(backend, ledger, mems)
        resumed = lifecycle.resume(gate)  # finish any forget a crash (or a restore) interrupted
        # another client of this Chroma may have died between a write's commit and its settle
        swept = [] if ledger.exclusive else settle_tombstoned(gate, backend, ledger)
    if resumed or found or swept:
        mark()


def connect_http(host: str, port: int, timeout: float | None) -> Any:
    """A Chroma ``HttpClient`` with a per-call ``timeout`` whose server answered a heartbeat."""
    import chromadb

    client = chroma_call("connect", lambda: chromadb.HttpClient(host=host, port=port))
    set_http_timeout(client, timeout)
    chroma_call("heartbeat", client.heartbeat)
    return client


def acquire_writer_lock(path: Path, timeout: float) -> Any:
    """The folder's writer lock (one writer per embedded folder), or :class:`StoreLockedError`."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(path / ".writer.lock"))
    try:
        lock.acquire(timeout=timeout)
    except Timeout:
        raise StoreLockedError(
            f"the store at {path} is open for writing by another process; "
            "open it read-only (MemoryStore(path, read_only=True)), or use a Chroma server for "
            "several writers"
        ) from None
    return lock


class Compaction:
    """When an embedded writer compacts (L2): a marker file says deleted text may be on disk.

    The marker is written before a forget or delete and removed by a finished compaction, so a
    crash in between compacts at the next open. Stores that do not own an embedded folder (a
    server, a reader) never mark; ``erase_on_forget=False`` leaves compaction to the caller.
    """

    def __init__(self, path: Path | None, *, embedded: bool, read_only: bool, erase_on_forget: bool) -> None:
        self.path = path if embedded else None
        self.active = self.path is not None and not read_only and erase_on_forget
        self.erase_on_forget = erase_on_forget

    def mark(self) -> None:
        """Note that deleted text may be on disk until a compaction ran."""
        if self.active and self.path is not None:
            with contextlib.suppress(OSError):
                (self.path / ".compact-pending").touch()

    def pending(self) -> bool:
        """Whether a forget or delete may have left text on disk (a compaction did not finish)."""
        return self.path is not None and (self.path / ".compact-pending").exists()

    def run(self) -> dict[str, Any]:
        """Compact the folder now (the caller holds the writer's lock) and clear the marker."""
        assert self.path is not None
        self.mark()
        result = compact_chroma(self.path / "chroma")
        (self.path / ".compact-pending").unlink(missing_ok=True)
        return result

    @staticmethod
    def attempt(compact: Callable[[], Any]) -> bool:
        """Run ``compact``; ``False`` when it could not run now (retried by the next forget, compact or open)."""
        try:
            compact()
        except StoreError:
            return False
        return True

    def erase(self, result: dict[str, Any], compact: Callable[[], Any]) -> dict[str, Any]:
        """``result`` with ``compacted``: whether the forget's text left the disk now."""
        embedded = self.path is not None
        result["compacted"] = self.attempt(compact) if self.erase_on_forget and embedded else False
        return result
