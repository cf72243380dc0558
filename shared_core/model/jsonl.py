"""Reading JSON lines: one object per line, errors by line number, never text.

One reader for every file the project reads this way (exported records, hits, evaluation cases,
BEIR corpora): :func:`iter_jsonl` streams ``(line number, object)`` pairs, :func:`read_jsonl`
returns the objects. A file that cannot be read is an :class:`~shared_core.errors.InputError`
naming the file; a line that is not a JSON object is a :class:`~shared_core.errors.HitParseError`
naming the line and column (an ``InputError`` too), never the line's text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import HitParseError, InputError

__all__ = ["iter_jsonl", "read_jsonl"]


def iter_jsonl(path: str | Path, *, what: str = "records file") -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for each non-blank line of a JSON-lines file, read as a stream.

    Args:
        path: the file.
        what: how messages name the file (``"records file"``, ``"hits file"``, ``"case file"``).

    Raises:
        InputError: if the file cannot be read (missing, a folder, not UTF-8, no permission).
        HitParseError: naming the first line that is not a JSON object (and the column).
    """
    p = Path(path)
    try:
        fh = p.open(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found: {p}") from None
    except IsADirectoryError:
        raise InputError(f"{what} {p} is a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} {p}: {type(exc).__name__}") from None
    with fh:
        try:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise HitParseError(
                        f"not valid JSON, column {exc.colno}: {exc.msg}", line=number
                    ) from None
                if not isinstance(obj, dict):
                    raise HitParseError(f"expected a JSON object, got {type(obj).__name__}", line=number)
                yield number, obj
        except UnicodeDecodeError:
            raise InputError(f"{what} {p} is not UTF-8 text") from None


def read_jsonl(path: str | Path, *, what: str = "records file") -> list[dict[str, Any]]:
    """Every object of a JSON-lines file (blank lines skipped); errors as :func:`iter_jsonl`."""
    return [obj for _, obj in iter_jsonl(path, what=what)]
