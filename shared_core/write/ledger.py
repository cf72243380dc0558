"""The write ledger: quarantine with TTL, tombstones, lineage and the forget journal (W6, L2).

Everything the write gate must remember besides the memories themselves lives behind the
:class:`Ledger` protocol, so that every target — the memory store and any vector store an adapter
wraps — gets the same lifecycle. Implementations: :class:`InMemoryLedger` (here: tests, notebooks,
a process-lifetime write filter) and :class:`~shared_core.store.ledger.ChromaLedger` (persistent,
next to the memories, shared by every client of a Chroma server).

**What a tombstone blocks** (L2; seeds: a deleted memory must not come back on restore or
re-ingest of its source). ``forget(S)`` tombstones the source record id ``S`` and the ids of the
memories derived from it; ``delete(ids)`` tombstones those ids. Afterwards a write is refused as
``tombstoned`` when it names the source ``S``, or when its id (explicit or derived from its text)
is a tombstoned id and it names no source record at all. The same words arriving from another,
live source record are a new memory with their own lineage: forgetting one conversation does not
forbid the user to say the same thing again elsewhere. Tombstones hold ids, counts and times,
never text.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .candidate import MemoryCandidate

__all__ = ["HeldCandidate", "InMemoryLedger", "Ledger", "get_with_aliases", "id_alias", "resolve_aliases"]


def id_alias(memory_id: str) -> str:
    """The lineage key under which an explicit id merged into another memory is recorded.

    A write with its own id (``add_documents(docs, ids=[...])``) that the gate merges into an
    existing memory as a duplicate is stored under that memory's id; the link
    ``id_alias(its id) -> memory`` lets ``get`` and ``delete`` by the caller's id find it. The
    key starts with a control character, which :func:`~shared_core.model.fields.check_key`
    refuses in a ``source_record_id``, so no source can name an alias (nor ``forget`` one).
    """
    return "\x1fid\x1f" + memory_id


def resolve_aliases(ledger: Ledger, ids: Iterable[str], memory_space_id: str) -> dict[str, list[str]]:
    """``{id: [memory ids]}`` for each of ``ids`` merged into memories of the space (none: left out)."""
    out: dict[str, list[str]] = {}
    for mid in ids:
        links = sorted({m for space, m in ledger.linked(id_alias(mid)) if space == memory_space_id})
        if links:
            out[mid] = links
    return out


def get_with_aliases(target: Any, ledger: Ledger, ids: Sequence[str], memory_space_id: str) -> list[Any]:
    """``target.get(ids)``, plus the memories that ids not found were merged into (:func:`id_alias`)."""
    got: list[Any] = target.get(ids, memory_space_id=memory_space_id)
    have = {r.id for r in got}
    merged = resolve_aliases(ledger, [m for m in ids if m not in have], memory_space_id)
    into = sorted({m for ms in merged.values() for m in ms} - have)
    return got + list(target.get(into, memory_space_id=memory_space_id)) if into else got


@dataclass(frozen=True)
class HeldCandidate:
    """A candidate in quarantine: never recalled, waiting for a reviewer until ``expires_at`` (W6).

    ``candidate`` holds the text (the reviewer's to see; it never enters an audit record).
    """

    id: str
    candidate: MemoryCandidate
    reasons: tuple[str, ...]
    held_at: datetime
    expires_at: datetime
    findings: tuple[str, ...] = ()
    path: str = "api"

    def summary(self, *, text: bool = True, preview_chars: int | None = None) -> dict[str, Any]:
        """A plain dict for operators' lists (text only with ``text=True``, optionally cut)."""
        c = self.candidate
        out: dict[str, Any] = {
            "id": self.id,
            "memory_space_id": c.memory_space_id,
            "user_id": c.user_id,
            "agent_id": c.agent_id,
            "route_id": c.route_id,
            "visibility": c.visibility.value,
            "origin": c.origin.value if c.origin is not None else None,
            "reasons": list(self.reasons),
            "findings": list(self.findings),
            "held_at": self.held_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "source_record_id": c.source_record_id,
            "path": self.path,
        }
        if text:
            body = (
                c.body
                if preview_chars is None or len(c.body) <= preview_chars
                else c.body[:preview_chars] + "…"
            )
            out.update(title=c.title, body=body)
        return out


@runtime_checkable
class Ledger(Protocol):
    """Quarantine, tombstones, lineage and the forget journal of one write gate."""

    def is_tombstoned(self, source_record_id: str | None, memory_id: str | None) -> bool:
        """True when the source record or the memory id was forgotten or deleted."""
        ...

    def tombstoned(self, *, sources: Sequence[str] = (), memories: Sequence[str] = ()) -> set[str]:
        """Which of these are tombstoned, in one lookup: keys ``src:<id>`` and ``mem:<id>``."""
        ...

    def tombstone(
        self, *, sources: Sequence[str] = (), memories: Sequence[str] = (), at: datetime, counts: int = 0
    ) -> None:
        """Record tombstones (idempotent)."""
        ...

    def hold(self, entries: Sequence[HeldCandidate]) -> None:
        """Put candidates into quarantine (idempotent by id)."""
        ...

    def held(
        self, *, memory_space_id: str | None = None, ids: Sequence[str] | None = None
    ) -> list[HeldCandidate]:
        """Held candidates, oldest first, optionally of one space or with given ids."""
        ...

    def held_of_source(self, source_record_id: str) -> list[str]:
        """Ids of held candidates derived from a source record."""
        ...

    def expired_held(self, now: datetime) -> list[str]:
        """Ids of held candidates whose TTL has passed."""
        ...

    def release(self, ids: Sequence[str]) -> None:
        """Take candidates out of quarantine (approved, rejected or expired)."""
        ...

    def link(self, source_record_id: str, memory_space_id: str, memory_id: str) -> None:
        """Record that a memory is also derived from ``source_record_id`` (a merged duplicate)."""
        ...

    def linked(self, source_record_id: str) -> list[tuple[str, str]]:
        """``(memory_space_id, id)`` of memories linked to a source record by :meth:`link`."""
        ...

    def unlink_memories(self, memories: Sequence[tuple[str, str]]) -> None:
        """Drop every link to these ``(memory_space_id, id)`` memories: they were deleted.

        The same words written again later are a new memory with a new lineage: a source merged
        into the deleted memory must not delete the new one when it is forgotten.
        """
        ...

    def journal_begin(self, key: str, payload: Mapping[str, Any]) -> None:
        """Record that a multi-step operation started (ids and counts only, no text)."""
        ...

    def journal_end(self, key: str) -> None:
        """Record that it finished."""
        ...

    def journal_pending(self) -> list[tuple[str, dict[str, Any]]]:
        """Operations begun and not finished (to complete after a crash)."""
        ...


@dataclass
class InMemoryLedger:
    """A ledger in process memory (lost with the process): for tests, notebooks, short-lived filters."""

    _tombstones: dict[str, tuple[float, int]] = field(default_factory=dict)
    _held: dict[str, HeldCandidate] = field(default_factory=dict)
    _links: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    _journal: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def is_tombstoned(self, source_record_id: str | None, memory_id: str | None) -> bool:
        """True when the source record or the memory id was forgotten or deleted."""
        with self._lock:
            return bool(
                (source_record_id and f"src:{source_record_id}" in self._tombstones)
                or (memory_id and f"mem:{memory_id}" in self._tombstones)
            )

    def tombstoned(self, *, sources: Sequence[str] = (), memories: Sequence[str] = ()) -> set[str]:
        """Which of these are tombstoned: keys ``src:<id>`` and ``mem:<id>``."""
        keys = [*(f"src:{s}" for s in sources), *(f"mem:{m}" for m in memories)]
        with self._lock:
            return {k for k in keys if k in self._tombstones}

    def tombstone(
        self, *, sources: Sequence[str] = (), memories: Sequence[str] = (), at: datetime, counts: int = 0
    ) -> None:
        """Record tombstones (idempotent)."""
        with self._lock:
            for key in [*(f"src:{s}" for s in sources), *(f"mem:{m}" for m in memories)]:
                self._tombstones[key] = (at.timestamp(), counts)

    def hold(self, entries: Sequence[HeldCandidate]) -> None:
        """Put candidates into quarantine (idempotent by id)."""
        with self._lock:
            for e in entries:
                self._held[e.id] = e

    def held(
        self, *, memory_space_id: str | None = None, ids: Sequence[str] | None = None
    ) -> list[HeldCandidate]:
        """Held candidates, oldest first, optionally of one space or with given ids."""
        with self._lock:
            entries = (
                list(self._held.values()) if ids is None else [self._held[i] for i in ids if i in self._held]
            )
        if memory_space_id is not None:
            entries = [e for e in entries if e.candidate.memory_space_id == memory_space_id]
        return sorted(entries, key=lambda e: (e.held_at, e.id))

    def held_of_source(self, source_record_id: str) -> list[str]:
        """Ids of held candidates derived from a source record."""
        with self._lock:
            return sorted(
                i for i, e in self._held.items() if e.candidate.source_record_id == source_record_id
            )

    def expired_held(self, now: datetime) -> list[str]:
        """Ids of held candidates whose TTL has passed."""
        with self._lock:
            return sorted(i for i, e in self._held.items() if e.expires_at <= now)

    def release(self, ids: Sequence[str]) -> None:
        """Take candidates out of quarantine."""
        with self._lock:
            for i in ids:
                self._held.pop(i, None)

    def link(self, source_record_id: str, memory_space_id: str, memory_id: str) -> None:
        """Record that a memory is also derived from ``source_record_id``."""
        with self._lock:
            self._links.setdefault(source_record_id, set()).add((memory_space_id, memory_id))

    def linked(self, source_record_id: str) -> list[tuple[str, str]]:
        """Memories linked to a source record by :meth:`link`."""
        with self._lock:
            return sorted(self._links.get(source_record_id, ()))

    def unlink_memories(self, memories: Sequence[tuple[str, str]]) -> None:
        """Drop every link to these memories (they were deleted)."""
        gone = set(memories)
        with self._lock:
            for source in list(self._links):
                self._links[source] -= gone
                if not self._links[source]:
                    del self._links[source]

    def journal_begin(self, key: str, payload: Mapping[str, Any]) -> None:
        """Record that a multi-step operation started."""
        with self._lock:
            self._journal[key] = dict(payload)

    def journal_end(self, key: str) -> None:
        """Record that it finished."""
        with self._lock:
            self._journal.pop(key, None)

    def journal_pending(self) -> list[tuple[str, dict[str, Any]]]:
        """Operations begun and not finished."""
        with self._lock:
            return sorted((k, dict(v)) for k, v in self._journal.items())
