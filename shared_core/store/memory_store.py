"""``MemoryStore``: scoped hybrid memory over Chroma (source of truth) and BM25 (derived).

One collection per memory space (cosine space); inside it, partitions by route and owner bucket.
A query embeds the text once, ranks the scope's partitions by vector similarity and by BM25 (both
confined to the scope *before* top-k, R1), fuses the two rankings by id (RRF by default, H1),
computes the bounded scores the gate thresholds on (cosine and lexical share, DESIGN "Scores"),
and passes the fused hits through the recall gate. The result is a
:class:`~shared_core.gate.GateResult` with its audit record.

Consistency (DESIGN "Consistency of the two indexes"): writes are idempotent upserts by
deterministic id, applied to Chroma first and then to the in-process partitions; if the second
step fails the partition is dropped and rebuilt from Chroma on next use, so the two never diverge.
One writer per persistent path: a file lock, and a second writer gets
:class:`~shared_core.errors.StoreLockedError` within ``lock_timeout`` seconds. Several processes
or machines share a store through a Chroma server (``MemoryStore.http``, H3).

Writes go through the write gate only (W1): see :meth:`MemoryStore.add`.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..audit import AuditSink, JsonlSink, deletion_record, emit
from ..config import SEED_MIN_SCORE, ConfigBook, GateConfig
from ..errors import InputError, ScopeError, StoreError, StoreLockedError
from ..model import (
    SHARED_BUCKET,
    Hit,
    MemoryRecord,
    Scope,
    Tier,
    Visibility,
    bucket_of,
    check_key,
    coerce_scope,
    encode_record,
    partition_where,
    record_from_metadata,
    scope_where,
)
from ..recall.gate import GateResult, RecallGate
from ..recall.rules import DEFAULT_RULES, Rule
from ..retrieval.bm25 import BM25Engine
from ..retrieval.fusion import FusionConfig
from ..retrieval.hybrid import hybrid_search, vector_ranking
from ..retrieval.partition import Partition, PartitionKey, PartitionView, record_text
from ..timeutil import Clock, from_epoch, system_clock, to_utc
from .chroma import check_collection_embedding, chroma_call, collection_name

if TYPE_CHECKING:
    from ..write import WriteDecision, WriteGate, WritePolicy

__all__ = ["MemoryStore"]


def _set_http_timeout(client: Any, timeout: float | None) -> None:
    """Bound every request of a Chroma ``HttpClient`` (its httpx session has no timeout)."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0) if timeout else None)


VectorSearch = Literal["memory", "chroma"]
MAX_QUERY_CHARS = 10_000
READ_RETRIES = 2  # idempotent reads retried after an internal Chroma error (see chroma_call)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class MemoryStore:
    """Scoped hybrid memory: Chroma + BM25, gated on read and on write.

    Args:
        path: folder of a persistent store; ``None`` for an in-memory store (tests, notebooks).
        client: a Chroma client to use instead (e.g. ``chromadb.HttpClient``); see :meth:`http`.
        embedding: any embedding (see :func:`shared_core.embedding.as_embedder`); default: the
            offline all-MiniLM-L6-v2 int8 model shipped with the package.
        config: recall-gate settings; default: the seeds' defaults with ``min_score`` set to the
            embedding's calibrated threshold when it has one.
        write_policy: write-gate settings (W8); default :class:`~shared_core.write_gate.WritePolicy`.
        rules: the recall policy.
        sinks: extra audit sinks; a persistent store also writes ``<path>/audit/audit.jsonl``.
        clock: injected clock.
        bm25_engine: ``"rank_bm25"`` (default) or ``"bm25s"`` (extra ``recall-gate[bm25s]``).
        fusion: fusion settings.
        vector_search: ``"memory"`` (exact, over the partition in process) or ``"chroma"`` (ask
            Chroma's index with the scope in ``where``).
        lock_timeout: seconds to wait for the writer lock of a persistent path.
        read_only: open without the writer lock; writes raise :class:`StoreError`.
        collection_prefix: prefix of collection names (lets several stores share one server).

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
        self.bm25_engine: BM25Engine = bm25_engine
        self.fusion = fusion or FusionConfig()
        self.vector_search: VectorSearch = vector_search
        self._lock_file: Any = None
        self._closed = False

        all_sinks = list(sinks)
        if self.path is not None:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                if not read_only:
                    self._acquire_writer_lock(lock_timeout)
            except OSError as exc:  # a read-only folder or disk, no permission: typed, not a crash
                raise StoreError(
                    f"cannot open the store at {self.path} for writing ({type(exc).__name__}); "
                    "check the folder's permissions and free space, or open it read_only=True"
                ) from None
            all_sinks.insert(0, JsonlSink(self.path / "audit" / "audit.jsonl"))
        self.audit_path = self.path / "audit" / "audit.jsonl" if self.path is not None else None
        self.sinks: tuple[AuditSink, ...] = tuple(all_sinks)

        if client is not None:
            self._client = client
            self.prefix = collection_prefix or "rg"
        elif self.path is not None:
            import chromadb
            from chromadb.config import Settings

            chroma_dir = str(self.path / "chroma")
            self._client = chroma_call(
                "open",
                lambda: chromadb.PersistentClient(
                    path=chroma_dir, settings=Settings(anonymized_telemetry=False)
                ),
            )
            self.prefix = collection_prefix or "rg"
        else:
            import chromadb
            from chromadb.config import Settings

            self._client = chromadb.EphemeralClient(settings=Settings(anonymized_telemetry=False))
            # The in-process ephemeral system is shared: a fresh prefix isolates this store.
            self.prefix = collection_prefix or f"rg{uuid.uuid4().hex[:10]}"

        if config is None:
            threshold = getattr(self.embedder, "recommended_min_score", SEED_MIN_SCORE)
            config = GateConfig(min_score=float(threshold))
        self.gate = RecallGate(config, rules=rules, sinks=self.sinks, clock=clock)
        self._collections: dict[str, Any] = {}
        self._parts: dict[PartitionKey, Partition] = {}
        self._mutex = threading.RLock()
        self._write_policy = write_policy
        self._writer: WriteGate | None = None

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
        import chromadb
        from chromadb.config import Settings

        client = chroma_call(
            "connect",
            lambda: chromadb.HttpClient(host=host, port=port, settings=Settings(anonymized_telemetry=False)),
        )
        _set_http_timeout(client, timeout)
        chroma_call("heartbeat", client.heartbeat)
        return cls(None, client=client, **kwargs)

    def _acquire_writer_lock(self, timeout: float) -> None:
        from filelock import FileLock, Timeout

        assert self.path is not None
        lock = FileLock(str(self.path / ".writer.lock"))
        try:
            lock.acquire(timeout=timeout)
        except Timeout:
            raise StoreLockedError(
                f"the store at {self.path} is open for writing by another process; "
                "open it read_only=True, or use a Chroma server for several writers"
            ) from None
        self._lock_file = lock

    def close(self) -> None:
        """Release the writer lock and drop caches (the store cannot be used afterwards)."""
        with self._mutex:
            self._parts.clear()
            self._collections.clear()
            if self._lock_file is not None:
                self._lock_file.release()
                self._lock_file = None
            self._closed = True

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- collections and partitions -----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def _collection(self, space: str, *, create: bool) -> Any:
        with self._mutex:
            col = self._collections.get(space)
            if col is not None:
                return col
            name = collection_name(self.prefix, space)
            if create:
                meta = {
                    "hnsw:space": "cosine",
                    "rg_space": space,
                    "rg_embedding": self.embedder.name,
                    "rg_dim": int(self.embedder.dimension),
                }
                col = chroma_call(
                    "create collection",
                    lambda: self._client.get_or_create_collection(
                        name, metadata=meta, embedding_function=None
                    ),
                )
            else:
                col = chroma_call("get collection", lambda: self._get_collection_or_none(name))
                if col is None:
                    return None
            check_collection_embedding(col.metadata, self.embedder.name, int(self.embedder.dimension), space)
            self._collections[space] = col
            return col

    def _get_collection_or_none(self, name: str) -> Any:
        try:
            return self._client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if type(exc).__name__ in {
                "NotFoundError",
                "InvalidCollectionException",
            } or "does not exist" in str(exc):
                return None
            raise

    def _partition(self, key: PartitionKey) -> Partition:
        with self._mutex:
            part = self._parts.get(key)
            if part is not None:
                return part
            part = Partition(key, int(self.embedder.dimension), engine=self.bm25_engine)
            col = self._collection(key[0], create=False)
            if col is not None:
                got = chroma_call(
                    "load partition",
                    lambda: col.get(
                        where=partition_where(key[1] or None, key[2]),
                        include=["embeddings", "documents", "metadatas"],
                    ),
                    retries=READ_RETRIES,
                )
                if got["ids"]:
                    records = [
                        record_from_metadata(i, d, m)
                        for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
                    ]
                    part.upsert(records, np.asarray(got["embeddings"], dtype=np.float32))
            self._parts[key] = part
            return part

    @staticmethod
    def _key(record: MemoryRecord) -> PartitionKey:
        return (
            record.memory_space_id,
            record.route_id or "",
            bucket_of(record.user_id, record.agent_id, record.visibility),
        )

    @staticmethod
    def _scope_keys(scope: Scope) -> tuple[PartitionKey, PartitionKey]:
        route = scope.route_id or ""
        private = bucket_of(scope.user_id, scope.agent_id, Visibility.PRIVATE)
        return (scope.memory_space_id, route, private), (scope.memory_space_id, route, SHARED_BUCKET)

    # -- writes (called by the write gate only) -------------------------------------------------

    def embed_records(self, records: Sequence[MemoryRecord]) -> NDArray[np.float32]:
        """Embeddings of records' indexed text (title and body)."""
        return self.embedder.embed_documents([record_text(r) for r in records])

    def _commit(
        self,
        upserts: Sequence[MemoryRecord] = (),
        vectors: NDArray[np.float32] | None = None,
        deletes: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Apply upserts and deletes to Chroma, then to the partitions (both or neither).

        Only the write gate calls this (W1). ``deletes`` are ``(memory_space_id, id)`` pairs.
        """
        self._check_open()
        if self.read_only:
            raise StoreError("the store is open read-only")
        upserts = list(upserts)
        if upserts and vectors is None:
            vectors = self.embed_records(upserts)
        by_space: dict[str, list[int]] = defaultdict(list)
        for i, rec in enumerate(upserts):
            by_space[rec.memory_space_id].append(i)
        del_by_space: dict[str, list[str]] = defaultdict(list)
        for space, mid in deletes:
            del_by_space[space].append(mid)

        with self._mutex:
            for space in sorted(set(by_space) | set(del_by_space)):
                col = self._collection(space, create=True)
                idx = by_space.get(space, [])
                touched_ids = [upserts[i].id for i in idx] + del_by_space.get(space, [])
                previous = self._locate(col, touched_ids)
                try:
                    if idx and vectors is not None:
                        docs, metas = zip(*(encode_record(upserts[i]) for i in idx), strict=True)
                        chroma_call(
                            "upsert",
                            partial(
                                col.upsert,
                                ids=[upserts[i].id for i in idx],
                                embeddings=np.asarray(vectors[idx], dtype=np.float32),
                                documents=list(docs),
                                metadatas=list(metas),
                            ),
                        )
                    if del_by_space.get(space):
                        chroma_call("delete", partial(col.delete, ids=del_by_space[space]))
                    for mid, key in previous.items():
                        part = self._parts.get(key)
                        if part is not None:
                            part.remove([mid])
                    for i in idx:
                        key = self._key(upserts[i])
                        if key in self._parts and vectors is not None:
                            self._parts[key].upsert([upserts[i]], vectors[[i]])
                except Exception:
                    # Chroma has the truth, and a failed call (a timeout, say) may still have been
                    # applied: drop the space's partitions, rebuilt from Chroma on next use.
                    for key in [k for k in self._parts if k[0] == space]:
                        del self._parts[key]
                    raise

    def _locate(self, col: Any, ids: Sequence[str]) -> dict[str, PartitionKey]:
        if not ids:
            return {}
        got = chroma_call(
            "locate", lambda: col.get(ids=list(ids), include=["metadatas"]), retries=READ_RETRIES
        )
        out: dict[str, PartitionKey] = {}
        for mid, meta in zip(got["ids"], got["metadatas"], strict=True):
            out[mid] = (
                str(meta.get("memory_space_id", "")),
                str(meta.get("rg_route", "")),
                str(meta.get("rg_bucket", "")),
            )
        return out

    # -- the write gate -------------------------------------------------------------------------

    @property
    def writer(self) -> WriteGate:
        """The write gate in front of this store (the only write path, W1)."""
        if self._writer is None:
            from ..write import WriteGate

            with self._mutex:  # one write gate, hence one write lock, even when threads race here
                if self._writer is None:
                    policy = self._write_policy if self._write_policy is not None else self.gate.book
                    self._writer = WriteGate(self, policy=policy, sinks=self.sinks, clock=self.clock)
        return self._writer

    def add(self, items: Iterable[Any], *, dry_run: bool = False) -> list[WriteDecision]:
        """Write memories through the write gate; returns one decision per item (W1).

        Items are :class:`~shared_core.write_gate.MemoryCandidate` objects or mappings of their
        fields (title, body, scope fields, status, tags, origin, ...).
        """
        return self.writer.submit(items, dry_run=dry_run)

    # -- reads ----------------------------------------------------------------------------------

    def get(self, ids: Sequence[str], *, memory_space_id: str) -> list[MemoryRecord]:
        """Records by id from Chroma (no gate: for operators and tests, not for the model)."""
        self._check_open()
        col = self._collection(memory_space_id, create=False)
        if col is None or not ids:
            return []
        got = chroma_call(
            "get", lambda: col.get(ids=list(ids), include=["documents", "metadatas"]), retries=READ_RETRIES
        )
        return [
            record_from_metadata(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]

    def all_ids(self, memory_space_id: str) -> set[str]:
        """Every id Chroma holds for a memory space."""
        col = self._collection(memory_space_id, create=False)
        if col is None:
            return set()
        return set(chroma_call("list ids", lambda: col.get(include=[]))["ids"])

    def indexed_ids(self, memory_space_id: str) -> set[str]:
        """Every id the in-process BM25 partitions hold for a space (after loading them all)."""
        col = self._collection(memory_space_id, create=False)
        if col is None:
            return set()
        metas = chroma_call("list partitions", lambda: col.get(include=["metadatas"]))["metadatas"]
        keys = {(memory_space_id, str(m.get("rg_route", "")), str(m.get("rg_bucket", ""))) for m in metas}
        with self._mutex:
            keys |= {k for k in self._parts if k[0] == memory_space_id}
        out: set[str] = set()
        for key in keys:
            out |= set(self._partition(key).view().ids)
        return out

    def refresh(self, memory_space_id: str | None = None) -> None:
        """Drop in-process partitions so they are rebuilt from Chroma (after outside writes)."""
        with self._mutex:
            for key in [k for k in self._parts if memory_space_id in (None, k[0])]:
                del self._parts[key]

    def search(
        self, query: str, *, scope: Scope | Mapping[str, Any] | None, candidates: int | None = None
    ) -> tuple[list[Hit], dict[str, Any]]:
        """Hybrid retrieval inside the scope, before the gate: fused hits and timings (ms).

        Raises:
            ScopeError: if the scope is missing or incomplete (R1).
            InputError: if the query is not a string, is longer than 10,000 characters, or holds
                a lone surrogate (not valid Unicode).
        """
        self._check_open()
        scope = coerce_scope(scope)
        if not isinstance(query, str):
            raise InputError(f"query must be a string, not {type(query).__name__}")
        if len(query) > MAX_QUERY_CHARS:
            raise InputError(f"query is longer than {MAX_QUERY_CHARS} characters")
        if _LONE_SURROGATE.search(query):
            raise InputError("query is not valid Unicode (it holds a lone surrogate)")
        for name, value in scope.model_dump().items():
            if isinstance(value, str) and _LONE_SURROGATE.search(value):
                raise ScopeError(f"invalid scope: {name} is not valid Unicode (lone surrogate)")
        n_cand = candidates or self.fusion.candidates
        t0 = time.perf_counter()
        priv_key, shared_key = self._scope_keys(scope)
        views = [self._partition(priv_key).view(), self._partition(shared_key).view()]
        t1 = time.perf_counter()
        qv = self.embedder.embed_query(query)
        t2 = time.perf_counter()
        channel = partial(self._chroma_vector_channel, scope) if self.vector_search == "chroma" else vector_ranking
        hits, found = hybrid_search(
            query, views, qv, fusion=self.fusion, candidates=n_cand, vector_channel=channel
        )
        timings = {"load_ms": round((t1 - t0) * 1e3, 3), "embed_ms": round((t2 - t1) * 1e3, 3), **found}
        return hits, timings

    def _chroma_vector_channel(
        self, scope: Scope, views: Sequence[PartitionView], qv: NDArray[np.float32], n: int
    ) -> tuple[list[str], list[float]]:
        """The vector ranking from Chroma's own index, with the scope in ``where`` (R1)."""
        col = self._collection(scope.memory_space_id, create=False)
        total = sum(len(v.ids) for v in views)
        if col is None or total == 0:
            return [], []
        got = chroma_call(
            "vector query",
            lambda: col.query(
                query_embeddings=[np.asarray(qv, dtype=np.float32)],
                n_results=min(n, total),
                where=scope_where(scope),
                include=["distances"],
            ),
            retries=READ_RETRIES,
        )
        return list(got["ids"][0]), [1.0 - float(d) for d in got["distances"][0]]

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
        hits, timings = self.search(query, scope=scope, candidates=candidates)
        cfg = config or self.gate.config_for(scope)
        if k is not None:
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise InputError("k must be a positive integer")
            cfg = cfg.replace(max_hits=k)
        return self.gate.evaluate(
            hits, scope=scope, query=query, dry_run=dry_run, now=now, config=cfg, extra=timings
        )

    def preview(self, query: str, **kwargs: Any) -> GateResult:
        """Dry-run of :meth:`query` (R10): nothing goes to a model, nothing changes."""
        kwargs["dry_run"] = True
        return self.query(query, **kwargs)

    # -- helpers for the write gate -------------------------------------------------------------

    def find(self, memory_space_id: str, mid: str) -> MemoryRecord | None:
        """A stored memory by id (from Chroma), or ``None``."""
        got = self.get([mid], memory_space_id=memory_space_id)
        return got[0] if got else None

    def vector_of(self, record: MemoryRecord) -> NDArray[np.float32]:
        """The stored vector of a memory (from its partition, else recomputed)."""
        found = self._partition(self._key(record)).get(record.id)
        if found is not None:
            return found[1]
        vec: NDArray[np.float32] = self.embed_records([record])[0]
        return vec

    def _stored_elsewhere(self, records: Sequence[MemoryRecord]) -> dict[str, MemoryRecord]:
        """Stored memories having the id of one of ``records`` but sitting in another partition.

        Ids are unique per memory space (one Chroma collection), partitions are not: without this
        check an upsert would silently move a memory between partitions (its owner's shared and
        private copies of one text), or overwrite another scope's memory named by an explicit id.
        """
        wanted: dict[str, list[str]] = defaultdict(list)
        for rec in records:
            if self._partition(self._key(rec)).get(rec.id) is None:
                wanted[rec.memory_space_id].append(rec.id)
        out: dict[str, MemoryRecord] = {}
        for space, ids in wanted.items():
            for found in self.get(list(dict.fromkeys(ids)), memory_space_id=space):
                out[found.id] = found
        return out

    def find_duplicate(
        self,
        record: MemoryRecord,
        vector: NDArray[np.float32],
        threshold: float,
        *,
        exclude: Iterable[str] = (),
    ) -> MemoryRecord | None:
        """An active memory in the same partition with the same id or cosine >= ``threshold`` (W2).

        Ids in ``exclude`` (the memories a correction replaces) are never duplicates.
        """
        excluded = set(exclude)
        part = self._partition(self._key(record))
        same = part.get(record.id)
        if same is not None:
            return same[0]
        view = part.view()
        if not view.ids:
            return None
        sims = view.similarities(vector)
        for i in np.argsort(-sims):
            if sims[i] < threshold:
                break
            candidate: MemoryRecord = view.records[i]
            if candidate.superseded_by is None and candidate.id not in excluded:
                return candidate
        return None

    def find_same_attribute(self, record: MemoryRecord) -> MemoryRecord | None:
        """The newest active memory in the partition with the same entity and attribute (W2, L1)."""
        matches = [
            r
            for r in self._partition(self._key(record)).records()
            if r.entity == record.entity
            and r.attribute == record.attribute
            and r.superseded_by is None
            and r.id != record.id
        ]
        return max(matches, key=lambda r: r.updated_at) if matches else None

    # -- ledger: quarantine and tombstones (W6, L2) --------------------------------------------

    def _ledger(self, kind: str) -> Any:
        key = f"__{kind}__"
        with self._mutex:
            col = self._collections.get(key)
            if col is None:
                name = f"{self.prefix}-{kind}"
                col = chroma_call(
                    f"open {kind}",
                    lambda: self._client.get_or_create_collection(
                        name, metadata={"rg_kind": kind}, embedding_function=None
                    ),
                )
                self._collections[key] = col
            return col

    def tombstoned(self, source_record_id: str | None, mid: str | None) -> bool:
        """True when the source or the memory id was forgotten (L2)."""
        keys = [
            k
            for k in (f"src:{source_record_id}" if source_record_id else None, f"mem:{mid}" if mid else None)
            if k
        ]
        if not keys:
            return False
        got = chroma_call(
            "tombstones", lambda: self._ledger("tombstones").get(ids=keys, include=[]), retries=READ_RETRIES
        )
        return bool(got["ids"])

    def _add_tombstones(self, keys: Sequence[str], *, counts: int) -> None:
        if not keys:
            return
        now = self.clock().timestamp()
        chroma_call(
            "tombstone",
            lambda: self._ledger("tombstones").upsert(
                ids=list(keys),
                embeddings=[[1.0]] * len(keys),
                metadatas=[{"at_ts": now, "deleted": counts}] * len(keys),
            ),
        )

    def _quarantine_put(
        self,
        candidates: Sequence[Any],
        *,
        now: Any,
        ttl_days: float | Sequence[float],
        reasons: Sequence[Sequence[Any]],
        dry_run: bool = False,
    ) -> list[str]:
        """Hold candidates apart from long-term memory (never recalled, W6); returns their ids."""
        from ..write import memory_id

        ids = ["q_" + memory_id(c.scope, c.title, c.body)[4:] for c in candidates]
        ttls = [float(ttl_days)] * len(candidates) if isinstance(ttl_days, (int, float)) else list(ttl_days)
        if dry_run or not candidates:
            return ids
        if self.read_only:
            raise StoreError("the store is open read-only")
        metas = [
            {
                "candidate": c.model_dump_json(),
                "held_at_ts": now.timestamp(),
                "expires_ts": now.timestamp() + ttl * 86400.0,
                "reasons": json.dumps([getattr(r, "value", str(r)) for r in rs]),
                "memory_space_id": c.memory_space_id,
                "source_record_id": c.source_record_id or "",
            }
            for c, rs, ttl in zip(candidates, reasons, ttls, strict=True)
        ]
        chroma_call(
            "quarantine",
            lambda: self._ledger("quarantine").upsert(
                ids=ids,
                embeddings=[[1.0]] * len(ids),
                documents=[c.body for c in candidates],
                metadatas=metas,
            ),
        )
        return ids

    def quarantine_list(self, *, memory_space_id: str | None = None) -> list[dict[str, Any]]:
        """Held candidates: id, space, reasons, held_at and expires (no text)."""
        where = {"memory_space_id": memory_space_id} if memory_space_id else None
        got = chroma_call(
            "quarantine list", lambda: self._ledger("quarantine").get(where=where, include=["metadatas"])
        )
        out = []
        for qid, meta in zip(got["ids"], got["metadatas"], strict=True):
            out.append(
                {
                    "id": qid,
                    "memory_space_id": meta.get("memory_space_id"),
                    "reasons": json.loads(str(meta.get("reasons", "[]"))),
                    "held_at": from_epoch(float(meta["held_at_ts"])).isoformat(),
                    "expires_at": from_epoch(float(meta["expires_ts"])).isoformat(),
                    "source_record_id": meta.get("source_record_id") or None,
                }
            )
        return sorted(out, key=lambda d: (d["held_at"], d["id"]))

    def quarantine_approve(self, qid: str, *, reviewer: str = "operator") -> WriteDecision:
        """Approve a held candidate: it is written as a confirmed, cited memory (W6).

        The candidate goes through the write gate's commit again (tombstones and dedup apply); its
        screens already ran when it was held, and a reviewer vouched for it.

        Raises:
            InputError: if there is no such quarantined candidate.
        """
        from ..write import MemoryCandidate, WriteAction, WriteDecision

        col = self._ledger("quarantine")
        got = chroma_call("quarantine get", lambda: col.get(ids=[qid], include=["metadatas"]))
        if not got["ids"]:
            raise InputError(f"no quarantined candidate {qid!r}")
        cand = MemoryCandidate.model_validate_json(str(got["metadatas"][0]["candidate"]))
        if float(got["metadatas"][0]["expires_ts"]) <= self.clock().timestamp():
            chroma_call("quarantine delete", lambda: col.delete(ids=[qid]))
            raise InputError(f"quarantined candidate {qid!r} expired")
        if self.tombstoned(cand.source_record_id, None):
            chroma_call("quarantine delete", lambda: col.delete(ids=[qid]))
            return WriteDecision(index=0, action=WriteAction.REJECT, id=qid, reasons=())
        record = self.writer._record(cand.model_copy(update={"cited": True}), to_utc(self.clock()))
        record = record.model_copy(
            update={"tier": Tier.CONFIRMED, "verification_status": f"approved_by:{reviewer}"}
        )
        with self.writer._lock:  # the dedup-and-commit step of submit(), under the same lock
            decisions = self.writer._dedup_and_commit(
                [(0, record, [], [])], to_utc(self.clock()), dry_run=False
            )
        chroma_call("quarantine delete", lambda: col.delete(ids=[qid]))
        self.writer._audit(decisions, to_utc(self.clock()), dry_run=False)
        return decisions[0]

    def quarantine_reject(self, qid: str) -> bool:
        """Discard a held candidate; returns whether it existed."""
        col = self._ledger("quarantine")
        got = chroma_call("quarantine get", lambda: col.get(ids=[qid], include=[]))
        if not got["ids"]:
            return False
        chroma_call("quarantine delete", lambda: col.delete(ids=[qid]))
        return True

    def quarantine_purge(self) -> int:
        """Discard expired held candidates (W6); returns how many."""
        col = self._ledger("quarantine")
        now = self.clock().timestamp()
        got = chroma_call(
            "quarantine purge", lambda: col.get(where={"expires_ts": {"$lte": now}}, include=[])
        )
        if got["ids"]:
            chroma_call("quarantine delete", lambda: col.delete(ids=got["ids"]))
        return len(got["ids"])

    # -- lifecycle: forget, correct, history, expiry, reconcile (L1-L3, W7) ---------------------

    def _space_collections(self) -> list[tuple[str, Any]]:
        cols = chroma_call("list collections", self._client.list_collections)
        out = []
        for c in cols:
            name = c if isinstance(c, str) else c.name
            if not name.startswith(f"{self.prefix}-") or name in (
                f"{self.prefix}-quarantine",
                f"{self.prefix}-tombstones",
            ):
                continue
            col = c if not isinstance(c, str) else self._client.get_collection(name, embedding_function=None)
            space = (col.metadata or {}).get("rg_space")
            if isinstance(space, str):
                out.append((space, self._collection(space, create=False)))
        return out

    def forget(self, source_record_id: str) -> dict[str, Any]:
        """Delete everything derived from a source record, tombstone it, audit the counts (L2).

        Runs under the write gate's lock, so no write can revive what it deletes. If Chroma fails
        half-way, a ``delete`` audit record names the error and the call can simply be repeated
        (tombstones go first, so a half-done forget never brings anything back).

        Returns:
            ``{"source_record_id", "memories", "quarantined", "ids"}`` (counts and ids, no text).
        """
        self._check_open()
        if self.read_only:
            raise StoreError("the store is open read-only")
        check_key(source_record_id, "source_record_id")
        # Serialised with the write gate: a write or correction deciding against a memory of this
        # source cannot commit it (or revive it) between our lookup and our delete.
        with self.writer._lock:
            try:
                return self._forget(source_record_id)
            except Exception as exc:
                failed = deletion_record(
                    at=to_utc(self.clock()).isoformat(),
                    source_record_id=source_record_id,
                    ids=[],
                    counts={},
                )
                extra = {**failed.extra, "tombstoned": None, "error": type(exc).__name__}
                emit(failed.model_copy(update={"extra": extra}), self.sinks)
                raise

    def _forget(self, source_record_id: str) -> dict[str, Any]:
        deletes: list[tuple[str, str]] = []
        for space, col in self._space_collections():
            got = chroma_call(
                "forget find", partial(col.get, where={"source_record_id": source_record_id}, include=[])
            )
            deletes.extend((space, mid) for mid in got["ids"])
        q = self._ledger("quarantine")
        held = chroma_call(
            "forget quarantine", lambda: q.get(where={"source_record_id": source_record_id}, include=[])
        )["ids"]
        # Tombstones first: a crash after this point can only leave fewer memories, never revive one.
        self._add_tombstones(
            [f"src:{source_record_id}", *(f"mem:{m}" for _, m in deletes)], counts=len(deletes)
        )
        if deletes:
            self._commit(deletes=deletes)
        if held:
            chroma_call("forget quarantine delete", lambda: q.delete(ids=held))
        ids = sorted(m for _, m in deletes)
        report: dict[str, Any] = {
            "source_record_id": source_record_id,
            "memories": len(deletes),
            "quarantined": len(held),
            "ids": ids,
        }
        emit(
            deletion_record(
                at=to_utc(self.clock()).isoformat(),
                source_record_id=source_record_id,
                ids=ids,
                counts={"memories": len(deletes), "quarantined": len(held)},
            ),
            self.sinks,
        )
        return report

    def delete(self, ids: Sequence[str], *, memory_space_id: str) -> int:
        """Delete memories by id, with tombstones so they cannot come back (L2); returns how many."""
        with self.writer._lock:  # serialised with the write gate, as forget()
            present = [r.id for r in self.get(list(ids), memory_space_id=memory_space_id)]
            self._add_tombstones([f"mem:{m}" for m in present], counts=len(present))
            if present:
                self._commit(deletes=[(memory_space_id, m) for m in present])
            return len(present)

    def correct(
        self, memory_id: str, *, memory_space_id: str, body: str, title: str | None = None, **fields: Any
    ) -> WriteDecision:
        """Correct a memory: a new memory supersedes it, through the write gate (L1).

        Raises:
            InputError: if the memory does not exist.
        """
        old = self.find(memory_space_id, memory_id)
        if old is None:
            raise InputError(f"no memory {memory_id!r} in space {memory_space_id!r}")
        cand = {
            "title": old.title if title is None else title,
            "body": body,
            "user_id": old.user_id,
            "agent_id": old.agent_id,
            "memory_space_id": old.memory_space_id,
            "route_id": old.route_id,
            "visibility": old.visibility,
            "status": old.status,
            "tier": old.tier,
            "origin": fields.pop("origin", "user_explicit"),
            "cited": fields.pop("cited", True),
            "tags": old.tags,
            "source_record_id": old.source_record_id,
            "entity": old.entity,
            "attribute": old.attribute,
            "supersedes": (memory_id,),
            **fields,
        }
        return self.add([cand])[0]

    def history(self, memory_id: str, *, memory_space_id: str) -> list[MemoryRecord]:
        """The correction chain through a memory, oldest first (L1: history on request)."""
        seen: dict[str, MemoryRecord] = {}
        frontier = [memory_id]
        while frontier and len(seen) < 1000:
            mid = frontier.pop()
            if mid in seen:
                continue
            rec = self.find(memory_space_id, mid)
            if rec is None:
                continue
            seen[mid] = rec
            frontier.extend(rec.supersedes)
            if rec.superseded_by:
                frontier.append(rec.superseded_by)
        return sorted(seen.values(), key=lambda r: (r.created_at or r.updated_at, r.id))

    def purge_expired(self) -> int:
        """Delete memories past their retention expiry (L3) and expired quarantine; returns how many."""
        now = self.clock().timestamp()
        deletes: list[tuple[str, str]] = []
        for space, col in self._space_collections():
            got = chroma_call("expired", partial(col.get, where={"expires_at_ts": {"$lte": now}}, include=[]))
            deletes.extend((space, m) for m in got["ids"])
        if deletes:
            self._commit(deletes=deletes)
        return len(deletes) + self.quarantine_purge()

    def reconcile(self, memory_space_id: str) -> dict[str, int]:
        """Batch tier reconciliation (W7): promote by evidence, demote contradicted memories.

        Active memories sharing an ``entity`` + ``attribute`` contradict each other: the newest keeps
        its tier and the others are demoted to ``tentative``.
        """
        with self.writer._lock:  # read-modify-write: no write or forget may slip in between
            return self._reconcile(memory_space_id)

    def _reconcile(self, memory_space_id: str) -> dict[str, int]:
        col = self._collection(memory_space_id, create=False)
        if col is None:
            return {"promoted": 0, "demoted": 0}
        got = chroma_call("reconcile", lambda: col.get(include=["documents", "metadatas"]))
        records = [
            record_from_metadata(i, d, m)
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]
        changed: dict[str, MemoryRecord] = {}
        promote_at = self.writer.policy_for(memory_space_id).promote_at
        for r in records:
            if r.tier is Tier.TENTATIVE and r.evidence_count >= promote_at:
                changed[r.id] = r.model_copy(update={"tier": Tier.CONFIRMED})
        groups: dict[tuple[str, str, str, str], list[MemoryRecord]] = defaultdict(list)
        for r in records:
            if r.entity and r.attribute and r.superseded_by is None:
                key = self._key(r)
                groups[(key[1], key[2], r.entity, r.attribute)].append(r)
        demoted = 0
        for members in groups.values():
            if len(members) < 2:
                continue
            members.sort(key=lambda r: (r.updated_at, r.id))
            for r in members[:-1]:
                if r.tier is not Tier.TENTATIVE:
                    changed[r.id] = changed.get(r.id, r).model_copy(update={"tier": Tier.TENTATIVE})
                    demoted += 1
        if changed:
            recs = list(changed.values())
            self._commit(recs, np.stack([self.vector_of(r) for r in recs]).astype(np.float32))
        promoted = sum(1 for r in changed.values() if r.tier is Tier.CONFIRMED)
        return {"promoted": promoted, "demoted": demoted}
