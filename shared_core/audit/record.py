"""``AuditRecord``: what one gate run, write call or deletion decided, without any memory text (R9).

Every gate run produces one record: time, query hash (the text only when the config says so),
scope, accepted ids, rejected ids with reasons, the dry-run flag, the config hash and timing.
**No memory body or title ever goes into an audit record** (bodies can hold personal data).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AuditRecord", "AuditSink", "RejectedEntry", "count_reasons", "deletion_record", "query_hash"]


@dataclass(frozen=True, slots=True)
class RejectedEntry:
    """One rejected hit in an audit record: id and reasons only."""

    id: str
    reason: str
    reasons: tuple[str, ...]
    action: str | None = None  # write records: what the write gate did (quarantine, reject, merge)


class AuditRecord(BaseModel):
    """What one gate run (or write decision, or deletion) decided, without any memory text."""

    model_config = ConfigDict(frozen=True)

    event: str = "recall"
    at: str
    query_hash: str | None = None
    query: str | None = None
    scope: dict[str, str | None]
    accepted_ids: tuple[str, ...] = ()
    rejected: tuple[RejectedEntry, ...] = ()
    counts: dict[str, int] = Field(default_factory=dict)
    input_count: int = 0
    dry_run: bool = False
    config_hash: str
    elapsed_ms: float = 0.0
    extra: dict[str, Any] = Field(default_factory=dict)

    @property
    def rejected_count(self) -> int:
        """How many hits were rejected."""
        return len(self.rejected)

    def summary(self) -> dict[str, Any]:
        """The operator summary of R11: ``rejected_count`` and counts by reason."""
        return {"rejected_count": self.rejected_count, "reasons": dict(self.counts)}

    def _repr_html_(self) -> str:
        """Rich display in Jupyter (ids and reasons only, like the record itself)."""
        from ..display import audit_html

        return audit_html(self)

    def to_json(self) -> str:
        """One line of JSON; ids that are not valid Unicode (lone surrogates) are written escaped."""
        try:
            return self.model_dump_json(exclude_none=False)
        except ValueError:  # pydantic refuses lone surrogates (e.g. in an id or a scope id)
            return json.dumps(
                self.model_dump(mode="python"), ensure_ascii=True, default=str, separators=(",", ":")
            )


def deletion_record(
    *,
    at: str,
    source_record_id: str | None,
    ids: Sequence[str],
    counts: dict[str, int],
    config_hash: str = "",
) -> AuditRecord:
    """The audit record of a deletion (L2): which ids went, how many of each kind; no text."""
    return AuditRecord.model_construct(
        event="delete",
        at=at,
        query_hash=None,
        query=None,
        scope={},
        accepted_ids=(),
        rejected=(),
        counts=dict(counts),
        input_count=sum(counts.values()),
        dry_run=False,
        config_hash=config_hash,
        elapsed_ms=0.0,
        extra={"source_record_id": source_record_id, "ids": sorted(ids), "tombstoned": True},
    )


def count_reasons(reasons: Iterable[str]) -> dict[str, int]:
    """Counts by reason, sorted by reason name."""
    return dict(sorted(Counter(reasons).items()))


def query_hash(query: str | None) -> str | None:
    """sha256 (first 16 hex digits) of the query text, so equal queries can be grouped."""
    if query is None:
        return None
    return hashlib.sha256(query.encode("utf-8", "surrogatepass")).hexdigest()[:16]


AuditSink = Callable[[AuditRecord], None]
