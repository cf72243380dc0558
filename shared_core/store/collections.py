"""The memory spaces' Chroma collections of one store (one collection per space, cosine space).

Also the one place that reads a space's collection for the partition cache
(:meth:`Collections.read`): an embedded store opened read-only next to its writer reopens its
Chroma client once when Chroma cannot find vectors another process wrote (chromadb 1.5.9 keeps
its HNSW index per process: "Error finding id").
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import Any

from ..embedding import Embedder
from ..errors import StoreError
from .chroma import (
    READ_RETRIES,
    check_collection_embedding,
    chroma_call,
    collection_name,
    get_collection_or_none,
    is_internal_error,
)

__all__ = ["Collections"]


class Collections:
    """Collection handles of one store prefix on one client; thread-safe.

    Args:
        client: the Chroma client.
        prefix: the store's collection prefix.
        embedder: the store's embedding (recorded in, and checked against, each collection).
        read_only: never create a collection.
        reopen: ``() -> client``, for a read-only embedded reader (see module docstring).
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str,
        embedder: Embedder,
        read_only: bool = False,
        reopen: Callable[[], Any] | None = None,
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.embedder = embedder
        self.read_only = read_only
        self.on_reopen: list[Callable[[], None]] = []
        self._reopen = reopen
        self._collections: dict[str, Any] = {}
        self._mutex = threading.Lock()

    def clear(self) -> None:
        """Forget every handle."""
        with self._mutex:
            self._collections.clear()

    def _writable(self) -> None:
        if self.read_only:
            raise StoreError("the store is open read-only")

    def collection(self, space: str, *, create: bool) -> Any:
        """The collection of a memory space (``None`` when absent and not ``create``)."""
        with self._mutex:
            col = self._collections.get(space)
        if col is not None:
            return col
        name = collection_name(self.prefix, space)
        if create:
            self._writable()
            meta = {
                "hnsw:space": "cosine",
                "rg_space": space,
                "rg_prefix": self.prefix,
                "rg_embedding": self.embedder.name,
                "rg_dim": int(self.embedder.dimension),
            }
            col = chroma_call(
                "create collection",
                lambda: self.client.get_or_create_collection(name, metadata=meta, embedding_function=None),
            )
        else:
            col = chroma_call("get collection", lambda: get_collection_or_none(self.client, name))
            if col is None:
                return None
        check_collection_embedding(col.metadata, self.embedder.name, int(self.embedder.dimension), space)
        with self._mutex:
            self._collections[space] = col
        return col

    def spaces(self) -> list[str]:
        """Every memory space of this store (and only this store's, whatever the server holds)."""
        cols = chroma_call("list collections", self.client.list_collections)
        out = []
        for c in cols:
            name = c if isinstance(c, str) else c.name
            if not name.startswith(f"{self.prefix}-"):
                continue
            col = (
                c
                if not isinstance(c, str)
                else chroma_call(
                    "get collection", partial(self.client.get_collection, name, embedding_function=None)
                )
            )
            meta = col.metadata or {}
            space = meta.get("rg_space")
            # Prefix and exact name keep stores with prefixes "rg" and "rg-team" apart.
            if (
                isinstance(space, str)
                and meta.get("rg_prefix", self.prefix) == self.prefix
                and collection_name(self.prefix, space) == name
            ):
                out.append(space)
        return sorted(out)

    def reopen_client(self) -> None:
        """Replace the client with a fresh one (see module docstring) and tell the listeners."""
        if self._reopen is None:  # pragma: no cover - guarded by the caller
            return
        with self._mutex:
            self.client = self._reopen()
            self._collections.clear()
        for hook in self.on_reopen:
            hook()

    def read(self, what: str, space: str, call: Callable[[Any], Any]) -> Any:
        """A read of a space's collection; a read-only embedded reader reopens its client once."""
        holder = [self.collection(space, create=False)]
        if holder[0] is None:
            return None

        def attempt() -> Any:
            try:
                return call(holder[0])
            except Exception as exc:
                if self._reopen is None or not is_internal_error(exc):
                    raise
            self.reopen_client()
            holder[0] = self.collection(space, create=False)
            return call(holder[0]) if holder[0] is not None else None

        return chroma_call(what, attempt, retries=READ_RETRIES if self._reopen is None else 0)
