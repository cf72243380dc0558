"""The shared case table through the core gate (R1-R8)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import GATE_CASES
from invariants import assert_no_text, assert_partition, assert_scope_safe

from shared_core import GateConfig, RecallGate, Scope
from shared_core.timeutil import parse_datetime


def run_case(case: dict[str, Any]) -> Any:
    gate = RecallGate(GateConfig(**case["config"]))
    return gate.evaluate(
        case["hits"], scope=case["scope"], now=parse_datetime(case["now"]), query=case["query"]
    )


@pytest.mark.parametrize("case", GATE_CASES, ids=[c["name"] for c in GATE_CASES])
def test_case_table(case: dict[str, Any]) -> None:
    """Each case gives exactly the accepted ids in order and the primary reason per rejected id."""
    result = run_case(case)
    assert result.accepted_ids == case["accepted"]
    got = {
        r.id: r.reason.value
        for r in result.rejected
        if r.id not in case["accepted"] or r.reason.value == "invalid"
    }
    assert got == case["rejected"]
    assert_partition(result, len(case["hits"]))
    assert_scope_safe(result, Scope.model_validate(case["scope"]))
    assert_no_text(
        result.audit, [h.get("body", "") for h in case["hits"]] + [h.get("title", "") for h in case["hits"]]
    )
