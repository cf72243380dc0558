"""Audit records and sinks (R9).

``JsonlSink``: append-only, hash-chained JSON lines, one ``write`` per line on a file opened with
``O_APPEND`` (optional ``fsync``, rotation), and :func:`verify_chain` to check a file.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import re
import threading
from pathlib import Path

from .record import AuditRecord

try:  # POSIX: an exclusive lock per append, shared by threads and processes
    import fcntl as _fcntl
except ImportError:  # pragma: no cover - Windows: O_APPEND alone
    _fcntl = None  # type: ignore[assignment]

__all__ = ["GENESIS", "JsonlSink", "verify_chain"]

_log = logging.getLogger("recall_gate.audit")


class JsonlSink:
    """Append audit records to a JSON-lines file, hash-chained, optionally rotated by size.

    **Line-atomic appends.** Each record is one ``os.write`` of one complete line to a descriptor
    opened with ``O_APPEND``, under an exclusive ``flock`` on the file (POSIX), so lines from
    threads or processes never interleave and each line's chain link is computed against the line
    really before it.

    **fsync policy.** ``fsync=False`` (default): a returned call means the line is in the kernel's
    page cache, which survives a crash or kill of the process but not a power loss or kernel crash
    (the last lines may then be missing, or the last one cut short). ``fsync=True``: each line is
    ``fsync``-ed before the call returns (and the folder after a rotation), which survives power
    loss at the cost of one disk flush per record. Either way an interrupted last line (no
    newline) is ignored by :meth:`read` and :func:`verify_chain`, and removed by the next writer
    before it appends, so it can never glue onto the next record.

    **Rotation.** With ``max_bytes``, a line that would make the file larger than ``max_bytes``
    first renames ``audit.jsonl`` to ``audit.jsonl.1`` (``.1`` to ``.2`` ..., keeping ``backups``
    files; the oldest is dropped). Off by default.

    **Tamper evidence (hash chain).** With ``chain=True`` (default) every line starts with two
    envelope keys, ``{"prev": P, "hash": H, ...record...}``: ``H`` is the sha256 of ``P`` followed
    by the record's JSON, and ``P`` is the ``hash`` of the line before it (``"0" * 64`` for the
    first line ever), continued across rotation. :func:`verify_chain` recomputes both and names
    the first line that was edited, removed or moved. The envelope is not part of
    :class:`AuditRecord` (it describes the file, not the decision): :meth:`read` strips it, and
    ``AuditRecord.model_validate`` of a raw line ignores unknown keys anyway. A chain proves
    order and integrity *between* lines; lines cut from the very end, or from the head of the
    oldest file kept after rotation, leave no gap to detect. To notice those too, record
    :attr:`head` (the newest hash) somewhere else and compare later.

    Args:
        path: the file (its folder is created).
        fsync: ``fsync`` every line (see above).
        max_bytes: rotate before a line would grow the file beyond this size; ``None``: never.
        backups: how many rotated files to keep (at least 1 when ``max_bytes`` is set).
        chain: write the ``prev``/``hash`` envelope.

    Raises:
        ValueError: if ``max_bytes`` or ``backups`` is not a positive integer.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        fsync: bool = False,
        max_bytes: int | None = None,
        backups: int = 5,
        chain: bool = True,
    ) -> None:
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
        ):
            raise ValueError("max_bytes must be a positive integer or None")
        if isinstance(backups, bool) or not isinstance(backups, int) or backups < 1:
            raise ValueError("backups must be a positive integer")
        self.path = Path(path)
        self.fsync = fsync
        self.max_bytes = max_bytes
        self.backups = backups
        self.chain = chain
        self._lock = threading.Lock()
        # (inode, size) of the file right after our last line, and that line's hash: lets the
        # next call skip re-reading the tail when nobody else wrote in between.
        self._tail: tuple[int, int, str] | None = None

    @property
    def head(self) -> str | None:
        """The ``hash`` of the last line this sink wrote (``None`` before its first line)."""
        return self._tail[2] if self._tail is not None else None

    def __call__(self, record: AuditRecord) -> None:
        """Append ``record`` as one line."""
        body = record.to_json()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            for _ in range(100):  # retried only while another process rotates the file under us
                if self._append(body):
                    return
            raise OSError(f"could not append to {self.path}: it keeps being rotated")

    def _append(self, body: str) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if _fcntl is not None:
                _fcntl.flock(fd, _fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                if os.stat(self.path).st_ino != st.st_ino:
                    return False  # rotated by another process while we waited for the lock
            except FileNotFoundError:
                return False
            size = _repair_tail(fd, st.st_size)
            line_len = len(body.encode("utf-8")) + (_ENVELOPE_LEN if self.chain else 1)
            if self.max_bytes is not None and size > 0 and size + line_len > self.max_bytes:
                self._rotate()
                return False
            if self.chain:
                prev = self._prev_hash(fd, st.st_ino, size)
                digest = _line_hash(prev, body)
                line = f'{{"prev":"{prev}","hash":"{digest}",{body[1:]}\n'.encode()
            else:
                digest = hashlib.sha256(body.encode("utf-8")).hexdigest()
                line = (body + "\n").encode("utf-8")
            written = os.write(fd, line)
            if written != len(line):  # a short write on a regular file: disk full
                os.ftruncate(fd, size)
                raise OSError(errno.ENOSPC, f"short write to {self.path}")
            if self.fsync:
                os.fsync(fd)
            self._tail = (st.st_ino, size + len(line), digest)
            return True
        finally:
            os.close(fd)  # also releases the flock

    def _prev_hash(self, fd: int, inode: int, size: int) -> str:
        if self._tail is not None and self._tail[:2] == (inode, size):
            return self._tail[2]
        if size == 0:
            previous = _rotated(self.path, 1)
            return _file_head(previous) if previous.exists() else GENESIS
        return _link_of(_last_line(fd, size))

    def _rotate(self) -> None:
        for index in range(self.backups - 1, 0, -1):
            src = _rotated(self.path, index)
            if src.exists():
                os.replace(src, _rotated(self.path, index + 1))
        os.replace(self.path, _rotated(self.path, 1))
        if self.fsync:
            _fsync_dir(self.path.parent)

    def read(self) -> list[AuditRecord]:
        """All records in the file (for tests and the command line).

        The chain envelope is stripped; an interrupted last line (no newline) is skipped.
        """
        if not self.path.exists():
            return []
        out: list[AuditRecord] = []
        for raw in _complete_lines(self.path.read_bytes()):
            if not raw.strip():
                continue
            data = json.loads(raw)
            if isinstance(data, dict):
                data.pop("prev", None)
                data.pop("hash", None)
            out.append(AuditRecord.model_validate(data))
        return out


GENESIS = "0" * 64
"""The ``prev`` of the first line of a hash-chained audit file."""

_ENVELOPE_LEN = len('{"prev":"","hash":"",') + 2 * 64 - 1 + 1  # envelope, minus the body's "{", plus "\n"
_ENVELOPE = re.compile(rb'^\{"prev":"([0-9a-f]{64})","hash":"([0-9a-f]{64})",(.*)\Z', re.DOTALL)


def _line_hash(prev: str, body: str) -> str:
    return hashlib.sha256((prev + body).encode("utf-8")).hexdigest()


def _link_of(line: bytes) -> str:
    """The hash the next line must name as ``prev``.

    That is the line's own ``hash``, or, for a line written without the envelope, its sha256.
    """
    match = _ENVELOPE.match(line)
    return match.group(2).decode("ascii") if match else hashlib.sha256(line).hexdigest()


def _rotated(path: Path, index: int) -> Path:
    return path.with_name(f"{path.name}.{index}")


def _predecessor(base: Path, index: int) -> Path | None:
    """The rotated file written before ``base``'s file number ``index`` (0: ``base`` itself).

    That is the existing file with the next higher number: a writer killed inside
    :meth:`JsonlSink._rotate`, after ``.1`` became ``.2`` and before ``audit.jsonl`` became ``.1``,
    leaves a gap in the numbers that later rotations carry along. A file removed from the middle
    is still found: the next older file's last hash is not what the newer file's first line names.
    """
    numbers = sorted(
        int(n)
        for q in base.parent.glob(base.name + ".*")
        if (n := q.name[len(base.name) + 1 :]).isdigit() and int(n) > index
    )
    return _rotated(base, numbers[0]) if numbers else None


def _complete_lines(data: bytes) -> list[bytes]:
    """Lines ended by a newline (an unterminated last fragment is an interrupted write)."""
    lines = data.split(b"\n")
    return lines[:-1]  # after the last newline: b"" or the interrupted fragment


def _file_head(path: Path) -> str:
    lines = [line for line in _complete_lines(path.read_bytes()) if line.strip()]
    return _link_of(lines[-1]) if lines else GENESIS


def _last_line(fd: int, size: int) -> bytes:
    """The last complete line of a file whose size is ``size`` and whose last byte is a newline."""
    end = size - 1  # the final newline
    chunk = 65536
    buf = b""
    pos = end
    while pos > 0:
        start = max(0, pos - chunk)
        buf = os.pread(fd, pos - start, start) + buf
        pos = start
        cut = buf.rfind(b"\n")
        if cut != -1:
            return buf[cut + 1 :]
    return buf


def _repair_tail(fd: int, size: int) -> int:
    """Cut an interrupted last line (no final newline) so the next line starts on its own; new size."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    pos = size
    chunk = 65536
    while pos > 0:
        start = max(0, pos - chunk)
        cut = os.pread(fd, pos - start, start).rfind(b"\n")
        if cut != -1:
            keep = start + cut + 1
            break
        pos = start
    else:
        keep = 0
    _log.warning("audit file ended in an interrupted line; removed %d bytes", size - keep)
    os.ftruncate(fd, keep)
    return keep


def _fsync_dir(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def verify_chain(path: str | Path) -> tuple[bool, int | None]:
    """Check the hash chain of an audit file written by :class:`JsonlSink`.

    Every line must carry the envelope, its ``hash`` must match its content, and its ``prev``
    must be the ``hash`` of the line before it. The line before line 1 is the last line of the
    previous file in the rotation (``audit.jsonl.1`` before ``audit.jsonl``, ``.2`` before
    ``.1``; the next higher number that exists, after a writer killed mid-rotation); without
    one, line 1 must start the chain (``prev`` = :data:`GENESIS`), except in a rotated file
    whose predecessor was dropped, where line 1 is taken as the anchor. An
    interrupted last line (no newline) is not a record and is ignored. Lines written before the
    chain existed (no envelope) are accepted only at the start of the file.

    Args:
        path: ``audit.jsonl`` or one of its rotated files (``audit.jsonl.3``).

    Returns:
        ``(True, None)`` when the chain holds, else ``(False, n)`` with ``n`` the 1-based number
        of the first line that does not fit: an edited line fails its own hash, a removed or moved
        line breaks the link of the line after the gap.
    """
    p = Path(path)
    stem, _, suffix = p.name.rpartition(".")
    if stem and suffix.isdigit():
        base, index, rotated = p.with_name(stem), int(suffix), True
    else:
        base, index, rotated = p, 0, False
    predecessor = _predecessor(base, index)
    expected: str | None = GENESIS
    if predecessor is not None:
        expected = _file_head(predecessor)
    elif rotated:
        expected = None  # the file before it was dropped by rotation: line 1 is the anchor
    legacy_prefix = True
    for number, line in enumerate(_complete_lines(p.read_bytes()), start=1):
        match = _ENVELOPE.match(line)
        if match is None:
            if not legacy_prefix:
                return False, number
            try:
                json.loads(line)
            except ValueError:
                return False, number
            expected = hashlib.sha256(line).hexdigest()
            continue
        legacy_prefix = False
        prev, digest, rest = (g.decode("utf-8", "replace") for g in match.groups())
        if expected is not None and prev != expected:
            return False, number
        body = "{" + rest
        if _line_hash(prev, body) != digest:
            return False, number
        try:
            json.loads(body)
        except ValueError:
            return False, number
        expected = digest
    return True, None
