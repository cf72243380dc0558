"""Audit records and sinks (R9)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from shared_core import AuditRecord, GateConfig, JsonlSink, LoggingSink, RecallGate, Scope, capture_audit
from shared_core.testing import FrozenClock, make_hit

SCOPE = Scope(user_id="u1", agent_id="a1", memory_space_id="s1")


def test_jsonl_sink_appends_one_line_per_run(tmp_path: Path) -> None:
    """Each run appends one JSON line with ids and reasons only."""
    sink = JsonlSink(tmp_path / "audit" / "gate.jsonl")
    gate = RecallGate(sinks=[sink], clock=FrozenClock("2026-07-13T00:00:00Z"))
    gate.evaluate(
        [make_hit("a", body="private body alpha"), make_hit("b", score=0.1)], scope=SCOPE, query="q1"
    )
    gate.preview([make_hit("c")], scope=SCOPE, query="q2")
    lines = sink.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert first["accepted_ids"] == ["a"] and first["rejected"][0]["reason"] == "low_score"
    assert first["dry_run"] is False and json.loads(lines[1])["dry_run"] is True
    assert "private body alpha" not in lines[0] and "q1" not in lines[0]
    assert [r.accepted_ids for r in sink.read()] == [("a",), ("c",)]


def test_query_text_only_when_configured() -> None:
    """The query text goes into the audit only when audit_query_text is set; the hash always."""
    off = RecallGate().evaluate([], scope=SCOPE, query="where is the plan")
    on = RecallGate(GateConfig(audit_query_text=True)).evaluate([], scope=SCOPE, query="where is the plan")
    assert off.audit.query is None and off.audit.query_hash == on.audit.query_hash
    assert on.audit.query == "where is the plan"


def test_logging_sink_and_capture(caplog: pytest.LogCaptureFixture) -> None:
    """LoggingSink logs the record; capture_audit sees it too."""
    caplog.set_level(logging.INFO, logger="recall_gate.audit")
    with capture_audit() as records:
        RecallGate(sinks=[LoggingSink()]).evaluate([make_hit("a")], scope=SCOPE)
    assert len(records) == 1 and isinstance(records[0], AuditRecord)
    assert "recall-gate recall" in caplog.text


def test_failing_sink_does_not_break_recall(caplog: pytest.LogCaptureFixture) -> None:
    """A sink that raises is logged and the gate still returns its result."""

    def broken(record: AuditRecord) -> None:
        raise OSError("disk full")

    result = RecallGate(sinks=[broken], clock=FrozenClock("2026-07-02T00:00:00Z")).evaluate(
        [make_hit("a")], scope=SCOPE
    )
    assert result.accepted_ids == ["a"]
    assert "audit sink" in caplog.text


def test_tool_result_separates_model_and_operator_views() -> None:
    """R11: accepted memories (with provenance) for the model, counts by reason for operators."""
    gate = RecallGate(clock=FrozenClock("2026-07-02T00:00:00Z"))
    res = gate.evaluate([make_hit("a"), make_hit("b", status="draft"), make_hit("c", score=0.0)], scope=SCOPE)
    tool = res.tool_result()
    assert [m["id"] for m in tool["accepted"]] == ["a"]
    assert set(tool["accepted"][0]) == {"id", "title", "body", "updated_at", "provenance"}
    assert tool["audit"] == {"rejected_count": 2, "reasons": {"low_score": 1, "not_approved": 1}}


def test_what_if_compare() -> None:
    """compare() shows newly accepted and newly rejected ids for a config change (R10)."""
    gate = RecallGate(clock=FrozenClock("2026-07-02T00:00:00Z"))
    hits = [make_hit("close", score=0.8), make_hit("draft", status="draft"), make_hit("far", score=0.9)]
    diff = gate.compare(hits, scope=SCOPE, new_config=GateConfig(min_score=0.85, allow_draft=True))
    assert diff.newly_accepted == ("draft",) and diff.newly_rejected == ("close",)


def test_capture_audit_is_scoped_to_its_context() -> None:
    """Two captures in two threads each see only their own records; work in a copied context is captured (issue 12)."""
    import contextvars
    import threading

    from shared_core import capture_audit

    gate = RecallGate(clock=FrozenClock("2026-07-02T00:00:00Z"))
    seen: dict[str, list[str]] = {}
    start = threading.Barrier(2)

    def run(name: str, hit_id: str) -> None:
        with capture_audit() as records:
            start.wait()
            gate.evaluate([make_hit(hit_id)], scope=SCOPE)
            start.wait()
        seen[name] = [i for r in records for i in r.accepted_ids]

    threads = [threading.Thread(target=run, args=(n, i)) for n, i in (("one", "a"), ("two", "b"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"one": ["a"], "two": ["b"]}
    with capture_audit() as outer:
        ctx = contextvars.copy_context()
        worker = threading.Thread(target=ctx.run, args=(gate.evaluate, [make_hit("c")]), kwargs={"scope": SCOPE})
        worker.start()
        worker.join()
        bare = threading.Thread(target=gate.evaluate, args=([make_hit("d")],), kwargs={"scope": SCOPE})
        bare.start()
        bare.join()
    assert [i for r in outer for i in r.accepted_ids] == ["c"]
