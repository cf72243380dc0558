from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "deep", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CASES_DIR = Path(__file__).parent / "cases"
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_gate_cases() -> list[dict[str, Any]]:
    """The shared gate case table with base fields merged into every hit."""
    table = json.loads((CASES_DIR / "gate_cases.json").read_text(encoding="utf-8"))
    out = []
    for case in table["cases"]:
        hits = [{**table["base"], **h} for h in case["hits"]]
        out.append(
            {
                **case,
                "hits": hits,
                "scope": case.get("scope", table["scope"]),
                "now": case.get("now", table["now"]),
                "config": case.get("config", {}),
                "query": case.get("query"),
            }
        )
    return out


GATE_CASES = load_gate_cases()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"evaluation data not present at {SHARED_DATA} (only in the project's workspace)")
    return SHARED_DATA
