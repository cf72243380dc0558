"""``ChromaLedger``: the write ledger kept in Chroma, next to the memories (W6, L2).

The :class:`~shared_core.write.ledger.Ledger` of a memory store: every client of a Chroma server
sees the same quarantine, tombstones, lineage and forget journal. Four small collections per store
prefix: ``<prefix>-quarantine`` (a held candidate's text as the document, its fields as JSON
metadata), ``<prefix>-tombstones`` (``src:<id>`` / ``mem:<id>``, times and counts only),
``<prefix>-lineage`` (``source -> memory`` links of merged duplicates) and ``<prefix>-journal``
(begun, unfinished forgets: ids and counts). Entries carry a 1-d dummy vector: Chroma requires one.

Sole writer: a ledger opened ``exclusive`` (an embedded store holding its folder's writer lock)
is the only one that can add a tombstone, so it reads the tombstone keys from Chroma once and
answers every later check from that set, kept up to date by its own :meth:`ChromaLedger.tombstone`
(two Chroma reads less per write call: the check before the write and the re-check after it).
A ledger shared with other clients (a Chroma server) asks Chroma every time. Only the store that
holds the lock opens its ledger ``exclusive``; a second ``ChromaLedger`` made by hand on that
store's client and prefix would be a second writer the lock does not see, and is not supported.

Read-only: a ledger opened ``read_only`` refuses every change (:class:`StoreError`) and never
creates its collections (a reader of a store with no ledger yet sees an empty one): with the
write gate's ``check_writable`` and the backend's refusal to commit, no path of a read-only store
writes. Tombstones are also appended to the store's :class:`~.mirror.TombstoneMirror` (outside
the data folder) before they are written to Chroma, so a restore of the data cannot undo them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal

from ..errors import StoreError
from ..timeutil import from_epoch
from ..write.candidate import MemoryCandidate
from ..write.ledger import HeldCandidate
from .chroma import READ_RETRIES, chroma_call, kind_collection, sources_in
from .mirror import TombstoneMirror

__all__ = ["LEDGER_KINDS", "ChromaLedger"]

LEDGER_KINDS = ("quarantine", "tombstones", "lineage", "journal")


def _link_id(source: str, space: str, mid: str) -> str:
    return (
        "l_"
        + hashlib.sha256("\x1f".join((source, space, mid)).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    )


class ChromaLedger:
    """The ledger of one store prefix on one Chroma client (persistent, ephemeral or server).

    Args:
        client: the Chroma client, or a zero-argument callable returning the current one.
        prefix: the store's collection prefix.
        read_only: refuse every change; never create a collection.
        mirror: where tombstones are mirrored outside the data (see :mod:`.mirror`).
        exclusive: no other client writes this prefix's tombstones (an embedded store holding
            the writer lock): they are read from Chroma once and then held in memory.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        read_only: bool = False,
        mirror: TombstoneMirror | None = None,
        exclusive: bool = False,
    ) -> None:
        self._client = client
        self.prefix = prefix
        self.read_only = read_only
        self.mirror = mirror
        self.exclusive = exclusive and not read_only
        self._cols: dict[str, Any] = {}
        self._mutex = threading.Lock()
        self._held_keys: set[str] | None = None  # exclusive: every tombstone key in Chroma
        self._keys_lock = threading.RLock()  # a load and a tombstone write never interleave

    @property
    def client(self) -> Any:
        """The current Chroma client."""
        return self._client() if callable(self._client) else self._client

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError("the store is open read-only")

    def collection_names(self) -> list[str]:
        """The names of this ledger's collections."""
        return [f"{self.prefix}-{kind}" for kind in LEDGER_KINDS]

    def _col(self, kind: str) -> Any:
        """The ledger's collection ``kind`` (``None`` for a read-only ledger where it does not exist)."""
        with self._mutex:
            col = self._cols.get(kind)
            if col is None:
                client = self.client
                col = kind_collection(client, self.prefix, kind, read_only=self.read_only)
                if col is None:
                    return None
                self._cols[kind] = col
            return col

    def clear_cache(self) -> None:
        """Forget cached collection handles and tombstone keys (after a reset of the client)."""
        with self._mutex:
            self._cols.clear()
        with self._keys_lock:
            self._held_keys = None

    def _stored_among(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` Chroma holds as tombstones (from the held set when exclusive)."""
        if self.exclusive:
            held = self._held()
            return {k for k in keys if k in held}
        col = self._col("tombstones")
        if col is None:
            return set()
        got = chroma_call("tombstones", lambda: col.get(ids=keys, include=[]), retries=READ_RETRIES)
        return set(got["ids"])

    def _held(self) -> set[str]:
        with self._keys_lock:
            if self._held_keys is None:
                self._held_keys = set(self._read_tombstone_keys())
            return self._held_keys

    def _read_tombstone_keys(self) -> list[str]:
        col = self._col("tombstones")
        if col is None:
            return []
        return list(chroma_call("list tombstones", lambda: col.get(include=[]), retries=READ_RETRIES)["ids"])

    # -- tombstones -----------------------------------------------------------------------------

    def is_tombstoned(self, source_record_id: str | None, memory_id: str | None) -> bool:
        """True when the source record or the memory id was forgotten or deleted."""
        keys = [
            k
            for k in (
                f"src:{source_record_id}" if source_record_id else None,
                f"mem:{memory_id}" if memory_id else None,
            )
            if k
        ]
        if not keys:
            return False
        if self.mirror is not None and self.mirror.has_any(keys):
            return True
        return bool(self._stored_among(keys))

    def tombstoned(self, *, sources: Sequence[str] = (), memories: Sequence[str] = ()) -> set[str]:
        """Which of these are tombstoned, in one lookup: keys ``src:<id>`` and ``mem:<id>``."""
        srcs, mems = self.tombstoned_among(sources, memories)
        return {f"src:{s}" for s in srcs} | {f"mem:{m}" for m in mems}

    def tombstoned_among(
        self, sources: Sequence[str] = (), memories: Sequence[str] = ()
    ) -> tuple[set[str], set[str]]:
        """Which of these source ids and memory ids are tombstoned (one read; the mirror too)."""
        keys = list(
            dict.fromkeys([*(f"src:{s}" for s in sources if s), *(f"mem:{m}" for m in memories if m)])
        )
        if not keys:
            return set(), set()
        found: set[str] = set()
        if self.mirror is not None:
            found |= self.mirror.among(keys)
        found |= self._stored_among(keys)
        return {k[4:] for k in found if k.startswith("src:")}, {k[4:] for k in found if k.startswith("mem:")}

    def tombstone(
        self, *, sources: Sequence[str] = (), memories: Sequence[str] = (), at: datetime, counts: int = 0
    ) -> None:
        """Record tombstones (idempotent)."""
        self._writable()
        keys = list(dict.fromkeys([*(f"src:{s}" for s in sources), *(f"mem:{m}" for m in memories)]))
        if not keys:
            return
        if self.mirror is not None:
            self.mirror.append(keys, at=at, counts=counts)
        self._put_tombstones(keys, at=at, counts=counts)

    def _put_tombstones(self, keys: Sequence[str], *, at: datetime, counts: int) -> None:
        col = self._col("tombstones")
        with self._keys_lock:
            try:
                chroma_call(
                    "tombstone",
                    lambda: col.upsert(
                        ids=keys,
                        embeddings=[[1.0]] * len(keys),
                        metadatas=[{"at_ts": at.timestamp(), "deleted": counts}] * len(keys),
                    ),
                )
            except BaseException:
                self._held_keys = None  # a failed call may still have been applied: read Chroma again
                raise
            if self._held_keys is not None:
                self._held_keys.update(keys)

    def tombstone_keys(self) -> list[str]:
        """Every tombstone key (``src:...`` / ``mem:...``)."""
        if self.exclusive:
            with self._keys_lock:  # a copy: another thread's tombstone write may add to the set
                return sorted(self._held())
        return sorted(self._read_tombstone_keys())

    def reapply_mirror(self, *, at: datetime) -> tuple[list[str], list[str]]:
        """Write back mirrored tombstones the ledger lacks (after a restore of the data).

        Returns:
            ``(source record ids, memory ids)`` whose tombstones were missing: their memories may
            have come back with the restore, and must be deleted again (the store does).
        """
        if self.mirror is None:
            return [], []
        self._writable()
        missing = sorted(self.mirror.keys() - set(self.tombstone_keys()))
        if missing:
            self._put_tombstones(missing, at=at, counts=0)
        return [k[4:] for k in missing if k.startswith("src:")], [
            k[4:] for k in missing if k.startswith("mem:")
        ]

    # -- quarantine -----------------------------------------------------------------------------

    def hold(self, entries: Sequence[HeldCandidate]) -> None:
        """Put candidates into quarantine (idempotent by id)."""
        self._writable()
        if not entries:
            return
        col = self._col("quarantine")
        metas = [
            {
                "candidate": e.candidate.model_dump_json(),
                "held_at_ts": e.held_at.timestamp(),
                "expires_ts": e.expires_at.timestamp(),
                "reasons": json.dumps(list(e.reasons)),
                "findings": json.dumps(list(e.findings)),
                "memory_space_id": e.candidate.memory_space_id,
                "source_record_id": e.candidate.source_record_id or "",
                "path": e.path,
            }
            for e in entries
        ]
        chroma_call(
            "quarantine",
            lambda: col.upsert(
                ids=[e.id for e in entries],
                embeddings=[[1.0]] * len(entries),
                documents=[e.candidate.body for e in entries],
                metadatas=metas,
            ),
        )

    @staticmethod
    def _entry(qid: str, meta: Mapping[str, Any]) -> HeldCandidate:
        return HeldCandidate(
            id=qid,
            candidate=MemoryCandidate.model_validate_json(str(meta["candidate"])),
            reasons=tuple(json.loads(str(meta.get("reasons", "[]")))),
            findings=tuple(json.loads(str(meta.get("findings", "[]")))),
            held_at=from_epoch(float(meta["held_at_ts"])),
            expires_at=from_epoch(float(meta["expires_ts"])),
            path=str(meta.get("path", "api")),
        )

    def held(
        self, *, memory_space_id: str | None = None, ids: Sequence[str] | None = None
    ) -> list[HeldCandidate]:
        """Held candidates, oldest first, optionally of one space or with given ids."""
        col = self._col("quarantine")
        if col is None:
            return []
        where = {"memory_space_id": memory_space_id} if memory_space_id else None
        if ids is not None:
            got = chroma_call(
                "quarantine get", lambda: col.get(ids=list(ids), where=where, include=["metadatas"])
            )
        else:
            got = chroma_call("quarantine list", lambda: col.get(where=where, include=["metadatas"]))
        entries = [self._entry(q, m) for q, m in zip(got["ids"], got["metadatas"], strict=True)]
        return sorted(entries, key=lambda e: (e.held_at, e.id))

    def sources_among(self, kind: Literal["lineage", "quarantine"], sources: Sequence[str]) -> set[str]:
        """Those of ``sources`` a lineage link or a held candidate names (one read per chunk)."""
        col = self._col(kind)
        return set() if col is None else sources_in(col, sources, what=f"{kind} of sources")

    def held_of_source(self, source_record_id: str) -> list[str]:
        """Ids of held candidates derived from a source record."""
        col = self._col("quarantine")
        if col is None:
            return []
        got = chroma_call(
            "quarantine of source", lambda: col.get(where={"source_record_id": source_record_id}, include=[])
        )
        return sorted(got["ids"])

    def expired_held(self, now: datetime) -> list[str]:
        """Ids of held candidates whose TTL has passed."""
        col = self._col("quarantine")
        if col is None:
            return []
        ts = now.timestamp()
        got = chroma_call(
            "quarantine expired", lambda: col.get(where={"expires_ts": {"$lte": ts}}, include=[])
        )
        return sorted(got["ids"])

    def release(self, ids: Sequence[str]) -> None:
        """Take candidates out of quarantine."""
        self._writable()
        if ids:
            col = self._col("quarantine")
            chroma_call("quarantine delete", lambda: col.delete(ids=list(ids)))

    # -- lineage --------------------------------------------------------------------------------

    def link(self, source_record_id: str, memory_space_id: str, memory_id: str) -> None:
        """Record that a memory is also derived from ``source_record_id``."""
        self._writable()
        col = self._col("lineage")
        lid = _link_id(source_record_id, memory_space_id, memory_id)
        chroma_call(
            "lineage",
            lambda: col.upsert(
                ids=[lid],
                embeddings=[[1.0]],
                metadatas=[
                    {
                        "source_record_id": source_record_id,
                        "memory_space_id": memory_space_id,
                        "memory_id": memory_id,
                    }
                ],
            ),
        )

    def linked(self, source_record_id: str) -> list[tuple[str, str]]:
        """Memories linked to a source record by :meth:`link`."""
        col = self._col("lineage")
        if col is None:
            return []
        got = chroma_call(
            "lineage get",
            lambda: col.get(where={"source_record_id": source_record_id}, include=["metadatas"]),
        )
        return sorted((str(m["memory_space_id"]), str(m["memory_id"])) for m in got["metadatas"])

    def unlink_memories(self, memories: Sequence[tuple[str, str]]) -> None:
        """Drop every link to these ``(memory_space_id, id)`` memories (they were deleted)."""
        self._writable()
        col = self._col("lineage")
        if col is None:
            return
        by_space: dict[str, list[str]] = {}
        for space, mid in memories:
            by_space.setdefault(space, []).append(mid)
        for space, mids in sorted(by_space.items()):
            where = {"$and": [{"memory_space_id": space}, {"memory_id": {"$in": sorted(set(mids))}}]}
            chroma_call("lineage unlink", functools.partial(col.delete, where=where))

    # -- journal --------------------------------------------------------------------------------

    def journal_begin(self, key: str, payload: Mapping[str, Any]) -> None:
        """Record that a multi-step operation started (ids and counts only)."""
        self._writable()
        col = self._col("journal")
        chroma_call(
            "journal",
            lambda: col.upsert(
                ids=[key], embeddings=[[1.0]], metadatas=[{"payload": json.dumps(dict(payload))}]
            ),
        )

    def journal_end(self, key: str) -> None:
        """Record that it finished."""
        self._writable()
        col = self._col("journal")
        chroma_call("journal end", lambda: col.delete(ids=[key]))

    def journal_pending(self) -> list[tuple[str, dict[str, Any]]]:
        """Operations begun and not finished."""
        col = self._col("journal")
        if col is None:
            return []
        got = chroma_call("journal list", lambda: col.get(include=["metadatas"]))
        return sorted(
            (k, json.loads(str(m["payload"]))) for k, m in zip(got["ids"], got["metadatas"], strict=True)
        )
