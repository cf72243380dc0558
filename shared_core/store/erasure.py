"""Compaction: make deleted text leave the bytes of a Chroma folder (L2, "provable erasure").

What chromadb 1.5.9 keeps after ``collection.delete`` (measured; chroma-core/chroma#7659):

* **the embeddings queue** (``embeddings_queue`` in ``chroma.sqlite3``): Chroma's write-ahead log
  holds each write's vector and metadata *including the document*, and purges a row only once
  every segment of the collection (the HNSW index among them, persisted every
  ``hnsw:sync_threshold`` writes) has applied it. A forgotten memory's ``ADD`` row stays until
  then, however long that is.
* **freed SQLite pages and cells**: deleted metadata, documents and full-text rows stay in the
  file's free space until it is rewritten.
* **full-text index segments** (``embedding_fulltext_search``, FTS5 trigram): a delete adds a
  delete marker; the original segment keeps the entry until the segments are merged.

``chroma vacuum`` (the CLI of 1.5.9) runs ``VACUUM`` and turns on automatic purging: it does not
touch queue rows the HNSW segment has not yet applied, nor merge the FTS segments.

:func:`compact_chroma` does all three, in this order, on a folder no other process is writing:

1. **scrub the queue**: every ``ADD``/``UPDATE``/``UPSERT`` row of an id followed by a ``DELETE``
   of that id in the same collection gets its metadata (document included) removed and its vector
   replaced by the unit vector ``e1`` of the same size. Replaying the log (Chroma does, on
   open, for rows the HNSW segment has not applied) then adds a placeholder and deletes it: the
   same end state, with nothing of the forgotten memory in it. Nothing else is changed.
2. **merge the full-text index** (FTS5 ``optimize``): deleted entries leave its segments.
3. **VACUUM** with ``secure_delete``: the file is rewritten without free pages.

4. **zero the unused capacity of the HNSW files** (:func:`scrub_hnsw`). hnswlib allocates its
   level-0 array for ``max_elements`` with ``malloc`` and writes all of it to ``data_level0.bin``:
   the slots past ``cur_element_count`` hold whatever the process's heap held — measured with
   chromadb 1.5.9: a forgotten memory's JSON, quarantined text, anything. ``length.bin`` (one
   link-list size per slot) is written the same way and gets the same treatment. Each element slot in
   use is zeroed by hnswlib when written, so zeroing the tail leaves the index as it was.
   Chroma rewrites these files while it runs (and on close), so the store scrubs them after
   closing its client and before opening it.

The HNSW files keep the *vectors* of deleted items (marked deleted) until Chroma rebuilds them; no
text. A server's folder is compacted the same way once the server has stopped (``chroma`` holds
the SQLite file open and rewrites HNSW files while it runs).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import StoreError
from . import sqlite_compact
from .chroma import exclusive_chroma

__all__ = ["compact_chroma", "disk_free", "scrub_hnsw"]

_VACUUM_SECONDS = 600.0  # a VACUUM rewrites the file: allow it minutes on a large store


def disk_free(path: Path) -> int:
    """Bytes available to this process on the file system holding ``path``."""
    st = os.statvfs(path)
    return int(st.f_bavail * st.f_frsize)


def compact_chroma(folder: str | Path, *, busy_timeout: float = 10.0) -> dict[str, Any]:
    """Scrub, merge and vacuum the ``chroma.sqlite3`` of a Chroma folder (see module docstring).

    The SQLite steps run in a child process (:mod:`shared_core.store.sqlite_compact` says why: two
    copies of SQLite in one process corrupt each other's locks), while no Chroma call of this
    process runs. Safe while this process has the folder open through a ``PersistentClient``;
    another process reading it makes ``VACUUM`` wait up to ``busy_timeout`` seconds, then fail.

    Args:
        folder: the Chroma folder (the one holding ``chroma.sqlite3``).
        busy_timeout: seconds to wait for other connections.

    Returns:
        ``{"scrubbed": rows, "bytes_before": n, "bytes_after": n, "ms": t}`` (counts only).

    Raises:
        StoreError: if the file is missing, locked past the timeout, or the disk lacks room for
            the rewrite (``VACUUM`` needs about the file's size free); nothing is half-done
            (each step is one SQLite transaction).
    """
    db = Path(folder) / "chroma.sqlite3"
    if not db.is_file():
        raise StoreError(f"no Chroma database in {folder}")
    t0 = time.perf_counter()
    before = db.stat().st_size
    if disk_free(db.parent) < before + (4 << 20):
        raise StoreError(
            f"not enough free disk space to compact {db} (needs about {before >> 20} MiB + 4 MiB free)"
        )
    command = [sys.executable, "-I", "-S", sqlite_compact.__file__, str(db), str(busy_timeout)]
    with exclusive_chroma():
        try:
            run = subprocess.run(
                command, capture_output=True, text=True, timeout=busy_timeout + _VACUUM_SECONDS, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise StoreError(f"compaction of {db} could not run ({type(exc).__name__})") from None
    lines = run.stdout.strip().splitlines()
    last = lines[-1] if lines else f"error exit status {run.returncode}"
    if run.returncode != 0 or not last.startswith("scrubbed "):
        raise StoreError(f"compaction of {db} failed ({last.removeprefix('error ')})")
    hnsw = scrub_hnsw(db.parent)
    return {
        "scrubbed": int(last.split()[1]),
        "hnsw_bytes_zeroed": hnsw,
        "bytes_before": before,
        "bytes_after": db.stat().st_size,
        "ms": round((time.perf_counter() - t0) * 1e3, 1),
    }


_HNSW_HEADER = struct.Struct(
    "<i6Q"
)  # version, offsetLevel0, max_elements, cur_count, size/element, label, data


def scrub_hnsw(folder: str | Path) -> int:
    """Zero the unused capacity of every HNSW ``data_level0.bin`` and ``length.bin`` under a Chroma folder.

    Only files whose ``header.bin`` parses (format version 1) and whose size matches
    ``max_elements * size_data_per_element`` are touched; anything else is left alone.

    Returns:
        How many bytes were zeroed (0 when they already were).

    Raises:
        StoreError: if a file that should be scrubbed cannot be written.
    """
    zeroed = 0
    root = Path(folder)
    for header in sorted(root.glob("*/header.bin")):
        data = header.with_name("data_level0.bin")
        try:
            raw = header.read_bytes()
            if len(raw) < _HNSW_HEADER.size or not data.is_file():
                continue
            version, _off0, max_el, cur, per_el, _label, _data = _HNSW_HEADER.unpack_from(raw, 0)
            size = data.stat().st_size
            if version != 1 or per_el <= 0 or cur > max_el or size != max_el * per_el:
                continue
            zeroed += _zero_tail(data, cur * per_el)
            # length.bin: one uint32 link-list size per element *slot* (max_elements of them),
            # written from a malloc'd array: the slots past cur_element_count are heap garbage
            # too (measured: a forgotten memory's text, intermittently).
            lengths = header.with_name("length.bin")
            if lengths.is_file() and lengths.stat().st_size == max_el * 4:
                zeroed += _zero_tail(lengths, cur * 4)
        except OSError as exc:
            raise StoreError(f"cannot scrub the HNSW file {data} ({type(exc).__name__})") from None
    return zeroed


def _zero_tail(path: Path, start: int) -> int:
    """Zero the bytes of ``path`` from ``start`` on (fsynced); returns how many were not zero yet."""
    size = path.stat().st_size
    if start >= size:
        return 0
    with path.open("r+b") as fh:
        fh.seek(start)
        tail = fh.read(size - start)
        if tail.count(0) == len(tail):
            return 0
        fh.seek(start)
        fh.write(b"\x00" * (size - start))
        fh.flush()
        os.fsync(fh.fileno())
    return size - start
