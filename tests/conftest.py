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

MAX_WORKERS = 8
"""``-n auto`` (pyproject's addopts) starts one worker per core, at most this many: each holds the
models and stores of its test files (~1 GB at the peak) and some start a Chroma server."""


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto``: the cores this process may run on, at most :data:`MAX_WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(MAX_WORKERS, cores))


def pytest_configure(config: pytest.Config) -> None:
    """One BLAS thread per test worker.

    With pytest-xdist (``-n auto --dist loadfile``: one test file per worker at a time), there is
    one worker per core, and numpy's OpenBLAS would start a thread per core in each of them; the
    workers' threads then spin against each other (the semantic screen's tests, pure numpy, ran
    three times slower). Workers inherit the controller's environment, so the limit is set here,
    before they start, and never overrides one the caller set. ``-n 0`` runs everything in one
    process with the libraries' defaults.
    """
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") == "no":
        return
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")

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
