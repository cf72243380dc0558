"""``MemoryStore``: scoped hybrid memory over Chroma (source of truth) and BM25 (derived).

The batteries-included way in (DESIGN "Two ways in"): one object that owns a Chroma client, the
scope's partitions, a recall gate and a write gate.

- **Reads** (:meth:`query`, :meth:`preview`, :meth:`search`): the query is embedded once, the
  scope's partitions (its private bucket and the shared one, selected *before* any ranking, R1)
  are ranked by BM25 and by vector and fused by id (:mod:`shared_core.retrieval.hybrid`), and the
  fused hits pass the recall gate. The result is a :class:`~shared_core.recall.gate.GateResult`.
- **Writes** go through the write gate only (W1): :meth:`add`, :meth:`import_records`, the review
  and lifecycle methods. There is no ungated write path: the Chroma backend is private to the
  store and handed to the write gate alone.

**Several clients, one truth (H2, H3)** and **erasure (L2)**: the coherence protocol (what a reader
may serve stale and for how long, an unreachable server, two writers, forgets across clients) and
the erasure guarantee are written down in :mod:`shared_core.store`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..audit import AuditSink, JsonlSink
from ..config import ConfigBook, GateConfig, WritePolicy
from ..errors import InputError, StoreError
from ..model import Hit, MemoryRecord, Scope, coerce_scope
from ..recall.gate import GateResult, RecallGate
from ..recall.rules import DEFAULT_RULES, Rule
from ..retrieval.bm25 import BM25Engine
from ..retrieval.fusion import FusionConfig
from ..retrieval.hybrid import hybrid_search, vector_ranking
from ..timeutil import Clock, system_clock
from ..write import lifecycle, review
from ..write.authority import WritePath
from ..write.candidate import MemoryCandidate, WriteDecision
from ..write.gate import WriteGate
from ..write.ledger import get_with_aliases
from .backend import ChromaBackend
from .erasure import scrub_hnsw
from .ledger import ChromaLedger
from .opening import (
    Compaction,
    acquire_writer_lock,
    connect_http,
    mirror_for,
    open_client,
    persistent_client,
    recover,
)
from .safety import MAX_CANDIDATES, MAX_QUERY_CHARS, LateWrites, check_query, drop_tombstoned
from .sync import stable_writer_id

__all__ = ["MAX_CANDIDATES", "MAX_QUERY_CHARS", "MemoryStore"]

VectorSearch = Literal["memory", "chroma"]


class MemoryStore:
    """Scoped hybrid memory: Chroma + BM25, gated on read and on write.

    Args:
        path: folder of a persistent store; ``None`` for an in-memory store (tests, notebooks).
        client: a Chroma client to use instead (e.g. ``chromadb.HttpClient``); see :meth:`http`.
        embedding: any embedding (see :func:`shared_core.embedding.as_embedder`); default: the
            offline all-MiniLM-L6-v2 int8 model shipped with the package.
        config: recall-gate settings; default: the seeds' defaults with ``min_score`` set to the
            embedding's calibrated threshold when it has one.
        write_policy: write-gate settings (W8); default :class:`~shared_core.config.WritePolicy`.
        rules: the recall policy.
        sinks: extra audit sinks; a persistent store also writes ``<path>/audit/audit.jsonl``.
        clock: injected clock.
        bm25_engine: ``"rank_bm25"`` (default) or ``"bm25s"`` (extra ``recall-gate[bm25s]``).
        fusion: fusion settings.
        vector_search: ``"memory"`` (exact, over the partition in process) or ``"chroma"`` (ask
            Chroma's index with the scope in ``where``).
        lock_timeout: seconds to wait for the writer lock of a persistent path.
        read_only: open without the writer lock; every write raises :class:`StoreError` (one
            check in the write gate; the backend and the ledger refuse too).
        collection_prefix: prefix of collection names (lets several stores share one server).
        cache_bytes: byte budget of the partitions held in process (least recently used out);
            ``None``: no limit.
        tombstone_mirror: file mirroring tombstones outside the data (see
            :mod:`~shared_core.store.mirror`); default ``<path>.tombstones.jsonl`` next to an
            embedded store's folder, none otherwise; ``False``: off.
        erase_on_forget: compact after :meth:`forget` and :meth:`delete` of an embedded store so
            the deleted text leaves the disk (see :meth:`compact`).

    Example:
        >>> store = MemoryStore("./memory")
        >>> store.add([{"title": "Posting policy", "body": "...", "user_id": "u1", ...}])
        >>> result = store.query("when do we post?", scope=scope)
        >>> result.accepted, result.rejected, result.audit
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        client: Any = None,
        embedding: Any = None,
        config: GateConfig | ConfigBook | None = None,
        write_policy: WritePolicy | None = None,
        rules: Sequence[Rule] = DEFAULT_RULES,
        sinks: Sequence[AuditSink] = (),
        clock: Clock = system_clock,
        bm25_engine: BM25Engine = "rank_bm25",
        fusion: FusionConfig | None = None,
        vector_search: VectorSearch = "memory",
        lock_timeout: float = 2.0,
        read_only: bool = False,
        collection_prefix: str | None = None,
        cache_bytes: int | None = None,
        tombstone_mirror: str | Path | bool | None = None,
        erase_on_forget: bool = True,
    ) -> None:
        from ..embedding import as_embedder, default_embedding

        if bm25_engine not in ("rank_bm25", "bm25s"):
            raise InputError(f"bm25_engine must be 'rank_bm25' or 'bm25s', not {bm25_engine!r}")
        if vector_search not in ("memory", "chroma"):
            raise InputError(f"vector_search must be 'memory' or 'chroma', not {vector_search!r}")
        self.path = Path(path) if path is not None else None
        self.read_only = read_only
        self.embedder = default_embedding() if embedding is None else as_embedder(embedding)
        self.clock = clock
        self.fusion = fusion or FusionConfig()
        self.vector_search: VectorSearch = vector_search
        self.erase_on_forget = erase_on_forget
        if cache_bytes is not None and (
            isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int) or cache_bytes < 0
        ):
            raise InputError("cache_bytes must be a non-negative integer or None")
        self._lock_file: Any = None
        self._closed = False

        all_sinks = list(sinks)
        if self.path is not None and read_only and not MemoryStore.exists(self.path):
            # A mistyped path would otherwise open an empty store that answers every query with
            # nothing (and create folders through a store that promised not to write).
            raise StoreError(f"no store at {self.path}: read_only=True opens an existing store folder")
        if self.path is not None:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                if not read_only:
                    self._lock_file = acquire_writer_lock(self.path, lock_timeout)
            except OSError as exc:  # a read-only folder or disk, no permission: typed, not a crash
                raise StoreError(
                    f"cannot open the store at {self.path} for writing ({type(exc).__name__}); "
                    "check the folder's permissions and free space, or open it read_only=True"
                ) from None
            all_sinks.insert(0, JsonlSink(self.path / "audit" / "audit.jsonl"))
        self.audit_path = self.path / "audit" / "audit.jsonl" if self.path is not None else None
        self.sinks: tuple[AuditSink, ...] = tuple(all_sinks)

        client, prefix, self._owns_client = open_client(
            self.path, client, collection_prefix, read_only=read_only
        )
        self._chroma = client
        self.prefix = prefix
        from ..embedding import calibration_of

        # Thresholds belong to the embedding (DESIGN "Scores"): settings a config leaves unset
        # (min_score, the relative rule) come from the embedding's calibration.
        self._compaction = Compaction(
            self.path, embedded=self._owns_client, read_only=read_only, erase_on_forget=erase_on_forget
        )
        self.gate = RecallGate(
            config if config is not None else GateConfig(),
            rules=rules,
            sinks=self.sinks,
            clock=clock,
            calibration=calibration_of(self.embedder),
        )
        mirror = mirror_for(self.path, tombstone_mirror, embedded=self._owns_client)
        persistent_writer = self.path is not None and not read_only and self._owns_client
        self._backend = ChromaBackend(
            client,
            prefix=prefix,
            embedder=self.embedder,
            bm25_engine=bm25_engine,
            read_only=read_only,
            folder=self.path if self._owns_client else None,
            cache_bytes=cache_bytes, sole_writer=persistent_writer,
            writer_id=stable_writer_id(self.path) if persistent_writer and self.path is not None else None,
            reopen=self._reopen_client if read_only and self.path is not None and self._owns_client else None,
        )
        self._ledger = ChromaLedger(  # exclusive: the writer lock, no other client adds tombstones
            lambda: self._backend.client, prefix=prefix, read_only=read_only, mirror=mirror, exclusive=persistent_writer
        )
        self._backend.cols.on_reopen.append(self._ledger.clear_cache)
        self._writer = WriteGate(
            self._backend,
            self._ledger,
            policy=write_policy if write_policy is not None else self.gate.book,
            sinks=self.sinks,
            clock=clock,
            read_only=read_only,
        )
        self._late = LateWrites(self._writer, self._ledger)  # settles what a write's commit raced (L2)
        if not read_only:
            embedded = self.path is not None and self._owns_client
            recover(self._writer, self._backend, self._ledger, embedded=embedded, mark=self._compaction.mark)
            if self._compaction.pending():
                self._compaction.attempt(self.compact)

    @staticmethod
    def exists(path: str | Path) -> bool:
        """Whether ``path`` holds an embedded store (its Chroma folder), without opening or creating it."""
        return (Path(path) / "chroma" / "chroma.sqlite3").is_file()

    def _reopen_client(self) -> Any:
        """A fresh client on this folder (a reader's Chroma misses vectors another process wrote)."""
        with contextlib.suppress(Exception):
            self._chroma.close()
        if self.path is not None:
            self._chroma = persistent_client(self.path, scrub=False)
        return self._chroma

    # -- construction helpers -----------------------------------------------------------------

    @classmethod
    def in_memory(cls, **kwargs: Any) -> MemoryStore:
        """An in-memory store (nothing is written to disk)."""
        return cls(None, **kwargs)

    @classmethod
    def persistent(cls, path: str | Path, **kwargs: Any) -> MemoryStore:
        """A store persisted in ``path`` (the embedded default)."""
        return cls(path, **kwargs)

    @classmethod
    def http(
        cls, host: str = "127.0.0.1", port: int = 8000, *, timeout: float | None = 30.0, **kwargs: Any
    ) -> MemoryStore:
        """A store on a Chroma server (``chroma run``), shared by several processes (H3).

        Args:
            host: the server's host.
            port: the server's port.
            timeout: seconds to wait for the server on each call (Chroma's own client waits
                forever, so a hung server would hang every caller); ``None``: no limit. Chroma
                shares one connection pool per host and port in a process, hence one timeout.
            **kwargs: options of :class:`MemoryStore`.

        Raises:
            StoreUnavailableError: if the server cannot be reached, or a call waits longer than
                ``timeout`` (retryable: writes are idempotent upserts).
        """
        client = connect_http(host, port, timeout)
        return cls(None, client=client, **kwargs)

    def close(self) -> None:
        """Save partition snapshots, release the writer lock and the Chroma client (the store cannot be used afterwards)."""
        if self._closed:
            return
        self._backend.close()
        self._ledger.clear_cache()
        if self._owns_client and self.path is not None:
            with contextlib.suppress(Exception):
                self._chroma.close()
            # Chroma (a reader's too) rewrites its HNSW files on close with heap bytes in their
            # unused capacity (see erasure): zero them again.
            with contextlib.suppress(StoreError):
                scrub_hnsw(self.path / "chroma")
        if self._lock_file is not None:
            self._lock_file.release()
            self._lock_file = None
        self._closed = True

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self, *, write: bool = False) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if write:  # what a failed settle left (the server went away after a commit) goes first
            self._late.settle_pending()

    # -- writes: through the write gate only (W1) ----------------------------------------------

    @property
    def writer(self) -> WriteGate:
        """The write gate in front of this store (the only write path, W1)."""
        return self._writer

    def add(
        self,
        items: Iterable[MemoryCandidate | Mapping[str, Any]],
        *,
        scope: Scope | Mapping[str, Any] | None = None,
        path: WritePath | None = None,
        dry_run: bool = False,
    ) -> list[WriteDecision]:
        """Write memories through the write gate; returns one decision per item, in order (W1).

        Args:
            items: records as mappings of :class:`~shared_core.write.MemoryCandidate` fields
                (title, body, scope fields, status, tags, origin, created_at, supersedes, ...),
                in the shape memory systems export.
            scope: pin every item to this owner (items naming another are ``scope_mismatch``;
                items naming none get it). Default: each item names its owner.
            path: the full authority of this call (:class:`~shared_core.write.authority.WritePath`);
                default: the operator path (items' trust claims honoured), with ``scope`` if given.
            dry_run: decide only, change nothing (R10).
        """
        self._check_open(write=not dry_run)
        with self._backend.operation():
            return self._late.settle(
                self._writer.submit(items, path=self._path(scope, path), dry_run=dry_run)
            )

    def import_records(
        self,
        items: Iterable[MemoryCandidate | Mapping[str, Any]],
        *,
        vectors: NDArray[np.float32] | None = None,
        skip: Collection[str] = (),
        scope: Scope | Mapping[str, Any] | None = None,
        path: WritePath | None = None,
    ) -> list[WriteDecision]:
        """Bulk import through the write gate, with precomputed vectors and explicit opt-outs.

        For evaluation corpora and benchmarks: the same authority, contract, tombstone and trust
        decisions as :meth:`add`, the vectors given (one row per item) instead of embedding again,
        and the steps named in ``skip`` left out — ``"screens"`` (secret/PII/injection screens)
        and/or ``"dedup"`` (the neighbour search). What was skipped is written into the audit
        record (``extra.skipped``).

        Raises:
            InputError: on an unknown step in ``skip`` or vectors of the wrong shape.
        """
        self._check_open(write=True)
        with self._backend.operation():
            return self._late.settle(
                self._writer.submit(items, path=self._path(scope, path), vectors=vectors, skip=skip)
            )

    @staticmethod
    def _path(scope: Scope | Mapping[str, Any] | None, path: WritePath | None) -> WritePath:
        if path is not None:
            if scope is not None:
                raise InputError("give scope= or path=, not both")
            return path
        return WritePath.operator(scope=scope)

    # -- quarantine review (W6) -----------------------------------------------------------------

    def quarantine_list(self, *, memory_space_id: str | None = None) -> list[dict[str, Any]]:
        """Held candidates for a reviewer: id, title and text, owner, space, reasons, findings, times.

        The text is the operator's to see; it never enters an audit record.
        """
        self._check_open()
        return review.quarantine_list(self._writer, memory_space_id=memory_space_id)

    def quarantine_approve(self, qid: str, *, reviewer: str = "operator") -> WriteDecision:
        """Approve a held candidate: written as a confirmed, cited memory (W6); see :func:`shared_core.write.review.approve`."""
        self._check_open(write=True)
        with self._backend.operation():
            return self._late.settle([review.approve(self._writer, qid, reviewer=reviewer)])[0]

    def quarantine_reject(self, qid: str) -> bool:
        """Discard a held candidate; returns whether it existed."""
        self._check_open()
        return review.reject(self._writer, qid)

    def quarantine_purge(self) -> int:
        """Discard expired held candidates (W6); returns how many."""
        self._check_open()
        return review.purge_quarantine(self._writer)

    def tombstoned(self, source_record_id: str | None, mid: str | None) -> bool:
        """True when the source record is forgotten, or the id deleted with no source (L2)."""
        return self._writer.is_tombstoned(source_record_id, mid)

    # -- lifecycle (L1-L3, W7) ------------------------------------------------------------------

    def forget(self, source_record_id: str) -> dict[str, Any]:
        """Delete everything derived from a source record, tombstone it, audit the counts (L2).

        Resumable: a forget interrupted by a crash is finished when the store is next opened.

        Returns:
            ``{"source_record_id", "memories", "quarantined", "ids"}`` (counts and ids, no text).
        """
        self._check_open(write=True)
        self._compaction.mark()
        with self._backend.operation():
            result = lifecycle.forget(self._writer, source_record_id)
        return self._compaction.erase(result, self.compact)

    def delete(
        self, ids: Sequence[str], *, memory_space_id: str, scope: Scope | Mapping[str, Any] | None = None
    ) -> int:
        """Delete memories by id, with tombstones (L2); returns how many were deleted.

        With ``scope``, only memories that scope owns are deleted (others: ``not_owner``, see
        :func:`shared_core.write.lifecycle.delete`).
        """
        self._check_open(write=True)
        self._compaction.mark()
        with self._backend.operation():
            done = lifecycle.delete(self._writer, ids, memory_space_id=memory_space_id, scope=scope)
        if done["deleted"]:
            self._compaction.erase({}, self.compact)
        return len(done["deleted"])

    def correct(
        self,
        memory_id: str,
        *,
        memory_space_id: str,
        body: str,
        title: str | None = None,
        scope: Scope | Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> WriteDecision:
        """Correct a memory: a new memory supersedes it, through the write gate (L1).

        Raises:
            InputError: if the memory does not exist (or, with ``scope``, is not the caller's).
        """
        self._check_open(write=True)
        with self._backend.operation():
            decision = lifecycle.correct(
                self._writer,
                memory_id,
                memory_space_id=memory_space_id,
                body=body,
                title=title,
                scope=scope,
                **fields,
            )
            return self._late.settle([decision])[0]

    def history(self, memory_id: str, *, memory_space_id: str) -> list[MemoryRecord]:
        """The correction chain through a memory, oldest first (L1: history on request)."""
        self._check_open()
        return lifecycle.history(self._writer, memory_id, memory_space_id=memory_space_id)

    def purge_expired(self) -> int:
        """Delete memories past their retention expiry (L3) and expired quarantine; returns how many."""
        self._check_open()
        with self._backend.operation():
            return lifecycle.purge_expired(self._writer)

    def reconcile(self, memory_space_id: str) -> dict[str, int]:
        """Batch tier reconciliation (W7): promote by evidence, demote contradicted memories."""
        self._check_open()
        with self._backend.operation():
            return lifecycle.reconcile(self._writer, memory_space_id)

    # -- erasure (L2) ---------------------------------------------------------------------------

    def compact(self) -> dict[str, Any]:
        """Make deleted text leave the disk: scrub Chroma's log, merge its full-text index, VACUUM.

        For an embedded store (see :mod:`shared_core.store.erasure`); :meth:`forget` and
        :meth:`delete` run it themselves unless ``erase_on_forget=False``. A server's folder is
        compacted with :func:`~shared_core.store.erasure.compact_chroma` once the server stopped.

        Returns:
            Counts (``scrubbed`` log rows, file sizes, ``ms``).

        Raises:
            StoreError: read-only, not an embedded store, or the compaction could not run (then
                it is retried by the next forget, compact or open).
        """
        self._check_open()
        self._writer.check_writable()
        if self.path is None or not self._owns_client:
            raise StoreError("compact() works on an embedded store; stop the server and compact its folder")
        with self._writer.lock:
            return self._compaction.run()

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Records by id from Chroma (no gate: for operators and tests, not for the model).

        An id the write gate merged into another memory as a duplicate returns that memory.
        """
        self._check_open()
        return get_with_aliases(self._backend, self._writer.ledger, ids, memory_space_id)

    def find(self, memory_space_id: str, mid: str) -> MemoryRecord | None:
        """A stored memory by id (from Chroma), or ``None``."""
        got = self.get([mid], memory_space_id=memory_space_id)
        return got[0] if got else None

    def spaces(self) -> list[str]:
        """The memory spaces of this store."""
        self._check_open()
        return self._backend.spaces()

    def all_ids(self, memory_space_id: str) -> set[str]:
        """Every id Chroma holds for a memory space."""
        self._check_open()
        return self._backend.all_ids(memory_space_id)

    def indexed_ids(self, memory_space_id: str) -> set[str]:
        """Every id the in-process BM25 partitions hold for a space (after loading them all)."""
        self._check_open()
        return self._backend.indexed_ids(memory_space_id)

    def index_state(self, memory_space_id: str) -> dict[str, dict[tuple[str, str, str], set[str]]]:
        """Ids per partition in Chroma and in the in-process partitions already loaded (H2).

        For operators and tests checking that the two indexes agree: ``{"chroma": {key: ids},
        "loaded": {key: ids}}``, keys being ``(memory_space_id, route or "", bucket)``. Nothing is
        loaded by asking (the partitions held are brought up to date first).
        """
        self._check_open()
        return self._backend.index_state(memory_space_id)

    def refresh(self, memory_space_id: str | None = None) -> None:
        """Drop in-process partitions so they are rebuilt from Chroma (never needed for coherence: every call checks the change feed)."""
        self._backend.refresh(memory_space_id)

    def search(
        self, query: str, *, scope: Scope | Mapping[str, Any] | None, candidates: int | None = None
    ) -> tuple[list[Hit], dict[str, Any]]:
        """Hybrid retrieval inside the scope, before the gate: fused hits and timings (ms).

        Raises:
            ScopeError: if the scope is missing or incomplete (R1).
            InputError: if the query is not a string, is longer than 10,000 characters, or holds
                a lone surrogate (not valid Unicode), or ``candidates`` is not a positive integer.
        """
        self._check_open()
        scope = check_query(query, coerce_scope(scope), candidates)
        n_cand = candidates or self.fusion.candidates
        t0 = time.perf_counter()
        views = self._backend.views(scope)  # checks the change feed first (coherence, fail closed)
        t1 = time.perf_counter()
        qv = self.embedder.embed_query(query)
        t2 = time.perf_counter()
        channel = (
            partial(self._backend.chroma_vector_channel, scope)
            if self.vector_search == "chroma"
            else vector_ranking
        )
        hits, found = hybrid_search(
            query, views, qv, fusion=self.fusion, candidates=n_cand, vector_channel=channel
        )
        hits = drop_tombstoned(self._ledger, hits)  # see shared_core.store.safety
        timings = {"load_ms": round((t1 - t0) * 1e3, 3), "embed_ms": round((t2 - t1) * 1e3, 3), **found}
        return hits, timings

    def query(
        self,
        query: str,
        *,
        scope: Scope | Mapping[str, Any] | None,
        k: int | None = None,
        dry_run: bool = False,
        now: Any = None,
        config: GateConfig | None = None,
        candidates: int | None = None,
    ) -> GateResult:
        """Hybrid retrieval in the scope, then the recall gate (R1-R12).

        Args:
            query: the question.
            scope: who is asking (required).
            k: at most this many accepted hits (overrides ``max_hits`` for this call).
            dry_run: preview only (R10): identical decisions, audit flagged as dry-run.
            now: evaluate at this instant instead of the clock's.
            config: settings for this call (what-if previews).
            candidates: fused candidates passed to the gate (default: fusion setting).

        Returns:
            Accepted hits with provenance, rejections with reasons, and the audit record.
        """
        scope = coerce_scope(scope)
        if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
            raise InputError("k must be a positive integer")
        hits, timings = self.search(query, scope=scope, candidates=candidates)
        cfg = config or self.gate.config_for(scope)
        if k is not None:
            cfg = cfg.replace(max_hits=k)
        return self.gate.evaluate(
            hits, scope=scope, query=query, dry_run=dry_run, now=now, config=cfg, extra=timings
        )

    def preview(self, query: str, **kwargs: Any) -> GateResult:
        """Dry-run of :meth:`query` (R10): nothing goes to a model, nothing changes."""
        kwargs["dry_run"] = True
        return self.query(query, **kwargs)
