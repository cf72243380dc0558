"""Every fenced python block of README.md runs as pasted (issue 16: snippets that work as pasted).

Each block is executed alone, in a fresh namespace, in a temporary working folder, offline. The
sections covered are listed in :data:`SECTIONS` (the lead extends it for the other sections).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SECTIONS = ("Quickstart: a gated memory store", "LangChain", "LlamaIndex", "Gate hits you already have")
_FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[tuple[str, int, str]]:
    text = README.read_text(encoding="utf-8")
    out = []
    for section in SECTIONS:
        start = text.index(f"\n## {section}\n")
        end = text.find("\n## ", start + 1)
        body = text[start : end if end != -1 else len(text)]
        for i, match in enumerate(_FENCE.finditer(body)):
            line = text[: start + match.start(1)].count("\n") + 1
            out.append((f"{section}-{i}", line, match.group(1)))
    return out


BLOCKS = _blocks()


def test_sections_have_blocks() -> None:
    """Each covered section holds at least one python block (a rename would otherwise test nothing)."""
    assert {name.rsplit("-", 1)[0] for name, _, _ in BLOCKS} == set(SECTIONS)


@pytest.mark.parametrize(("name", "line", "code"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_block_runs_as_pasted(name: str, line: int, code: str, tmp_path: Path) -> None:
    """The block runs alone, offline, and its own assertions hold."""
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__readme__"})
    finally:
        os.chdir(cwd)


def test_the_configuration_block_loads(tmp_path: Path) -> None:
    """The README's TOML configuration loads, and a store reading it keeps the embedding's threshold (issue 11)."""
    from shared_core import MemoryStore, Scope, load_config
    from shared_core.testing import HashEmbedding

    text = README.read_text(encoding="utf-8")
    start = text.index("\n## Configuration")
    block = text[text.index("```toml\n", start) + 8 : text.index("```", text.index("```toml\n", start) + 8)]
    path = tmp_path / "recall-gate.toml"
    path.write_text(block, encoding="utf-8")
    book = load_config(path)
    assert book.write_for("hr").pii == "reject" and book.for_space("support-bot").max_age_days == 30
    store = MemoryStore.in_memory(config=book)  # the shipped MiniLM: its calibration fills min_score
    scope = Scope(user_id="u", agent_id="a", memory_space_id="support-bot")
    assert store.gate.config_for(scope).min_score == 0.54
    hashed = MemoryStore.in_memory(config=book, embedding=HashEmbedding())  # no calibration: the seeds' 0.78
    assert hashed.gate.config_for(scope).min_score == 0.78
