"""Named invariants, reused by example tests, property tests and adapter tests (STYLE 6)."""

from __future__ import annotations

import math
from collections.abc import Iterable

from shared_core import GateResult, Scope
from shared_core.audit import AuditRecord
from shared_core.rules import in_scope


def assert_partition(result: GateResult, input_count: int) -> None:
    """Accepted + rejected = the input, and no hit is both (R8)."""
    assert len(result.accepted) + len(result.rejected) == input_count
    assert result.audit.input_count == input_count
    accepted = [id(h) for h in result.accepted]
    assert len(set(accepted)) == len(accepted)
    rejected_hits = [id(r.hit) for r in result.rejected if r.hit is not None]
    assert not set(accepted) & set(rejected_hits)


def assert_scope_safe(result: GateResult, scope: Scope) -> None:
    """Every accepted hit is visible to the scope (R1, R2)."""
    for hit in result.accepted:
        assert in_scope(hit, scope), hit.record.id


def assert_finite_scores(result: GateResult) -> None:
    """Accepted hits carry only finite scores."""
    for hit in result.accepted:
        for value in (hit.score, hit.lexical_score):
            assert value is None or math.isfinite(value)


def assert_no_text(record: AuditRecord | str, texts: Iterable[str]) -> None:
    """No memory body or title appears in an audit record or an error message (R9)."""
    dumped = record if isinstance(record, str) else record.to_json()
    for text in texts:
        if text and len(text) >= 6:
            assert text not in dumped, "memory text leaked"
