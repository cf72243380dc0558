"""Time handling: every datetime inside the core is timezone-aware UTC.

Policy for naive input (documented once, applied everywhere): a naive ``datetime`` or an ISO 8601
string without an offset is **interpreted as UTC**. A missing or unparsable timestamp is never
"fresh": records without ``updated_at`` are rejected as ``invalid`` by the recall gate.

The clock is injected: components take a ``Clock`` (any zero-argument callable returning an aware
datetime). :class:`shared_core.testing.FrozenClock` is the test double.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

__all__ = ["Clock", "from_epoch", "parse_datetime", "system_clock", "to_epoch", "to_utc"]

Clock = Callable[[], datetime]


def system_clock() -> datetime:
    """Return the current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def to_utc(value: datetime) -> datetime:
    """Return ``value`` in UTC; a naive datetime is taken to be UTC already."""
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def parse_datetime(value: object) -> datetime:
    """Parse an ISO 8601 string, a datetime, or epoch seconds into an aware UTC datetime.

    Raises:
        ValueError: if the value is empty, of another type, or not a valid timestamp.
    """
    if isinstance(value, datetime):
        return to_utc(value)
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    if isinstance(value, (int, float)):
        return from_epoch(float(value))
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("empty timestamp")
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        return to_utc(datetime.fromisoformat(text))
    raise ValueError(f"a {type(value).__name__} is not a timestamp")


def to_epoch(value: datetime) -> float:
    """Seconds since the epoch of an aware (or naive-as-UTC) datetime."""
    return to_utc(value).timestamp()


def from_epoch(seconds: float) -> datetime:
    """Aware UTC datetime from epoch seconds.

    Raises:
        ValueError: if ``seconds`` is not finite or out of range.
    """
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise ValueError("timestamp is not finite")
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError) as exc:
        raise ValueError("timestamp out of range") from exc
