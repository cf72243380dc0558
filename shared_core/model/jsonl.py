"""Reading records exported as JSON lines: one object per line, errors by line number, never text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import HitParseError, InputError

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path, *, what: str = "records file") -> list[dict[str, Any]]:
    """Read one JSON object per line (blank lines skipped).

    Args:
        path: the file.
        what: how messages name the file (``"records file"``, ``"hits file"``, ``"cases file"``).

    Raises:
        InputError: if the file cannot be read.
        HitParseError: naming the first line that is not a JSON object (and the column), never its text.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{what} not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {what} {p}: {type(exc).__name__}") from None
    out: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HitParseError(f"not valid JSON ({exc.msg}, column {exc.colno})", line=number) from None
        if not isinstance(obj, dict):
            raise HitParseError(f"expected a JSON object, got {type(obj).__name__}", line=number)
        out.append(obj)
    return out
