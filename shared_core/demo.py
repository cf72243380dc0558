"""``recall-gate demo``: the gate on an example batch of exported hits (offline, no arguments)."""

from __future__ import annotations

from typing import TextIO

from .cli import example_hits_path, print_result, read_hits_jsonl
from .gate import RecallGate
from .models import Scope
from .timeutil import parse_datetime


def run_demo(out: TextIO, *, keep: bool = False) -> int:
    """Run the demo and print what was accepted and rejected, with reasons."""
    hits = read_hits_jsonl(example_hits_path())
    scope = Scope(user_id="u-aiko", agent_id="writer", memory_space_id="brand", route_id="official")
    now = parse_datetime("2026-07-13T10:00:00+09:00")
    result = RecallGate().evaluate(hits, scope=scope, query="when do official posts go out?", now=now)
    print_result(result, out, title=f"query: 'when do official posts go out?'  scope: {scope.model_dump()}")
    return 0
