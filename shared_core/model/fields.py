"""Field types shared by the models: scope keys, aware-UTC datetimes, string tuples.

Parsing is pydantic's own (ISO 8601 strings, ``Z``, epoch numbers); then naive -> UTC, aware -> UTC.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, StringConstraints

from ..timeutil import to_utc

__all__ = [
    "MAX_KEY_CHARS",
    "Key",
    "OptDatetime",
    "OptKey",
    "ReqDatetime",
    "StrTuple",
    "check_key",
    "error_fields",
]


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_KEY_CHARS = 256


def check_key(value: str, field: str) -> str:
    """Check an id or scope key: a non-empty string of at most 256 characters, no control characters.

    Raises:
        ValueError: naming ``field`` (never the value).
    """
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string")
    if not value.strip():
        raise ValueError(f"{field} must not be empty")
    if len(value) > MAX_KEY_CHARS:
        raise ValueError(f"{field} is longer than {MAX_KEY_CHARS} characters")
    if _CONTROL.search(value):
        raise ValueError(f"{field} contains control characters")
    return value


def _empty_to_none(value: object) -> object:
    return None if value == "" else value


def _aware_utc(value: datetime | None) -> datetime | None:
    return None if value is None else to_utc(value)


def _req_aware_utc(value: datetime) -> datetime:
    return to_utc(value)


def _str_tuple(value: object) -> object:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    return value


# Parsing is pydantic's own (ISO 8601 strings, "Z", epoch numbers); then naive -> UTC, aware -> UTC.
OptDatetime = Annotated[datetime | None, BeforeValidator(_empty_to_none), AfterValidator(_aware_utc)]
ReqDatetime = Annotated[datetime, AfterValidator(_req_aware_utc)]
# Scope keys: non-empty, at most 256 characters, no control characters (checked in pydantic-core).
Key = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=MAX_KEY_CHARS,
        pattern=r"^[^\x00-\x1f\x7f]*[^\s\x00-\x1f\x7f][^\x00-\x1f\x7f]*$",
    ),
]
StrTuple = Annotated[tuple[str, ...], BeforeValidator(_str_tuple)]
OptKey = Annotated[Key | None, BeforeValidator(_empty_to_none)]


def error_fields(exc: Exception) -> str:
    """The field names a pydantic ``ValidationError`` complains about (never the values)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        locs = sorted({".".join(str(p) for p in e.get("loc", ())) or "value" for e in errors()})
        return ", ".join(locs) or "input"
    return "input"
