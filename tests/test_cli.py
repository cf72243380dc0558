"""``recall-gate``: the ``gate`` replay command, version, help texts, closed pipes and config errors."""

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


# -- polish: version, help, closed pipes, config errors (issue 16 item 4, issue 13 "Costs and configs") --

SUBCOMMANDS = ("gate", "add", "query", "quarantine", "forget", "eval", "mcp", "demo", "review")
STORE_COMMANDS = ("add", "query", "quarantine", "forget", "eval", "mcp", "review")


def _help(*argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        run(*argv, "--help")
    assert info.value.code == 0
    return ""


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` prints the package version and exits 0."""
    from shared_core import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"recall-gate {__version__}"


@pytest.mark.parametrize("command", [None, *SUBCOMMANDS])
def test_help_is_plain_language(command: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """No help text shows an internal requirement code (W6, L2, E1, A4...)."""
    import re

    _help(*([command] if command else []))
    text = capsys.readouterr().out
    assert text.strip()
    assert re.findall(r"\b[A-Z]\d{1,2}\b", text) == []


@pytest.mark.parametrize("command", STORE_COMMANDS)
def test_store_option_has_help_everywhere(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Every command that takes ``--store`` explains it (and says whether it must exist)."""
    _help(command)
    text = capsys.readouterr().out
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("--store"))
    assert "store folder" in line


def test_add_help_describes_the_line_format(capsys: pytest.CaptureFixture[str]) -> None:
    """``add --help`` names the line format and every field of the record contract."""
    from shared_core.write.candidate import CANDIDATE_FIELDS

    _help("add")
    text = capsys.readouterr().out
    assert "One JSON object per line" in text and "MemoryCandidate" in text
    words = set(text.replace(",", " ").split())
    assert words >= CANDIDATE_FIELDS, sorted(CANDIDATE_FIELDS - words)


def _into_closed_pipe(*argv: str) -> tuple[int, str]:
    from test_cli_helpers import ROOT, cli_env

    proc = subprocess.Popen(
        [sys.executable, "-m", "shared_core", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=cli_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes
    err = proc.stderr.read().decode()
    return proc.wait(timeout=240), err


def test_gate_into_a_closed_pipe_is_quiet() -> None:
    """``recall-gate gate ... | head`` with the reader gone: exit 141, no traceback."""
    code, err = _into_closed_pipe("gate", "--hits", str(example_hits_path()), "--scope", SCOPE)
    assert code == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_eval_json_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """``recall-gate eval --json ... | head`` with the reader gone: exit 141, no traceback."""
    from test_cli_helpers import cli

    memories = tmp_path / "m.jsonl"
    memories.write_text(
        json.dumps(
            {
                "title": "Posting policy",
                "body": "Official posts go out at 10:00 JST.",
                "user_id": "u1",
                "agent_id": "a",
                "memory_space_id": "s",
                "origin": "user_explicit",
                "id": "policy",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    store = tmp_path / "store"
    assert cli("add", "--store", str(store), "--input", str(memories), "--no-progress").returncode == 0
    cases = tmp_path / "cases.jsonl"
    case = {
        "query": "When do official posts go out?",
        "scope": {"user_id": "u1", "agent_id": "a", "memory_space_id": "s"},
        "expected_memory_ids": ["policy"],
    }
    cases.write_text(json.dumps(case) + "\n", encoding="utf-8")
    code, err = _into_closed_pipe("eval", str(cases), "--store", str(store), "--json", "--no-progress")
    assert code == 141
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_config_with_a_scalar_space_table_is_a_clear_error(tmp_path: Path) -> None:
    """A TOML ``[spaces.x] gate = 5`` exits 2 with a message naming the table, never a traceback."""
    from test_cli_helpers import cli

    cfg = tmp_path / "c.toml"
    cfg.write_text("[spaces.x]\ngate = 5\n", encoding="utf-8")
    proc = cli("gate", "--hits", str(example_hits_path()), "--scope", SCOPE, "--config", str(cfg))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "spaces" in proc.stderr and "gate" in proc.stderr and "must be a table" in proc.stderr
    assert "Traceback" not in proc.stderr
