"""The SQLite half of a compaction, run as a child process (:func:`shared_core.store.erasure.compact_chroma`).

Why a child process: chromadb's Rust bindings carry their own copy of SQLite, and Python's
``sqlite3`` is another. SQLite's locks are POSIX advisory locks, which belong to the *process*:
two copies in one process never block each other, and closing one copy's file handle drops the
other's locks ("How To Corrupt An SQLite Database File", sqlite.org, section 2.2). Compacting
``chroma.sqlite3`` from the process that has Chroma open made a concurrent Chroma read fail
("disk I/O error", "Failed to get segments") and could leave the file "malformed" (seen in the
load benchmark, 9 runs of 30). From another process the locks work as SQLite intends: this
script waits for Chroma's connections, and Chroma's see the rewritten file.

Standard library only (it runs as ``python -I -S <this file> <db> <busy_timeout>``: no site
packages, so it starts in ~40 ms) and prints one line: ``scrubbed <n>``, or ``error <type>:
<message>`` with exit status 1. The
steps (each one SQLite transaction, so nothing is half-done) are those of
:mod:`shared_core.store.erasure`: scrub the queue, merge the full-text index, ``VACUUM`` with
``secure_delete``.
"""

from __future__ import annotations

import sqlite3
import struct
import sys

_DELETE = 3


def _placeholder(nbytes: int) -> bytes:
    """The unit vector e1 as float32 bytes of the given size (the scrubbed rows' vector)."""
    if nbytes < 4:
        return b"\x00" * nbytes
    return struct.pack("<f", 1.0) + b"\x00" * (nbytes - 4)


def scrub_queue(con: sqlite3.Connection) -> int:
    """Blank every queue row of an id that a later ``DELETE`` of the same collection removed."""
    con.execute("BEGIN IMMEDIATE")
    try:
        last_delete = {
            (topic, mid): seq
            for topic, mid, seq in con.execute(
                "SELECT topic, id, MAX(seq_id) FROM embeddings_queue WHERE operation = ? GROUP BY topic, id",
                (_DELETE,),
            )
        }
        dead = [
            (seq, size)
            for seq, topic, mid, size in con.execute(
                "SELECT seq_id, topic, id, COALESCE(length(vector), 0) FROM embeddings_queue "
                "WHERE operation != ? AND (metadata IS NOT NULL OR vector IS NOT NULL)",
                (_DELETE,),
            )
            if seq < last_delete.get((topic, mid), -1)
        ]
        for seq, size in dead:
            con.execute(
                "UPDATE embeddings_queue SET metadata = NULL, vector = ? WHERE seq_id = ?",
                (_placeholder(size) if size else None, seq),
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return len(dead)


def compact_file(db: str, busy_timeout: float) -> int:
    """Scrub, merge and vacuum one ``chroma.sqlite3``; returns the scrubbed queue rows."""
    con = sqlite3.connect(db, timeout=busy_timeout, isolation_level=None)
    try:
        con.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        con.execute("PRAGMA secure_delete = ON")
        scrubbed = scrub_queue(con)
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "embedding_fulltext_search" in tables:
            con.execute(
                "INSERT INTO embedding_fulltext_search(embedding_fulltext_search) VALUES ('optimize')"
            )
        con.execute("VACUUM")
    finally:
        con.close()
    return scrubbed


def main(argv: list[str]) -> int:
    """``<db> <busy_timeout>``: compact, print the result line, return the exit status."""
    db, busy_timeout = argv[0], float(argv[1])
    try:
        scrubbed = compact_file(db, busy_timeout)
    except sqlite3.Error as exc:
        print(f"error {type(exc).__name__}: {exc}")
        return 1
    print(f"scrubbed {scrubbed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
