"""Run ``python -m shared_core`` as a real subprocess from this worktree (the tests of the command line)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout first on the path, offline, no telemetry."""
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HF_HUB_OFFLINE": "1",
        "ANONYMIZED_TELEMETRY": "False",
        **extra,
    }


def cli(
    *argv: str, timeout: float = 240, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``recall-gate ARGV`` as a subprocess; returns the completed process (text stdout and stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "shared_core", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env or cli_env(),
        **kwargs,
    )
