"""``recall-gate demo`` (issue 16 item 4) and the display-width columns it is printed with."""

from __future__ import annotations

import io
import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_cli_helpers import cli

from shared_core.apps.demo import QUESTIONS, demo_memories, run_demo
from shared_core.apps.output import cell_width, fit, shown

SECRET = "sk-proj-Qw3rTy8uIoP1aSdFgHjKlZxCvBnM0987654321abcd"


@pytest.fixture(scope="module")
def demo_output() -> str:
    """The demo's output, run as a user runs it (a subprocess, offline)."""
    proc = cli("demo", env=None)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _table_rows(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"^\s+(\d+\.|-)\s+(mem|q)_", line)]


def test_rejected_lines_show_ids_with_titles_and_the_write_list_titles_with_ids(demo_output: str) -> None:
    """Every table row carries both the id and the title, so a reader can tell which memory got which decision."""
    titles = {m["title"] for m in demo_memories()} | {"Database choice (correction)"}
    rows = _table_rows(demo_output)
    assert rows
    for row in rows:
        assert re.search(r"(mem|q)_[0-9a-f]{24}", row)
        assert any(t in row for t in titles), row
    writes = [
        ln for ln in demo_output.splitlines() if re.match(r"^  (write|update|merge|quarantine|reject)\s", ln)
    ]
    assert len(writes) == len(demo_memories()) + 1  # each memory, then the correction
    for line in writes:
        assert any(t in line for t in titles), line
        assert re.search(r"(mem|q)_[0-9a-f]{24}", line) or line.split()[0] == "reject"
    assert SECRET not in demo_output


def test_columns_align_by_display_width_with_japanese_titles(demo_output: str) -> None:
    """The reason column starts at the same display cell on every rejected row, Japanese titles included."""
    rejected = [ln for ln in _table_rows(demo_output) if ln.lstrip().startswith("-")]
    assert any(any(unicodedata.east_asian_width(c) == "W" for c in ln) for ln in rejected)
    reasons = (
        "superseded",
        "low_score",
        "not_approved",
        "stale",
        "tier_excluded",
        "scope_mismatch",
        "over_budget",
    )
    starts = set()
    for line in rejected:
        cut = min(i for r in reasons if (i := line.find(f"  {r}")) >= 0)
        starts.add(cell_width(line[:cut]))
    assert len(starts) == 1, starts
    writes = [ln for ln in demo_output.splitlines() if re.match(r"^  (write|update|quarantine|reject)\s", ln)]
    ends = {
        cell_width(ln[: ln.index("  reasons:" if "reasons:" in ln else "  supersedes:")]) for ln in writes
    }
    assert len(ends) == 1, ends


def test_each_query_says_how_many_memories_were_out_of_scope(demo_output: str) -> None:
    """A line per query counts the space's memories excluded before search (other users, other routes)."""
    lines = [ln for ln in demo_output.splitlines() if "out of scope:" in ln]
    assert len(lines) == len(QUESTIONS) == demo_output.count("\nQ: ")
    counts = [int(re.search(r"out of scope: (\d+) of (\d+)", ln).group(1)) for ln in lines]  # type: ignore[union-attr]
    assert all(c >= 1 for c in counts)  # Ben's memory and the personal route are never searched for Aiko
    # Aiko's first question: Ben's private memory is not even a candidate.
    assert "Ben's posting time" not in demo_output.split("\nQ: ")[1]


def test_the_demo_audit_log_is_deleted_unless_kept(demo_output: str) -> None:
    """The audit path is printed and said to be deleted; ``--keep`` keeps it (run in process here)."""
    match = re.search(r"audit log: (\S+audit\.jsonl) \((\d+) records", demo_output)
    assert match and int(match.group(2)) > 0 and "hash chain verified" in demo_output
    assert not Path(match.group(1)).exists()
    assert "--keep" in demo_output
    out = io.StringIO()
    assert run_demo(out, keep=True) == 0
    kept = re.search(r"audit log: (\S+audit\.jsonl)", out.getvalue())
    assert kept and Path(kept.group(1)).is_file()
    folder = Path(kept.group(1)).parents[1]
    assert f"kept {folder}" in out.getvalue()
    import shutil

    shutil.rmtree(folder)


def test_user_stated_demo_memories_pass_no_tier() -> None:
    """The demo relies on the defaults: no memory names a tier, and user-stated ones are recalled (first answers)."""
    assert all("tier" not in m for m in demo_memories())


def test_the_tentative_agent_note_is_held_back_with_a_hint(demo_output: str) -> None:
    """The agent's tentative note is rejected ``tier_excluded`` and the output says tentative memories were held back."""
    block = next(b for b in demo_output.split("\nQ: ") if b.startswith("Does Aiko prefer"))
    assert "Posting days (agent note)" in block and "tier_excluded" in block
    assert "hint: 1 tentative memory held back" in block


@given(st.text(max_size=40), st.integers(min_value=1, max_value=40))
def test_fit_is_exactly_the_requested_width(text: str, cells: int) -> None:
    """``fit`` pads or cuts any text to exactly the requested number of display cells."""
    assert cell_width(fit(text, cells)) == cells


def test_cell_width_counts_wide_characters_twice() -> None:
    """Japanese and Korean characters take two cells, combining marks none."""
    assert cell_width("投稿ルール") == 10 and cell_width("회의") == 4
    assert cell_width("e\u0301") == 1 and cell_width("abc") == 3
    assert fit("投稿ルール（旧方針）", 7) == "投稿ル…"


def test_shown_escapes_terminal_controls() -> None:
    """Escape sequences, carriage returns and bidi overrides in memory text are shown, not interpreted."""
    assert shown("a\x1b[2Jb\rc\u202ed") == "a\\x1b[2Jb\\x0dc\\u202ed"
