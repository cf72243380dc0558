"""Server mode: the same store code against a real ``chroma run`` server over HTTP (H3)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from stores import NOW, SCOPE, mem

from shared_core import GateConfig, StoreUnavailableError
from shared_core.store import MemoryStore
from shared_core.testing import FrozenClock, HashEmbedding

GATE = GateConfig(min_score=0.2, min_lexical_score=0.6)

pytestmark = pytest.mark.server


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chroma_cli() -> str:
    exe = Path(sys.executable).with_name("chroma")
    return str(exe) if exe.exists() else (shutil.which("chroma") or "chroma")


def start_server(path: Path, port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [_chroma_cli(), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError as exc:
            if proc.poll() is not None:
                raise RuntimeError("chroma run exited early") from exc
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("chroma run did not start within 60 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, int]]:
    path = tmp_path_factory.mktemp("chroma-server")
    port = _free_port()
    proc = start_server(path, port)
    yield path, port
    stop_server(proc)


def http_store(port: int, prefix: str) -> MemoryStore:
    return MemoryStore.http(
        "127.0.0.1",
        port,
        embedding=HashEmbedding(),
        collection_prefix=prefix,
        config=GATE,
        clock=FrozenClock(NOW),
    )


def test_store_over_http_writes_queries_and_scopes(server: tuple[Path, int]) -> None:
    """Writes and gated scoped queries work the same through HttpClient."""
    _, port = server
    store = http_store(port, "srv1")
    store.add(
        [mem("E-4012 gateway timeout."), mem("E-4012 gateway timeout.", user_id="u2"), mem("Herons fish.")]
    )
    result = store.query("E-4012", scope=SCOPE)
    assert [h.record.user_id for h in result.accepted] == ["u1"]
    assert store.all_ids("s1") == store.indexed_ids("s1")


def test_two_client_processes_share_one_store(server: tuple[Path, int]) -> None:
    """A second process writes through the server; the first one sees it at its next query (no refresh())."""
    _, port = server
    store = http_store(port, "srv2")
    store.add([mem("First process memory about kites.")])
    assert len(store.search("kites herons", scope=SCOPE)[0]) == 1  # the partition is held in process
    code = (
        f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_server import http_store\nfrom stores import mem\n"
        f"s = http_store({port}, 'srv2')\n"
        "print(s.add([mem('Second process memory about kites and herons.')])[0].action.value)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "write", proc.stderr[-2000:]
    bodies = {h.record.body for h in store.search("kites herons", scope=SCOPE)[0]}
    assert "Second process memory about kites and herons." in bodies


def test_unreachable_server_is_a_typed_retryable_error() -> None:
    """No server listening: a typed, retryable StoreUnavailableError, quickly."""
    t = time.monotonic()
    with pytest.raises(StoreUnavailableError) as info:
        MemoryStore.http("127.0.0.1", _free_port(), embedding=HashEmbedding())
    assert info.value.retryable and time.monotonic() - t < 30
