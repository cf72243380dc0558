"""``recall-gate mcp`` over HTTP with bearer tokens, and over a store on a Chroma server (issues 13 and 16).

Real subprocesses: the MCP server (uvicorn) and ``chroma run``; the SDK's own Streamable HTTP
and stdio clients.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from test_cli_helpers import ROOT, cli, cli_env

from shared_core.apps.mcp_identity import token_hash

ROTATION = "The payments on-call rotation changes every Monday at 09:00 JST."
ROTATION_Q = "When does the payments on-call rotation change?"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(proc: subprocess.Popen[bytes], port: int, what: str) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError as exc:
            if proc.poll() is not None:
                raise RuntimeError(f"{what} exited early") from exc
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"{what} did not start within 120 s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """``recall-gate mcp --http`` with two identities (alice: u1, user_explicit; bob: u2)."""
    folder = tmp_path_factory.mktemp("mcp-http")
    ids = folder / "ids.toml"
    ids.write_text(
        f'[identities.alice]\ntoken_sha256 = "{token_hash("tok-alice")}"\nuser = "u1"\nagent = "a1"\n'
        f'space = "s1"\norigin = "user_explicit"\n\n'
        f'[identities.bob]\ntoken_sha256 = "{token_hash("tok-bob")}"\nuser = "u2"\nagent = "a1"\nspace = "s1"\n',
        encoding="utf-8",
    )
    port = _free_port()
    store = folder / "store"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "shared_core",
            "mcp",
            "--http",
            "--port",
            str(port),
            "--store",
            str(store),
            "--identities",
            str(ids),
        ],
        cwd=ROOT,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _wait_for_port(proc, port, "recall-gate mcp --http")
    yield f"http://127.0.0.1:{port}/mcp", store
    _stop(proc)


async def _as(url: str, token: str | None, work: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        return await work(s)


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data: dict[str, Any] = json.loads(result.content[0].text)
    return data


async def test_each_bearer_token_is_served_in_its_own_scope(http_server: tuple[str, Path]) -> None:
    """Alice's saves are recalled for alice, never for bob; a scope argument cannot switch identity."""
    url, _ = http_server

    async def save(s: ClientSession) -> dict[str, Any]:
        return _payload(await s.call_tool("memory_save", {"title": "On-call rotation", "body": ROTATION}))

    async def recall(s: ClientSession) -> dict[str, Any]:
        return _payload(await s.call_tool("memory_recall", {"query": ROTATION_Q}))

    async def recall_as_u1(s: ClientSession) -> Any:
        return await s.call_tool(
            "memory_recall",
            {"query": ROTATION_Q, "scope": {"user_id": "u1", "agent_id": "a1", "memory_space_id": "s1"}},
        )

    saved = await _as(url, "tok-alice", save)
    assert saved["stored"] and saved["tier"] == "confirmed"
    assert [m["id"] for m in (await _as(url, "tok-alice", recall))["accepted"]] == [saved["id"]]
    bob = await _as(url, "tok-bob", recall)
    assert bob["accepted"] == [] and saved["id"] not in json.dumps(bob)
    forged = await _as(url, "tok-bob", recall_as_u1)
    assert forged.is_error and ROTATION not in json.dumps(forged.model_dump(mode="json"))


async def test_requests_without_a_known_token_are_refused(http_server: tuple[str, Path]) -> None:
    """No token or an unknown token gets 401 before any tool runs."""
    url, _ = http_server
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with create_mcp_http_client() as http:
        assert (await http.post(url, json=body, headers=headers)).status_code == 401
        bad = {**headers, "Authorization": "Bearer tok-eve"}
        assert (await http.post(url, json=body, headers=bad)).status_code == 401


def _chroma_cli() -> str:
    exe = Path(sys.executable).with_name("chroma")
    return str(exe) if exe.exists() else (shutil.which("chroma") or "chroma")


@pytest.mark.server
async def test_mcp_and_cli_on_a_chroma_server(tmp_path: Path) -> None:
    """``recall-gate mcp --chroma-host/--chroma-port`` writes to a Chroma server; ``recall-gate query`` reads it there."""
    port = _free_port()
    chroma = subprocess.Popen(
        [
            _chroma_cli(),
            "run",
            "--path",
            str(tmp_path / "chroma"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        _wait_for_port(chroma, port, "chroma run")
        where = ["--chroma-host", "127.0.0.1", "--chroma-port", str(port)]
        params = StdioServerParameters(
            command=sys.executable,
            args=[
                "-m",
                "shared_core",
                "mcp",
                *where,
                "--user",
                "u1",
                "--agent",
                "a1",
                "--space",
                "s1",
                "--origin",
                "user_explicit",
            ],
            cwd=str(ROOT),
            env=cli_env(),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            saved = _payload(
                await session.call_tool("memory_save", {"title": "On-call rotation", "body": ROTATION})
            )
            assert saved["stored"]
            # The server store is shared: the CLI reads it while the MCP server runs.
            proc = cli("query", *where, "--scope", "user=u1,agent=a1,space=s1", "--json", ROTATION_Q)
            assert proc.returncode == 0, proc.stderr
            assert json.loads(proc.stdout)["accepted"] == [saved["id"]]
        assert not (tmp_path / "store").exists()
        both = cli(
            "query", *where, "--store", str(tmp_path / "x"), "--scope", "user=u1,agent=a1,space=s1", "q"
        )
        assert both.returncode == 2 and "not both" in both.stderr
    finally:
        _stop(chroma)
