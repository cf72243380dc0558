"""The MCP server (A4, R11): the SDK's own stdio client against ``recall-gate mcp``, and the tools in-process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client
from stores import make_store

from shared_core.apps.mcp_server import TOOL_NAMES, ToolFailure, call_tool

SCOPE = {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}
OTHER = {"user_id": "u2", "agent_id": "a1", "memory_space_id": "s1"}
SECRET = "sk-proj-Qw3rTy8uIoP1aSdFgHjKlZxCvBnM0987654321abcd"
TRUSTED = {"origin": "user_explicit", "cited": True, "tier": "confirmed"}


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert result.structured_content == data
    return data


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content) + json.dumps(
        result.structured_content or {}
    )


async def test_stdio_round_trip(tmp_path: Path) -> None:
    """Save, recall and preview over stdio: only accepted memories reach the model, secrets are never echoed."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "shared_core", "mcp", "--store", str(tmp_path / "store")],
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert sorted(t.name for t in listed.tools) == sorted(TOOL_NAMES)
        for tool in listed.tools:
            assert "scope" in tool.input_schema["required"]

        body = "The on-call rotation for the payments team changes every Monday at 09:00 JST."
        saved = _payload(
            await session.call_tool(
                "memory_save", {"scope": SCOPE, "title": "On-call rotation", "body": body, **TRUSTED}
            )
        )
        assert saved["action"] == "write" and saved["stored"] and saved["id"]
        draft = _payload(
            await session.call_tool(
                "memory_save",
                {
                    "scope": SCOPE,
                    "title": "On-call rotation idea",
                    "body": "Maybe the payments on-call rotation should change every Friday instead of Monday.",
                    "status": "draft",
                    **TRUSTED,
                },
            )
        )
        assert draft["action"] == "write"
        foreign = _payload(
            await session.call_tool(
                "memory_save",
                {
                    "scope": OTHER,
                    "title": "My on-call rotation",
                    "body": "My own payments on-call rotation changes every Monday at 07:00 JST.",
                    **TRUSTED,
                },
            )
        )
        assert foreign["action"] == "write"

        secret = await session.call_tool(
            "memory_save",
            {
                "scope": SCOPE,
                "title": "Deploy key",
                "body": f"The deploy key is {SECRET}, keep it handy.",
                **TRUSTED,
            },
        )
        decision = _payload(secret)
        assert decision["action"] == "reject" and "secret" in decision["reasons"]
        assert SECRET not in _text(secret)

        recall = await session.call_tool(
            "memory_recall", {"scope": SCOPE, "query": "When does the payments on-call rotation change?"}
        )
        data = _payload(recall)
        assert [m["id"] for m in data["accepted"]] == [saved["id"]]
        assert data["accepted"][0]["body"] == body
        assert set(data["accepted"][0]) == {"id", "title", "body", "updated_at", "provenance"}
        assert data["audit"]["reasons"].get("not_approved") == 1
        assert draft["id"] not in _text(recall) and foreign["id"] not in _text(recall)
        assert "Friday" not in _text(recall) and "07:00" not in _text(recall)

        preview = await session.call_tool(
            "memory_preview", {"scope": SCOPE, "query": "When does the payments on-call rotation change?"}
        )
        pdata = _payload(preview)
        assert pdata["dry_run"] is True
        assert pdata["accepted_ids"] == [saved["id"]]
        assert pdata["counts"].get("not_approved") == 1
        assert {"id": draft["id"], "reason": "not_approved"} in pdata["rejected"]
        assert "Friday" not in _text(preview) and body not in _text(preview)

        unscoped = await session.call_tool("memory_recall", {"query": "on-call rotation"})
        assert unscoped.is_error and "scope" in _text(unscoped)
        unscoped_save = await session.call_tool("memory_save", {"body": f"key {SECRET}"})
        assert unscoped_save.is_error and SECRET not in _text(unscoped_save)


def test_missing_or_incomplete_scope_is_refused() -> None:
    """A call without a complete scope raises ToolFailure naming fields, never searching unscoped."""
    store = make_store()
    with pytest.raises(ToolFailure, match="scope is required"):
        call_tool(store, "memory_recall", {"query": "anything"})
    with pytest.raises(ToolFailure, match="agent_id"):
        call_tool(
            store, "memory_preview", {"scope": {"user_id": "u1", "memory_space_id": "s1"}, "query": "x"}
        )
    with pytest.raises(ToolFailure, match="scope must be an object"):
        call_tool(store, "memory_save", {"scope": "u1", "body": "x"})


def test_invalid_arguments_name_fields_not_values() -> None:
    """Invalid arguments are refused with field names only; the rejected values are not quoted."""
    store = make_store()
    with pytest.raises(ToolFailure) as info:
        call_tool(store, "memory_save", {"scope": SCOPE, "body": SECRET, "status": f"approved {SECRET}"})
    assert "status" in str(info.value) and SECRET not in str(info.value)
    with pytest.raises(ToolFailure, match="unknown tool"):
        call_tool(store, "memory_delete_everything", {"scope": SCOPE})
    with pytest.raises(ToolFailure, match="k"):
        call_tool(store, "memory_recall", {"scope": SCOPE, "query": "x", "k": 0})


def test_tentative_memory_is_saved_but_not_recalled() -> None:
    """An agent's uncited guess is quarantined; a cited agent inference starts tentative and is not recalled (W7, seed 004)."""
    store = make_store()
    guess = call_tool(
        store, "memory_save", {"scope": SCOPE, "body": "Customers in Osaka prefer chat support."}
    )
    assert guess["action"] == "quarantine" and not guess["stored"]
    tentative = call_tool(
        store,
        "memory_save",
        {"scope": SCOPE, "body": "Customers in Kyoto prefer phone support.", "origin": "agent_inferred", "cited": True},
    )
    assert tentative["action"] == "write"
    recall = call_tool(
        store, "memory_recall", {"scope": SCOPE, "query": "Do customers in Kyoto prefer phone support?"}
    )
    assert recall["accepted"] == []
    assert recall["audit"]["reasons"].get("tier_excluded") == 1
