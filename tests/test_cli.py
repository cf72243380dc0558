"""The ``recall-gate gate`` replay command and ``recall-gate demo``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared_core.apps.cli import example_hits_path, main

SCOPE = "user=u-aiko,agent=writer,space=brand,route=official"


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_gate_json_shape() -> None:
    """--json prints accepted ids in order, rejections with reasons, and the audit record."""
    code, out = run(
        "gate",
        "--hits",
        str(example_hits_path()),
        "--scope",
        SCOPE,
        "--now",
        "2026-07-13T10:00:00+09:00",
        "--json",
    )
    assert code == 0
    data = json.loads(out)
    assert data["accepted"] == ["policy-posting-v3", "legal-stopline"]
    reasons = {r["id"]: r["reason"] for r in data["rejected"]}
    assert reasons["policy-posting-v2"] == "superseded"
    assert reasons["other-user-note"] == "scope_mismatch"
    assert reasons["draft-campaign"] == "not_approved"
    assert reasons["old-workaround"] == "stale"
    assert reasons["vague-match"] == "low_score"
    assert set(data["audit"]) >= {
        "at",
        "scope",
        "accepted_ids",
        "rejected",
        "dry_run",
        "config_hash",
        "elapsed_ms",
    }
    assert "Official account posts" not in out.split('"audit"')[1]


def test_gate_table_output() -> None:
    """Without --json the command prints a readable table."""
    code, out = run(
        "gate", "--hits", str(example_hits_path()), "--scope", SCOPE, "--now", "2026-07-13T10:00:00+09:00"
    )
    assert code == 0
    assert "accepted (2)" in out and "superseded" in out


def test_unparsable_line_is_exit_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken line exits 2, names the line, prints no decisions and no memory text."""
    p = tmp_path / "hits.jsonl"
    good = example_hits_path().read_text(encoding="utf-8").splitlines()[0]
    p.write_text(good + '\n{"id": "x", "body": "secret-body-text" \n', encoding="utf-8")
    code, out = run("gate", "--hits", str(p), "--scope", SCOPE, "--json")
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert "line 2" in err and "secret-body-text" not in err


@pytest.mark.parametrize("scope", ["user=u,agent=a", "user=u,agent=a,space=", "who=u,agent=a,space=s", ""])
def test_bad_scope_is_exit_2(scope: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing or incomplete scope is refused (R1), never an unscoped search."""
    code, out = run("gate", "--hits", str(example_hits_path()), "--scope", scope)
    assert code == 2 and out == ""
    assert "scope" in capsys.readouterr().err


def test_missing_file_and_bad_config(tmp_path: Path) -> None:
    """A missing hits file or an invalid config file exit 2."""
    assert run("gate", "--hits", str(tmp_path / "no.jsonl"), "--scope", SCOPE)[0] == 2
    cfg = tmp_path / "c.toml"
    cfg.write_text("[gate]\nmin_score = 3\n", encoding="utf-8")
    assert (
        run("gate", "--hits", str(example_hits_path()), "--scope", SCOPE, "--config", cfg.as_posix())[0] == 2
    )


def test_config_changes_decisions(tmp_path: Path) -> None:
    """A per-space override from TOML is applied (allow_draft accepts the draft)."""
    cfg = tmp_path / "c.toml"
    cfg.write_text('[spaces."brand".gate]\nallow_draft = true\n', encoding="utf-8")
    code, out = run(
        "gate",
        "--hits",
        str(example_hits_path()),
        "--scope",
        SCOPE,
        "--config",
        str(cfg),
        "--now",
        "2026-07-13T10:00:00+09:00",
        "--json",
    )
    assert code == 0 and "draft-campaign" in json.loads(out)["accepted"]


def test_console_script_runs() -> None:
    """The installed entry point works as a subprocess."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "shared_core",
            "gate",
            "--hits",
            str(example_hits_path()),
            "--scope",
            SCOPE,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "accepted" in json.loads(proc.stdout)
