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

Every memory a writer upserts carries its writer id and sequence number in its metadata
(``rg_w``, ``rg_seq``, numeric so that ``{"rg_seq": {"$gt": n}}`` filters them).

**Writer** (:meth:`ChangeFeed.begin` / :meth:`ChangeFeed.end`), per space touched by one commit:
(1) a change record with the ids it will delete, if any; (2) the head with ``pending = seq``;
(3) the data (upserts stamped ``rg_w``/``rg_seq``, deletes); (4) the head with ``done = seq``.
A writer that dies after (2) leaves ``pending > done``: readers keep re-reading that writer's
records above ``done`` (whatever of step 3 landed), so nothing it wrote is ever missed; the
embedded writer settles its own head when it reopens.

**Reader** (the backend's ``sync``), before each query or write, per space it holds: one small
read of the space's heads. Unchanged heads: nothing else. A head that moved: the writer's records
with ``rg_seq`` above what was applied (with vectors), and, if ``dels`` moved, the ids of its
change records above it, re-read by id (present: upsert; absent: removed), so deletes and
re-writes by different writers cannot be applied in the wrong order. What was applied is
remembered as that head's ``done`` (never ``pending``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .chroma import READ_RETRIES, chroma_call, get_collection_or_none

__all__ = ["FEED_KINDS", "ChangeFeed", "Head", "stable_writer_id"]

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


class ChangeFeed:
    """Heads and change records of one store prefix (see module docstring).

    Args:
        client: the Chroma client (or a zero-argument callable returning the current one).
        prefix: the store's collection prefix.
        writer_id: this writer's id (default: a fresh random one).
        read_only: never create the feed's collections (a reader of a store nobody wrote yet
            sees no heads).
    """

    def __init__(
        self, client: Any, *, prefix: str, writer_id: str | None = None, read_only: bool = False
    ) -> None:
        self._client = client
        self.read_only = read_only
        self.prefix = prefix
        self.writer = writer_id or ("w" + uuid.uuid4().hex[:15])
        self._cols: dict[str, Any] = {}
        self._seq: int | None = None
        self._dels: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._mutex = threading.Lock()

    def collection_names(self) -> list[str]:
        """The feed's collections."""
        return [f"{self.prefix}-{kind}" for kind in FEED_KINDS]

    def clear_cache(self) -> None:
        """Forget collection handles (after the client was reopened)."""
        with self._mutex:
            self._cols.clear()

    def _col(self, kind: str) -> Any:
        with self._mutex:
            col = self._cols.get(kind)
            if col is None:
                client = self._client() if callable(self._client) else self._client
                name = f"{self.prefix}-{kind}"
                if self.read_only:
                    col = chroma_call(f"open {kind}", lambda: get_collection_or_none(client, name))
                    if col is None:
                        return None
                else:
                    col = chroma_call(
                        f"open {kind}",
                        lambda: client.get_or_create_collection(
                            name, metadata={"rg_kind": kind, "rg_prefix": self.prefix}, embedding_function=None
                        ),
                    )
                self._cols[kind] = col
            return col

    # -- writer ---------------------------------------------------------------------------------

    def next_seq(self) -> int:
        """The next sequence number of this writer (continuing its stored heads, if any)."""
        with self._mutex:
            seq = self._seq
        if seq is None:
            col = self._col("heads")
            got = chroma_call(
                "read heads", lambda: col.get(where={"w": self.writer}, include=["metadatas"]),
                retries=READ_RETRIES,
            )
            seq = max((int(m.get("pending", 0)) for m in got["metadatas"]), default=0)
            with self._mutex:
                for m in got["metadatas"]:
                    self._dels[str(m.get("space"))] = int(m.get("dels", 0))
                    self._done[str(m.get("space"))] = int(m.get("done", 0))
        with self._mutex:
            self._seq = max(self._seq or 0, seq) + 1
            return self._seq

    def begin(self, space: str, seq: int, *, deletes: Sequence[str]) -> None:
        """Steps 1-2 of a commit: the change record of its deletes, then the pending head."""
        if deletes:
            changes = self._col("changes")
            chroma_call(
                "change log",
                lambda: changes.upsert(
                    ids=[f"c_{self.writer}_{seq}_{_digest(space)[:12]}"],
                    embeddings=[[1.0]],
                    metadatas=[
                        {"space": space, "w": self.writer, "seq": seq, "ids": json.dumps(list(deletes))}
                    ],
                ),
            )
        with self._mutex:
            done = self._done.get(space, 0)
        self._put_head(space, pending=seq, done=done, dels=seq if deletes else None)

    def end(self, space: str, seq: int) -> None:
        """Step 4 of a commit: the head says ``done = seq``."""
        self._put_head(space, pending=seq, done=seq, dels=None)
        with self._mutex:
            self._done[space] = seq

    def _put_head(self, space: str, *, pending: int, done: int, dels: int | None) -> None:
        heads = self._col("heads")
        hid = "h_" + _digest(space, self.writer)
        with self._mutex:
            if dels is None:
                dels = self._dels.get(space, 0)
            self._dels[space] = dels
        meta = {"space": space, "w": self.writer, "pending": pending, "done": done, "dels": dels,
                "at": time.time()}  # fmt: skip
        chroma_call("write head", lambda: heads.upsert(ids=[hid], embeddings=[[1.0]], metadatas=[meta]))

    def settle(self) -> int:
        """Mark this writer's unfinished commits finished (it restarted: nothing more will land)."""
        col = self._col("heads")
        got = chroma_call("read heads", lambda: col.get(where={"w": self.writer}, include=["metadatas"]))
        stale = [(i, m) for i, m in zip(got["ids"], got["metadatas"], strict=True)
                 if int(m.get("pending", 0)) > int(m.get("done", 0))]  # fmt: skip
        for hid, meta in stale:
            fixed = {**meta, "done": int(meta["pending"]), "at": time.time()}
            chroma_call("settle head", lambda h=hid, m=fixed: col.upsert(ids=[h], embeddings=[[1.0]], metadatas=[m]))
        return len(stale)

    # -- reader ---------------------------------------------------------------------------------

    def heads(self, space: str) -> dict[str, Head]:
        """Every writer's head in a space (one small read)."""
        col = self._col("heads")
        if col is None:
            return {}
        got = chroma_call(
            "read heads", lambda: col.get(where={"space": space}, include=["metadatas"]), retries=READ_RETRIES
        )
        out: dict[str, Head] = {}
        for meta in got["metadatas"]:
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
            out[head.writer] = head
        return out

    def deleted_since(self, space: str, writer: str, after: int) -> list[str]:
        """Ids a writer deleted in a space with sequence numbers above ``after``."""
        col = self._col("changes")
        if col is None:
            return []
        where = {"$and": [{"space": space}, {"w": writer}, {"seq": {"$gt": after}}]}
        got = chroma_call("read changes", lambda: col.get(where=where, include=["metadatas"]),
                          retries=READ_RETRIES)  # fmt: skip
        out: list[str] = []
        for meta in got["metadatas"]:
            out.extend(str(x) for x in json.loads(str(meta.get("ids", "[]"))))
        return sorted(set(out))


def changed_where(writer: str, after: int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Chroma ``where`` for a writer's records above a sequence number (optionally one partition)."""
    clauses: list[dict[str, Any]] = [{W_KEY: writer}, {SEQ_KEY: {"$gt": after}}]
    if extra:
        clauses.extend({k: v} for k, v in extra.items())
    return {"$and": clauses}
