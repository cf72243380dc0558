"""``ChromaLedger``: the write ledger kept in Chroma, next to the memories (W6, L2).

The :class:`~shared_core.write.ledger.Ledger` of a memory store: every client of a Chroma server
sees the same quarantine, tombstones, lineage and forget journal. Four small collections per store
prefix: ``<prefix>-quarantine`` (a held candidate's text as the document, its fields as JSON
metadata), ``<prefix>-tombstones`` (``src:<id>`` / ``mem:<id>``, times and counts only),
``<prefix>-lineage`` (``source -> memory`` links of merged duplicates) and ``<prefix>-journal``
(begun, unfinished forgets: ids and counts). Entries carry a 1-d dummy vector: Chroma requires one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..timeutil import from_epoch
from ..write.candidate import MemoryCandidate
from ..write.ledger import HeldCandidate
from .chroma import READ_RETRIES, chroma_call

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
        client: the Chroma client.
        prefix: the store's collection prefix.
    """

    def __init__(self, client: Any, *, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self._cols: dict[str, Any] = {}
        self._mutex = threading.Lock()

    def collection_names(self) -> list[str]:
        """The names of this ledger's collections."""
        return [f"{self.prefix}-{kind}" for kind in LEDGER_KINDS]

    def _col(self, kind: str) -> Any:
        with self._mutex:
            col = self._cols.get(kind)
            if col is None:
                name = f"{self.prefix}-{kind}"
                col = chroma_call(
                    f"open {kind}",
                    lambda: self.client.get_or_create_collection(
                        name, metadata={"rg_kind": kind, "rg_prefix": self.prefix}, embedding_function=None
                    ),
                )
                self._cols[kind] = col
            return col

    def clear_cache(self) -> None:
        """Forget cached collection handles (after a reset of the client)."""
        with self._mutex:
            self._cols.clear()

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
        col = self._col("tombstones")
        got = chroma_call("tombstones", lambda: col.get(ids=keys, include=[]), retries=READ_RETRIES)
        return bool(got["ids"])

    def tombstoned(self, *, sources: Sequence[str] = (), memories: Sequence[str] = ()) -> set[str]:
        """Which of these are tombstoned, in one Chroma call: keys ``src:<id>`` and ``mem:<id>``."""
        keys = list(dict.fromkeys([*(f"src:{s}" for s in sources), *(f"mem:{m}" for m in memories)]))
        if not keys:
            return set()
        col = self._col("tombstones")
        got = chroma_call("tombstones", lambda: col.get(ids=keys, include=[]), retries=READ_RETRIES)
        return set(got["ids"])

    def tombstone(
        self, *, sources: Sequence[str] = (), memories: Sequence[str] = (), at: datetime, counts: int = 0
    ) -> None:
        """Record tombstones (idempotent)."""
        keys = list(dict.fromkeys([*(f"src:{s}" for s in sources), *(f"mem:{m}" for m in memories)]))
        if not keys:
            return
        col = self._col("tombstones")
        chroma_call(
            "tombstone",
            lambda: col.upsert(
                ids=keys,
                embeddings=[[1.0]] * len(keys),
                metadatas=[{"at_ts": at.timestamp(), "deleted": counts}] * len(keys),
            ),
        )

    def tombstone_keys(self) -> list[str]:
        """Every tombstone key (``src:...`` / ``mem:...``)."""
        col = self._col("tombstones")
        return sorted(chroma_call("list tombstones", lambda: col.get(include=[]))["ids"])

    # -- quarantine -----------------------------------------------------------------------------

    def hold(self, entries: Sequence[HeldCandidate]) -> None:
        """Put candidates into quarantine (idempotent by id)."""
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
        where = {"memory_space_id": memory_space_id} if memory_space_id else None
        if ids is not None:
            got = chroma_call(
                "quarantine get", lambda: col.get(ids=list(ids), where=where, include=["metadatas"])
            )
        else:
            got = chroma_call("quarantine list", lambda: col.get(where=where, include=["metadatas"]))
        entries = [self._entry(q, m) for q, m in zip(got["ids"], got["metadatas"], strict=True)]
        return sorted(entries, key=lambda e: (e.held_at, e.id))

    def held_of_source(self, source_record_id: str) -> list[str]:
        """Ids of held candidates derived from a source record."""
        col = self._col("quarantine")
        got = chroma_call(
            "quarantine of source", lambda: col.get(where={"source_record_id": source_record_id}, include=[])
        )
        return sorted(got["ids"])

    def expired_held(self, now: datetime) -> list[str]:
        """Ids of held candidates whose TTL has passed."""
        col = self._col("quarantine")
        ts = now.timestamp()
        got = chroma_call(
            "quarantine expired", lambda: col.get(where={"expires_ts": {"$lte": ts}}, include=[])
        )
        return sorted(got["ids"])

    def release(self, ids: Sequence[str]) -> None:
        """Take candidates out of quarantine."""
        if ids:
            col = self._col("quarantine")
            chroma_call("quarantine delete", lambda: col.delete(ids=list(ids)))

    # -- lineage --------------------------------------------------------------------------------

    def link(self, source_record_id: str, memory_space_id: str, memory_id: str) -> None:
        """Record that a memory is also derived from ``source_record_id``."""
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
        got = chroma_call(
            "lineage get",
            lambda: col.get(where={"source_record_id": source_record_id}, include=["metadatas"]),
        )
        return sorted((str(m["memory_space_id"]), str(m["memory_id"])) for m in got["metadatas"])

    # -- journal --------------------------------------------------------------------------------

    def journal_begin(self, key: str, payload: Mapping[str, Any]) -> None:
        """Record that a multi-step operation started (ids and counts only)."""
        col = self._col("journal")
        chroma_call(
            "journal",
            lambda: col.upsert(
                ids=[key], embeddings=[[1.0]], metadatas=[{"payload": json.dumps(dict(payload))}]
            ),
        )

    def journal_end(self, key: str) -> None:
        """Record that it finished."""
        col = self._col("journal")
        chroma_call("journal end", lambda: col.delete(ids=[key]))

    def journal_pending(self) -> list[tuple[str, dict[str, Any]]]:
        """Operations begun and not finished."""
        col = self._col("journal")
        got = chroma_call("journal list", lambda: col.get(include=["metadatas"]))
        return sorted(
            (k, json.loads(str(m["payload"]))) for k, m in zip(got["ids"], got["metadatas"], strict=True)
        )
