"""The change feed: how every client of one Chroma learns of every other client's writes (H2, H3).

Local Chroma has no change feed, and no multi-operation transactions (FACTS). This module keeps a
small one in Chroma itself, next to the memories, for one store prefix:

``<prefix>-heads``
    one record per ``(memory space, writer)``: ``pending`` (the last sequence number the writer
    started), ``done`` (the last it finished), ``dels`` (the last that deleted something) and the
    wall-clock time. A writer is one store object in one process (a random id; an embedded
    writer keeps one id across restarts in ``<store>/.writer-id``).
``<prefix>-changes``
    one record per delete: the space, writer, sequence number and the deleted ids (ids only,
    never text).

(An embedded store keeps the same two tables in ``<store>/feed.sqlite3``: :class:`SqliteFeedStorage`.)

Every memory a writer upserts carries its writer id and sequence number in its metadata
(``rg_w``, ``rg_seq``, numeric so that ``{"rg_seq": {"$gt": n}}`` filters them).

**Writer** (:meth:`ChangeFeed.begin` / :meth:`ChangeFeed.end`), per space touched by one commit:
(1) a change record with the ids it will delete, if any; (2) the head with ``pending = seq``;
(3) the data (upserts stamped ``rg_w``/``rg_seq``, deletes); (4) the head with ``done = seq``.
A writer that dies after (2) leaves ``pending > done``: readers keep re-reading that writer's
records above ``done`` (whatever of step 3 landed), so nothing it wrote is ever missed; the
embedded writer settles its own head when it reopens. The sole writer of an embedded store writes
(4) with the (2) of its next commit in the space, or shortly after its last one
(:class:`ChangeFeed`, ``defer_ends``): the same ``pending > done`` state, for a few milliseconds.

**Reader** (the backend's ``sync``), before each query or write, per space it holds: one small
read of the space's heads. Unchanged heads: nothing else. A head that moved: the writer's records
with ``rg_seq`` above what was applied (with vectors), and, if ``dels`` moved, the ids of its
change records above it, re-read by id (present: upsert; absent: removed), so deletes and
re-writes by different writers cannot be applied in the wrong order. What was applied is
remembered as that head's ``done`` (never ``pending``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .chroma import READ_RETRIES, chroma_call, kind_collection

__all__ = ["FEED_KINDS", "ChangeFeed", "ChromaFeedStorage", "Head", "SqliteFeedStorage", "stable_writer_id"]

_log = logging.getLogger("recall_gate.store")
_RETRY_S = 1.0  # a deferred end that failed to be written is tried again after this long


def _flush_at_exit(feed: ChangeFeed) -> Callable[[], None]:
    """Write ``feed``'s deferred ends when the interpreter exits (a store never closed), if it still lives."""
    ref = weakref.ref(feed)

    def flush() -> None:
        alive = ref()
        if alive is not None:
            alive.close()

    atexit.register(flush)
    return flush

FEED_KINDS = ("heads", "changes")
W_KEY = "rg_w"
SEQ_KEY = "rg_seq"


@dataclass(frozen=True)
class Head:
    """One writer's progress in one memory space."""

    writer: str
    pending: int
    done: int
    dels: int
    at: float


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def stable_writer_id(folder: Path) -> str:
    """The writer id kept in ``<folder>/.writer-id`` (created on first use)."""
    path = folder / ".writer-id"
    try:
        text = path.read_text(encoding="ascii").strip()
        if text:
            return text
    except OSError:
        pass
    wid = "e" + uuid.uuid4().hex[:15]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(wid, encoding="ascii")
    tmp.replace(path)
    return wid


class ChromaFeedStorage:
    """The feed's heads and change records in two Chroma collections (server and in-memory stores)."""

    def __init__(self, client: Any, *, prefix: str, read_only: bool = False) -> None:
        self._client = client
        self.prefix = prefix
        self.read_only = read_only
        self._cols: dict[str, Any] = {}
        self._mutex = threading.Lock()

    def clear_cache(self) -> None:
        """Forget collection handles (after the client was reopened)."""
        with self._mutex:
            self._cols.clear()

    def _col(self, kind: str) -> Any:
        with self._mutex:
            col = self._cols.get(kind)
            if col is None:
                client = self._client() if callable(self._client) else self._client
                col = kind_collection(client, self.prefix, kind, read_only=self.read_only)
                if col is None:
                    return None
                self._cols[kind] = col
            return col

    def heads(self, where: dict[str, Any]) -> list[dict[str, Any]]:
        """Head records matching ``where`` (one key: ``space`` or ``w``)."""
        col = self._col("heads")
        if col is None:
            return []
        got = chroma_call(
            "read heads", lambda: col.get(where=where, include=["metadatas"]), retries=READ_RETRIES
        )
        return [dict(m) for m in got["metadatas"]]

    def put_head(self, meta: dict[str, Any]) -> None:
        """Write one head record."""
        col = self._col("heads")
        hid = "h_" + _digest(str(meta["space"]), str(meta["w"]))
        chroma_call("write head", lambda: col.upsert(ids=[hid], embeddings=[[1.0]], metadatas=[meta]))

    def put_change(self, space: str, writer: str, seq: int, ids: Sequence[str]) -> None:
        """Write one change record (the ids a commit deletes)."""
        col = self._col("changes")
        meta = {"space": space, "w": writer, "seq": seq, "ids": json.dumps(list(ids))}
        cid = f"c_{writer}_{seq}_{_digest(space)[:12]}"
        chroma_call("change log", lambda: col.upsert(ids=[cid], embeddings=[[1.0]], metadatas=[meta]))

    def changes(self, space: str, writer: str, after: int) -> list[str]:
        """Ids deleted by a writer in a space above a sequence number."""
        col = self._col("changes")
        if col is None:
            return []
        where = {"$and": [{"space": space}, {"w": writer}, {"seq": {"$gt": after}}]}
        got = chroma_call("read changes", lambda: col.get(where=where, include=["metadatas"]),
                          retries=READ_RETRIES)  # fmt: skip
        return [str(x) for m in got["metadatas"] for x in json.loads(str(m.get("ids", "[]")))]


class SqliteFeedStorage:
    """The feed of an embedded store in ``<store>/feed.sqlite3`` (readers open it ``mode=ro``).

    A persistent Chroma upsert costs ~40 ms on this machine (against 0.5 ms for a read), and the
    feed adds two or three writes to every commit, so an embedded store keeps it in a small SQLite
    file of its own instead: one durable write per step (rollback journal, ``synchronous=FULL``;
    no WAL, so a reader creates no ``-wal``/``-shm`` file, and a reader of a read-only folder can
    open it). The journal is kept between transactions (``journal_mode=PERSIST``: its header is
    zeroed instead of the file being deleted), which spares every commit a file creation and a
    deletion: 0.86 against 1.33 ms per commit here, and a write commits twice (begin, end).
    A reader treats a zeroed journal as no journal. It holds ids, sequence numbers and times
    only.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self._con: sqlite3.Connection | None = None
        self._mutex = threading.Lock()

    def clear_cache(self) -> None:
        """Nothing to forget (the file is opened once)."""

    def _db(self) -> sqlite3.Connection | None:
        if self._con is not None:
            return self._con
        try:
            if self.read_only:
                if not self.path.exists():
                    return None
                con = sqlite3.connect(
                    f"file:{self.path}?mode=ro", uri=True, timeout=10, check_same_thread=False
                )
            else:
                con = sqlite3.connect(str(self.path), timeout=10, check_same_thread=False)
                con.execute("PRAGMA journal_mode=PERSIST")  # readers open it mode=ro and create no file
                con.execute("PRAGMA synchronous=FULL")
                con.execute(
                    "CREATE TABLE IF NOT EXISTS heads (space TEXT, w TEXT, pending INTEGER, done INTEGER, "
                    "dels INTEGER, at REAL, PRIMARY KEY (space, w))"
                )
                con.execute(
                    "CREATE TABLE IF NOT EXISTS changes (space TEXT, w TEXT, seq INTEGER, ids TEXT, "
                    "PRIMARY KEY (space, w, seq))"
                )
                con.commit()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the change feed {self.path} ({type(exc).__name__})") from None
        self._con = con
        return con

    def _query(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        with self._mutex:
            con = self._db()
            if con is None:
                return []
            try:
                return con.execute(sql, tuple(args)).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read the change feed ({type(exc).__name__})") from None

    def _write(self, sql: str, args: Sequence[Any]) -> None:
        with self._mutex:
            con = self._db()
            if con is None:  # pragma: no cover - writers always open the file
                raise StoreError("the change feed is not writable")
            try:
                con.execute(sql, tuple(args))
                con.commit()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write the change feed ({type(exc).__name__})") from None

    def heads(self, where: dict[str, Any]) -> list[dict[str, Any]]:
        """Head records matching ``where`` (one key: ``space`` or ``w``)."""
        key, value = next(iter(where.items()))
        column = {"space": "space", "w": "w"}[key]
        rows = self._query(f"SELECT space, w, pending, done, dels, at FROM heads WHERE {column} = ?", [value])
        return [dict(zip(("space", "w", "pending", "done", "dels", "at"), r, strict=True)) for r in rows]

    def put_head(self, meta: dict[str, Any]) -> None:
        """Write one head record."""
        self._write(
            "INSERT OR REPLACE INTO heads (space, w, pending, done, dels, at) VALUES (?, ?, ?, ?, ?, ?)",
            [meta["space"], meta["w"], meta["pending"], meta["done"], meta["dels"], meta["at"]],
        )

    def put_change(self, space: str, writer: str, seq: int, ids: Sequence[str]) -> None:
        """Write one change record (the ids a commit deletes)."""
        self._write(
            "INSERT OR REPLACE INTO changes (space, w, seq, ids) VALUES (?, ?, ?, ?)",
            [space, writer, seq, json.dumps(list(ids))],
        )

    def changes(self, space: str, writer: str, after: int) -> list[str]:
        """Ids deleted by a writer in a space above a sequence number."""
        rows = self._query(
            "SELECT ids FROM changes WHERE space = ? AND w = ? AND seq > ?", [space, writer, after]
        )
        return [str(x) for (ids,) in rows for x in json.loads(ids)]

    def close(self) -> None:
        """Close the file."""
        with self._mutex:
            if self._con is not None:
                self._con.close()
                self._con = None


FeedStorage = ChromaFeedStorage | SqliteFeedStorage


class ChangeFeed:
    """Heads and change records of one store (see module docstring).

    **Deferred ends** (``defer_ends``, the sole writer of an embedded store): step 4 of a commit is
    not written at once. The begin of the writer's next commit in that space says ``done = k`` as it
    says ``pending = k + 1`` (one durable write per commit instead of two: ~0.7 ms of a one-memory
    write here), and a background thread writes the end ``defer_s`` after the writer's last commit
    in that space (a failed write is tried again a second later), at :meth:`close` (a failure there
    is logged: the writer settles its head when it reopens), and when the interpreter exits. Meanwhile the head says ``pending > done``, the state the protocol already
    has for a writer that died after its data: a reader re-reads that commit's records (nothing is
    missed), it just reads them again until the end lands.

    Args:
        storage: where heads and change records live.
        writer_id: this writer's id (default: a fresh random one).
        defer_ends: write each commit's end with the next begin, or ``defer_s`` after the last one.
        defer_s: how long a deferred end waits for a next commit.
    """

    def __init__(
        self, storage: FeedStorage, *, writer_id: str | None = None, defer_ends: bool = False, defer_s: float = 0.05
    ) -> None:
        self.storage = storage
        self.writer = writer_id or ("w" + uuid.uuid4().hex[:15])
        self._seq: int | None = None
        self._dels: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._mutex = threading.Lock()
        self.defer_ends = defer_ends
        self.defer_s = defer_s
        self._heads_lock = threading.Lock()  # orders head writes: a late end never overwrites a begin
        self._deferred: dict[str, int] = {}  # space -> commit whose end is not written yet
        self._wake = threading.Condition(threading.Lock())
        self._deadlines: dict[str, float] = {}  # space -> when its deferred end is written
        self._flusher: threading.Thread | None = None
        self._at_exit: Callable[[], None] | None = None
        self._closed = False

    def clear_cache(self) -> None:
        """Forget storage handles (after the client was reopened)."""
        self.storage.clear_cache()

    # -- writer ---------------------------------------------------------------------------------

    def next_seq(self) -> int:
        """The next sequence number of this writer (continuing its stored heads, if any)."""
        with self._mutex:
            seq = self._seq
        if seq is None:
            mine = self.storage.heads({"w": self.writer})
            seq = max((int(m.get("pending", 0)) for m in mine), default=0)
            with self._mutex:
                for m in mine:
                    self._dels[str(m.get("space"))] = int(m.get("dels", 0))
                    self._done[str(m.get("space"))] = int(m.get("done", 0))
        with self._mutex:
            self._seq = max(self._seq or 0, seq) + 1
            return self._seq

    def begin(self, space: str, seq: int, *, deletes: Sequence[str]) -> None:
        """Steps 1-2 of a commit: the change record of its deletes, then the pending head.

        With deferred ends, the head also says ``done`` of the writer's previous commit there.
        """
        if deletes:
            self.storage.put_change(space, self.writer, seq, deletes)
        with self._heads_lock:
            with self._mutex:
                done = self._done.get(space, 0)
            self._put_head(space, pending=seq, done=done, dels=seq if deletes else None)
            self._deferred.pop(space, None)

    def end(self, space: str, seq: int) -> None:
        """Step 4 of a commit: the head says ``done = seq`` (now, or deferred: see the class)."""
        with self._wake:
            closed = self._closed
        if not self.defer_ends or closed:  # after close() no thread would write it: now
            self._put_head(space, pending=seq, done=seq, dels=None)
            with self._mutex:
                self._done[space] = seq
            return
        with self._heads_lock:
            with self._mutex:
                self._done[space] = seq
            self._deferred[space] = seq
        with self._wake:  # each space its own time: a busy space does not hold back another's end
            idle = not self._deadlines  # else the thread wakes at the earliest deadline and looks again
            self._deadlines[space] = time.monotonic() + self.defer_s
            if self._flusher is None:
                self._flusher = threading.Thread(target=self._flush_later, name="recall-gate-feed-ends", daemon=True)
                self._flusher.start()
                self._at_exit = _flush_at_exit(self)
            elif idle:
                self._wake.notify()

    def flush(self, spaces: Sequence[str] | None = None) -> None:
        """Write the deferred ends now (of ``spaces``, default all).

        Raises:
            StoreError: if the feed cannot be written (those ends stay deferred).
        """
        with self._heads_lock:
            for space, seq in list(self._deferred.items()):
                if spaces is None or space in spaces:
                    self._put_head(space, pending=seq, done=seq, dels=None)
                    del self._deferred[space]

    def close(self) -> None:
        """Write the deferred ends and stop the thread that writes them.

        A failure to write is logged, not raised: the head then says ``pending > done``, which
        readers re-read and this writer settles when it reopens; the rest of closing goes on.
        """
        with self._wake:
            self._closed = True
            self._wake.notify()
            thread, at_exit, self._at_exit = self._flusher, self._at_exit, None
        if at_exit is not None:
            atexit.unregister(at_exit)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        try:
            self.flush()
        except StoreError:
            _log.warning("the change feed's last ends could not be written; the writer settles them when it reopens")

    def _flush_later(self) -> None:
        with self._wake:
            while not self._closed:
                now = time.monotonic()
                due = [sp for sp, at in self._deadlines.items() if at <= now]
                if not due:
                    nxt = min(self._deadlines.values(), default=None)
                    self._wake.wait(None if nxt is None else nxt - now)
                    continue
                for sp in due:
                    del self._deadlines[sp]
                self._wake.release()
                try:
                    self.flush(due)
                    failed = False
                except StoreError:  # readers re-read meanwhile; tried again in a second
                    _log.warning("a deferred change-feed end could not be written; retrying")
                    failed = True
                finally:
                    self._wake.acquire()
                if failed:
                    for sp in due:
                        self._deadlines.setdefault(sp, time.monotonic() + _RETRY_S)

    def _put_head(self, space: str, *, pending: int, done: int, dels: int | None) -> None:
        with self._mutex:
            if dels is None:
                dels = self._dels.get(space, 0)
            self._dels[space] = dels
        self.storage.put_head(
            {
                "space": space,
                "w": self.writer,
                "pending": pending,
                "done": done,
                "dels": dels,
                "at": time.time(),
            }
        )

    def settle(self) -> int:
        """Mark this writer's unfinished commits finished (it restarted: nothing more will land)."""
        stale = [
            m
            for m in self.storage.heads({"w": self.writer})
            if int(m.get("pending", 0)) > int(m.get("done", 0))
        ]
        for meta in stale:
            self.storage.put_head({**meta, "done": int(meta["pending"]), "at": time.time()})
        return len(stale)

    # -- reader ---------------------------------------------------------------------------------

    def heads(self, space: str) -> dict[str, Head]:
        """Every writer's head in a space (one small read).

        This writer's own head says ``done`` as this writer knows it: a commit whose end is
        deferred has landed, and its own cache must not re-read it.
        """
        with self._mutex:
            mine = self._done.get(space, 0)
        out: dict[str, Head] = {}
        for meta in self.storage.heads({"space": space}):
            try:
                head = Head(
                    writer=str(meta["w"]),
                    pending=int(meta["pending"]),
                    done=int(meta["done"]),
                    dels=int(meta.get("dels", 0)),
                    at=float(meta.get("at", 0.0)),
                )
            except (KeyError, TypeError, ValueError):
                raise StoreError(f"a change-feed head of space {space!r} is malformed") from None
            if head.writer == self.writer and head.done < mine:
                head = replace(head, done=mine)
            out[head.writer] = head
        return out

    def deleted_since(self, space: str, writer: str, after: int) -> list[str]:
        """Ids a writer deleted in a space with sequence numbers above ``after``."""
        return sorted(set(self.storage.changes(space, writer, after)))


def changed_where(writer: str, after: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Chroma ``where`` for a writer's records above a sequence number (optionally one partition)."""
    clauses: list[dict[str, Any]] = [{W_KEY: writer}, {SEQ_KEY: {"$gt": after}}]
    if extra:
        clauses.extend({k: v} for k, v in extra.items())
    return {"$and": clauses}
