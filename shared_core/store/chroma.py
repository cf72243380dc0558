"""Chroma plumbing: one collection per memory space, embedding checks, typed errors.

Chroma is the source of truth (H2). Each memory space gets its own collection (cosine space), so
a scoped query's cost follows the scope, not the whole store (FACTS: a ``where`` filter on one big
shared collection grows with the collection). Inside a collection, the partition of a memory is
two metadata fields compared with positive equality only (``$ne``/``$nin`` would match records that
lack the key): ``rg_route`` (the route or ``""``) and ``rg_bucket`` (``"shared"`` or the owner).

Records are encoded by :mod:`shared_core.model.codec`. The collection records the embedding
model's name and dimension, and a store refuses to mix models in one collection.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import EmbeddingError, StoreError, StoreUnavailableError

__all__ = [
    "READ_RETRIES",
    "DiskGuard",
    "check_collection_embedding",
    "chroma_call",
    "collection_name",
    "exclusive_chroma",
    "get_collection_or_none",
    "is_embedded_client",
    "is_internal_error",
    "serialize_embedded_calls",
    "set_http_timeout",
    "sources_in",
]

READ_RETRIES = 2
"""Idempotent reads are retried this many times after an internal Chroma error (see chroma_call)."""

T = TypeVar("T")


def collection_name(prefix: str, memory_space_id: str) -> str:
    """A valid, stable Chroma collection name for a memory space."""
    slug = re.sub(r"[^a-zA-Z0-9]", "", memory_space_id)[:24]
    digest = hashlib.sha256(memory_space_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}-{slug}-{digest}" if slug else f"{prefix}-{digest}"


def check_collection_embedding(meta: Mapping[str, Any] | None, name: str, dimension: int, space: str) -> None:
    """Refuse to use a collection built with another embedding model or dimension.

    Raises:
        EmbeddingError: naming both models.
    """
    meta = meta or {}
    have_name, have_dim = meta.get("rg_embedding"), meta.get("rg_dim")
    if have_name is None:
        return
    if have_name != name or int(have_dim or 0) != dimension:
        raise EmbeddingError(
            f"memory space {space!r} was indexed with embedding {have_name!r} (dim {have_dim}); "
            f"this store uses {name!r} (dim {dimension}). Use the same model or a new store."
        )


def _is_unavailable(exc: BaseException) -> bool:
    names = {type(e).__name__ for e in _chain(exc)}
    text = " ".join(str(e) for e in _chain(exc)).lower()
    return bool(
        names
        & {
            "ConnectError",
            "ConnectTimeout",
            "ReadTimeout",
            "WriteTimeout",
            "PoolTimeout",
            "ReadError",  # the server died while answering (killed mid-request)
            "WriteError",
            "RemoteProtocolError",
            "ConnectionError",
        }
        or isinstance(exc, (ConnectionError, TimeoutError))
        or "connection refused" in text
        or "could not connect" in text
    )


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(out) < 8:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


_EMBEDDED_CALLS = threading.RLock()
_serialize_calls = False


def serialize_embedded_calls() -> None:
    """From now on, run one Chroma call at a time in this process (an embedded client is open).

    Chroma's embedded (Rust) bindings release the GIL in some calls (``get``) and not in others
    (``upsert``): a read that holds an internal lock and waits for the GIL, beside a write that holds
    the GIL and waits for that lock, hangs both threads for good (seen under the 4-thread mixed load
    of ``tests/test_load.py``; chroma-core/chroma#7692 is the open fix upstream). Those calls hold
    the GIL for most of their time anyway, so taking them one at a time costs little; calls to a
    ``chroma run`` server (HTTP, no shared native state) are not serialised unless an embedded
    client is open in the same process.
    """
    global _serialize_calls
    _serialize_calls = True


@contextlib.contextmanager
def exclusive_chroma() -> Iterator[None]:
    """No Chroma call of this process runs while inside (they wait): for a compaction's child process.

    Taken whether or not calls are serialised: the child rewrites ``chroma.sqlite3`` (``VACUUM``)
    and must not race a call of this process's Chroma on the same file.
    """
    with _EMBEDDED_CALLS:
        yield


def is_embedded_client(client: Any) -> bool:
    """Whether ``client`` runs Chroma in this process (not an ``HttpClient``), from its public settings."""
    try:
        impl = str(client.get_settings().chroma_api_impl)
    except Exception:  # an unknown client: treat it as embedded (the safe side)
        return True
    return "fastapi" not in impl.lower()


def chroma_call(what: str, fn: Callable[[], T], *, retries: int = 0) -> T:
    """Run a Chroma call, mapping its failures to the project's typed errors.

    Args:
        what: the operation, named in error messages.
        fn: the call.
        retries: extra attempts after an internal Chroma error, for idempotent reads only: a
            ``chroma run`` server can fail a read that races a write from another client
            ("Error finding id") and answer the same read a moment later.

    Raises:
        StoreUnavailableError: the server cannot be reached (retryable).
        StoreError: any other Chroma failure (message names the operation and error type only).
    """
    for attempt in range(retries + 1):
        try:
            if _serialize_calls:
                with _EMBEDDED_CALLS:
                    return fn()
            return fn()
        except (StoreError, EmbeddingError):
            raise
        except Exception as exc:
            if _is_unavailable(exc):
                raise StoreUnavailableError(
                    f"Chroma is unreachable during {what} ({type(exc).__name__})"
                ) from None
            if attempt < retries and type(exc).__name__ == "InternalError":
                time.sleep(0.02 * (attempt + 1))
                continue
            raise StoreError(f"Chroma failed during {what} ({type(exc).__name__})") from None
    raise AssertionError("unreachable")  # pragma: no cover


def set_http_timeout(client: Any, timeout: float | None) -> None:
    """Bound every request of a Chroma ``HttpClient`` (its httpx session has no timeout).

    Chroma's client keeps its httpx session in a private attribute and offers no public way to
    set a timeout; without one, a hung server hangs every caller. The attribute is looked up
    defensively: if a Chroma release moves it, nothing is changed (and nothing breaks).
    """
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0) if timeout else None)


def get_collection_or_none(client: Any, name: str) -> Any:
    """A collection by name, or ``None`` when it does not exist (never creates one)."""
    try:
        return client.get_collection(name, embedding_function=None)
    except Exception as exc:
        if type(exc).__name__ in {"NotFoundError", "InvalidCollectionException"} or "does not exist" in str(
            exc
        ):
            return None
        raise


def kind_collection(client: Any, prefix: str, kind: str, *, read_only: bool) -> Any:
    """The store's ``<prefix>-<kind>`` bookkeeping collection (ledger, change feed).

    A reader only opens it (``None`` when it does not exist yet: a reader creates nothing); a writer
    creates it, stamped with its kind and prefix.
    """
    name = f"{prefix}-{kind}"
    if read_only:
        return chroma_call(f"open {kind}", lambda: get_collection_or_none(client, name))
    return chroma_call(
        f"open {kind}",
        lambda: client.get_or_create_collection(
            name, metadata={"rg_kind": kind, "rg_prefix": prefix}, embedding_function=None
        ),
    )


def is_internal_error(exc: BaseException) -> bool:
    """True for Chroma's ``InternalError`` (matched by name: chromadb moves its error classes)."""
    return type(exc).__name__ == "InternalError"


class DiskGuard:
    """Refuse a write before it can fill the disk under an embedded Chroma folder.

    chromadb 1.5.9 on a full disk first fails writes with an internal error, then blocks forever
    inside its Rust code *holding the GIL* (measured on a 6 MiB tmpfs, issue 13), so no timeout
    in Python can bound it: the only safe place to stop is before the call. Before each write the
    guard checks that the file system keeps at least ``reserve`` bytes free after it, where the
    reserve covers what Chroma may write for it: the payload several times over (write-ahead
    log, metadata, full-text trigrams, SQLite journal), and a rewrite of the largest HNSW segment
    (Chroma persists a segment whole every ``sync_threshold`` writes), plus ``floor``.

    Args:
        folder: the Chroma folder.
        floor: bytes always kept free.
    """

    def __init__(self, folder: Path, *, floor: int = 2 << 20) -> None:
        self.folder = folder
        self.floor = floor
        self._segments = (0.0, 0)
        self._lock = threading.Lock()

    def _largest_segment(self) -> int:
        with self._lock:
            at, size = self._segments
            if time.monotonic() - at < 2.0:
                return size
        largest = 0
        try:
            for entry in os.scandir(self.folder):
                if entry.is_dir():
                    largest = max(
                        largest, sum(f.stat().st_size for f in os.scandir(entry.path) if f.is_file())
                    )
        except OSError:
            pass
        with self._lock:
            self._segments = (time.monotonic(), largest)
        return largest

    def check(self, what: str, payload: int) -> None:
        """Raise :class:`StoreError` if ``payload`` bytes could fill the disk.

        Raises:
            StoreError: naming the operation and the sizes (never the data).
        """
        try:
            st = os.statvfs(self.folder)
        except OSError:
            return  # nothing to measure (the folder is gone): Chroma's own error will say so
        free = st.f_bavail * st.f_frsize
        need = self.floor + 16 * max(0, payload) + (self._largest_segment() * 5) // 4
        if free < need:
            raise StoreError(
                f"not enough free disk space for {what}: {free >> 10} KiB free, {need >> 10} KiB needed "
                "(Chroma blocks forever on a full disk, so the write is refused before it starts)"
            )


def sources_in(col: Any, sources: Sequence[str], *, what: str, chunk: int = 500) -> set[str]:
    """Those of ``sources`` that some row of a collection names as its ``source_record_id``.

    One ``get`` per chunk of ``chunk`` sources (a ``$in`` filter; metadata only), for the sweep that
    finds what forgotten sources still hold in memories, lineage links and the quarantine (L2).
    """
    wanted = sorted({s for s in sources if s})
    found: set[str] = set()
    for i in range(0, len(wanted), chunk):
        where = {"source_record_id": {"$in": wanted[i : i + chunk]}}
        got = chroma_call(what, functools.partial(col.get, where=where, include=["metadatas"]))
        found.update(str(m.get("source_record_id") or "") for m in got["metadatas"] or [])
    return found - {""}
