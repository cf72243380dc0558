"""The tombstone mirror: tombstones kept where a restore of the store's data does not roll them back (L2).

The ledger's tombstones live in Chroma, inside the data they protect: restoring a backup of the
store folder (or of a server's folder) would bring back a forgotten memory *and* drop its
tombstone (issue 13). So every tombstone is also appended to a small JSON-lines file **outside
the data folder** — by default the sibling ``<store>.tombstones.jsonl`` of an embedded store's
folder; any path for a server store (``tombstone_mirror=``). It holds tombstone keys, times and
counts only (``src:<source id>`` / ``mem:<memory id>``), never text.

**Re-applied on open.** When a writer opens the store, every mirrored tombstone the ledger lacks is
written back, and a forget of each such source is journaled, so the store's resume step
(``lifecycle.resume``) deletes whatever the restore brought back before the first query; restored
memories tombstoned by id are deleted directly. A read-only store cannot delete: it hides the
mirrored sources and ids from its partitions instead, so a restored memory is never recalled by
any client that sees the mirror.

One line per tombstone, written with ``O_APPEND`` in one ``write`` and ``fsync``-ed: lines from
several processes never interleave, and a line cut short by a crash is ignored when read.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from ..errors import StoreError

__all__ = ["TombstoneMirror", "default_mirror_path"]


def default_mirror_path(store_folder: Path) -> Path:
    """``<parent>/<name>.tombstones.jsonl``: next to the store folder, not inside it."""
    folder = store_folder.resolve()
    return folder.parent / f"{folder.name}.tombstones.jsonl"


class TombstoneMirror:
    """Append-only tombstone keys in a file outside the store's data (see module docstring).

    Args:
        path: the mirror file (its folder is created on first write).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._stamp: tuple[int, int] | None = None
        self._split: tuple[int, frozenset[str], frozenset[str]] | None = None

    def append(self, keys: Iterable[str], *, at: datetime, counts: int = 0) -> None:
        """Record tombstone keys (durably, before the call returns).

        Raises:
            StoreError: if the file cannot be written (the forget then fails before deleting).
        """
        keys = [k for k in dict.fromkeys(keys) if k]
        if not keys:
            return
        data = "".join(
            json.dumps({"k": k, "at": at.timestamp(), "n": counts}, ensure_ascii=True) + "\n" for k in keys
        ).encode("ascii")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StoreError(
                f"cannot write the tombstone mirror {self.path} ({type(exc).__name__})"
            ) from None
        with self._lock:
            self._keys.update(keys)
            self._stamp = None  # re-read on next use (other processes append too)

    def has_any(self, keys: Iterable[str]) -> bool:
        """True when any of ``keys`` is mirrored."""
        return bool(self.among(keys))

    def among(self, keys: Iterable[str]) -> set[str]:
        """Those of ``keys`` that are mirrored (the file is re-read only when it changed)."""
        self._refresh()
        with self._lock:
            return {k for k in keys if k in self._keys}

    def keys(self) -> set[str]:
        """Every mirrored tombstone key (re-read when the file changed)."""
        self._refresh()
        with self._lock:
            return set(self._keys)

    def _refresh(self) -> None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(f"cannot read the tombstone mirror {self.path} ({type(exc).__name__})") from None
        stamp = (st.st_size, st.st_mtime_ns)
        with self._lock:
            if stamp == self._stamp:
                return
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read the tombstone mirror {self.path} ({type(exc).__name__})") from None
        keys: set[str] = set()
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line cut short by a crash
            key = entry.get("k") if isinstance(entry, dict) else None
            if isinstance(key, str) and key.startswith(("src:", "mem:")):
                keys.add(key)
        with self._lock:
            self._keys, self._stamp, self._split = keys, stamp, None

    def hidden(self) -> tuple[frozenset[str], frozenset[str]]:
        """``(source record ids, memory ids)`` the mirror tombstones (cached until the file changes)."""
        self._refresh()
        with self._lock:
            if self._split is None or self._split[0] != len(self._keys):
                keys = self._keys
                self._split = (
                    len(keys),
                    frozenset(k[4:] for k in keys if k.startswith("src:")),
                    frozenset(k[4:] for k in keys if k.startswith("mem:")),
                )
            return self._split[1], self._split[2]
