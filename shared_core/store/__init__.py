"""The memory store: scoped hybrid memory over Chroma (source of truth) and BM25 (derived).

Modules: :mod:`.memory_store` (the facade), :mod:`.backend` (collections, partition cache, the
two-index commit), :mod:`.ledger` (quarantine, tombstones, journal), :mod:`.sync` (the change
feed), :mod:`.safety` (read-path checks), :mod:`.erasure` and :mod:`.mirror`, :mod:`.opening`.

**Several clients, one truth (H2, H3).** Any number of processes or machines share a store through
a Chroma server (:meth:`MemoryStore.http`); an embedded folder has one writer (a file lock: a
second writer gets :class:`~shared_core.errors.StoreLockedError` within ``lock_timeout``) and any
number of readers (``read_only=True``, e.g. the MCP server next to ``recall-gate query``). The
coherence protocol (:mod:`shared_core.store.sync`):

- *What a reader may serve stale:* nothing that was written before its call began. Every query and
  every write first reads the heads of the space it touches (one small Chroma read, every call; no
  time-to-live) and applies the writes, corrections, approvals and forgets other clients
  committed since, as deltas into its partitions. A change whose writer's call has returned is
  seen by every call that starts afterwards; a change still in flight may or may not be.
- *Server unreachable:* the heads cannot be read, so the call raises
  :class:`~shared_core.errors.StoreUnavailableError` (retryable). A cached partition is never
  served as fresh after a check that could not be made (fail closed).
- *Two writers:* each memory is one Chroma record written by idempotent upsert, and writers never
  read-modify-write each other's records except to merge evidence or link a correction; a race
  there leaves both memories whole (the supersede link is also derived from the successor's
  ``supersedes``, :mod:`shared_core.retrieval.partition`). A writer that dies mid-commit leaves its
  head "pending": readers keep re-reading what it may have written.
- *Forgets across clients:* every query drops hits whose source or id is tombstoned (one ledger
  read, :mod:`shared_core.store.safety`), so a forget holds for every client from the moment its
  tombstone is written, even before its deletes land or while another process races a write of
  the same source (which is then forgotten again after it commits).
- *Embedded reader next to its writer:* the feed lives in ``<path>/feed.sqlite3`` (opened
  ``mode=ro`` by readers); chromadb keeps its vector index per process, so a reader whose Chroma
  cannot find vectors the writer added reopens its client once. The store writes nothing through a
  reader (Chroma's own ``PersistentClient`` still touches its lock table and HNSW files on open and
  close: a chromadb behaviour, not ours).

**Erasure (L2).** :meth:`forget` and :meth:`delete` of an embedded store end with
:meth:`compact` (``erase_on_forget=True``, default): Chroma's write-ahead log, full-text index and
free pages are scrubbed so the forgotten text is in no byte of the store's folder
(:mod:`shared_core.store.erasure`); a compaction that cannot run then (a reader holding the file)
is retried on the next forget, compact or open. Tombstones are mirrored outside the data folder
(:mod:`shared_core.store.mirror`) and re-applied when a writer opens, so a restored backup cannot
bring a forgotten memory back.
"""

from __future__ import annotations

from .memory_store import MemoryStore

__all__ = ["MemoryStore"]
