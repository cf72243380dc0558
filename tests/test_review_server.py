"""The review command and the page's building blocks without a browser (W6, L1, R9, R10).

The command runs in a subprocess as an operator would start it; the HTTP checks use httpx
against a real server; the view functions get the store's real return values.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core import RecallGate, Scope
from shared_core.apps.review import add_review_parser, run_review_command
from shared_core.apps.review.app import _what_if_changes, scope_label
from shared_core.apps.review.security import SessionBook, same_token
from shared_core.apps.review.server import ReviewServer, _allowed_hosts, is_loopback
from shared_core.apps.review.views import AuditFilter, audit_rows, history_rows, queue_rows
from shared_core.audit import JsonlSink
from shared_core.errors import ConfigError, InputError, StoreLockedError
from shared_core.store import MemoryStore
from shared_core.testing import FrozenClock, HashEmbedding
from shared_core.timeutil import parse_datetime

ALICE = {"user_id": "alice", "agent_id": "helper", "memory_space_id": "team"}
TRUSTED = {"origin": "user_explicit", "cited": True, "tier": "confirmed"}


@contextmanager
def signed_in(server: ReviewServer) -> Iterator[httpx.Client]:
    """An httpx client that exchanged the printed link's token for a session cookie."""
    with httpx.Client(base_url=server.base_url, follow_redirects=True, timeout=10) as client:
        response = client.get(server.url)
        assert response.status_code == 200 and str(response.url) == server.base_url + "/"
        yield client


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="recall-gate")
    add_review_parser(p.add_subparsers(dest="command", required=True))
    return p


# -- the command ---------------------------------------------------------------------------------


def test_parser_defaults_to_loopback() -> None:
    """`review --store DIR` listens on 127.0.0.1:8765 and runs run_review_command."""
    args = parser().parse_args(["review", "--store", "somewhere"])
    assert (args.host, args.port, args.func) == ("127.0.0.1", 8765, run_review_command)
    assert args.reviewer


def test_missing_store_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    """A store folder that does not exist (or is not a store) is an InputError; nothing is created."""
    for target in (tmp_path / "nope", tmp_path):
        args = parser().parse_args(["review", "--store", str(target), "--port", "0"])
        with pytest.raises(InputError, match="no memory store at"):
            run_review_command(args, io.StringIO())
    assert not (tmp_path / "nope").exists() and list(tmp_path.iterdir()) == []


def test_locked_store_names_the_other_writers(tmp_path: Path) -> None:
    """Started while another writer holds the store, the command says who might hold it."""
    with MemoryStore(tmp_path, embedding=HashEmbedding()):
        args = parser().parse_args(["review", "--store", str(tmp_path), "--port", "0"])
        with pytest.raises(StoreLockedError, match="recall-gate mcp"):
            run_review_command(args, io.StringIO())


def test_command_serves_until_interrupted_then_releases_the_lock(tmp_path: Path) -> None:
    """The command prints a token link, refuses requests without it, holds the writer lock, and frees it on Ctrl-C."""
    with MemoryStore(tmp_path, embedding=HashEmbedding()) as store:
        (held,) = store.add(
            [{"title": "Rumour", "body": "Deploys stop.", "origin": "external_unverified", **ALICE}]
        )
    code = textwrap.dedent(
        """
        import argparse, sys
        from shared_core.apps.review import add_review_parser
        p = argparse.ArgumentParser()
        add_review_parser(p.add_subparsers(dest="command"))
        a = p.parse_args(sys.argv[1:])
        sys.exit(a.func(a, sys.stdout))
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "review", "--store", str(tmp_path), "--port", "0", "--reviewer", "Ops"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]
        found = re.search(r"open (http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))", "".join(lines))
        assert found, lines
        url, port, token = found.group(1), found.group(2), found.group(3)
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(base + "/").status_code == 403
        with httpx.Client(follow_redirects=True) as client:
            page = client.get(url)
            assert (
                page.status_code == 200
                and f'data-qid="{held.id}"' in page.text
                and 'value="Ops"' in page.text
            )
            assert client.get(base + "/audit").status_code == 200
        with pytest.raises(StoreLockedError):
            MemoryStore(tmp_path, embedding=HashEmbedding(), lock_timeout=0.2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "writer lock is released" in out
    assert token not in err  # no access log, no token in any log line
    MemoryStore(tmp_path, embedding=HashEmbedding(), lock_timeout=0.2).close()


# -- HTTP details --------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path: Path) -> Any:
    store = MemoryStore(tmp_path, embedding=HashEmbedding())
    store.add(
        [
            {"title": "Deploy day", "body": "We deploy on Tuesdays.", **TRUSTED, **ALICE},
            {
                "title": "Rumour",
                "body": "Someone said deploys stop.",
                "origin": "external_unverified",
                **ALICE,
            },
        ]
    )
    server = ReviewServer(store, port=0)
    server.start()
    yield store, server
    server.stop()
    store.close()


def test_broken_audit_chain_is_reported_with_its_line(small: Any) -> None:
    """After a line of the audit file is edited, the audit page names the first broken line."""
    store, server = small
    store.preview("deploy", scope=ALICE)
    lines = store.audit_path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert len(lines) >= 2
    lines[1] = lines[1].replace('"dry_run":true', '"dry_run":false')
    store.audit_path.write_text("".join(lines), encoding="utf-8")
    with signed_in(server) as client:
        page = client.get("/audit").text
    assert "BROKEN at line 2" in page and "verified" not in page


def test_every_response_carries_the_security_headers(small: Any) -> None:
    """Pages allow no script, no framing and no caching; the refusal page too."""
    _, server = small
    refused = httpx.get(server.base_url + "/")
    with signed_in(server) as client:
        page = client.get("/")
        css = client.get("/static/review.css")
    for response in (refused, page, css):
        csp = response.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
        assert response.headers["cache-control"] == "no-store"
        assert response.headers["x-content-type-options"] == "nosniff"
    assert css.headers["content-type"].startswith("text/css") and ".badge.b-low_score" in css.text


def test_other_host_headers_are_refused(small: Any) -> None:
    """A request naming another host (DNS rebinding) is refused before it reaches the page."""
    _, server = small
    response = httpx.get(server.url, headers={"Host": "attacker.example"})
    assert response.status_code == 400 and "rg_review" not in response.headers.get("set-cookie", "")


def test_token_is_refused_on_post_and_unknown_actions_are_404(small: Any) -> None:
    """The token starts a session only on GET; only approve and reject exist as actions."""
    store, server = small
    qid = store.quarantine_list()[0]["id"]
    assert httpx.post(f"{server.url.replace('/?', f'/quarantine/{qid}/approve?')}").status_code == 403
    with signed_in(server) as client:
        csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text)
        assert csrf
        gone = client.post(f"/quarantine/{qid}/delete", data={"csrf": csrf.group(1), "reviewer": "ann"})
        assert gone.status_code == 404
    assert [i["id"] for i in store.quarantine_list()] == [qid]


def test_dry_run_with_bad_scope_or_setting_says_which_field(small: Any) -> None:
    """A dry-run with an incomplete scope or a bad what-if value is a 400 naming the field."""
    _, server = small
    with signed_in(server) as client:
        no_user = client.get("/recall", params={"q": "deploy", "agent": "helper", "space": "team"})
        bad = client.get("/recall", params={"q": "deploy", **_scope_params(), "w_min_score": "high"})
        out_of_range = client.get("/recall", params={"q": "deploy", **_scope_params(), "w_min_score": "7"})
    assert no_user.status_code == 400 and "user_id" in no_user.text
    assert bad.status_code == 400 and "what-if min_score: not a number" in bad.text
    assert out_of_range.status_code == 400 and "min_score" in out_of_range.text


def _scope_params() -> dict[str, str]:
    return {"user": "alice", "agent": "helper", "space": "team"}


# -- views ---------------------------------------------------------------------------------------


def test_queue_rows_use_the_extended_keys_when_the_store_returns_them(small: Any) -> None:
    """Queue rows carry text, owner and findings when present, and stay usable without them."""
    store, _ = small
    now = store.clock()
    (item,) = store.quarantine_list()
    (plain,) = queue_rows([item], now=now)
    assert plain.id == item["id"] and plain.reasons == ("untrusted",) and plain.memory_space_id == "team"
    assert plain.expires_at is not None and not plain.expired
    extended = {
        **item,
        "title": "Rumour",
        "body": "Someone said deploys stop.",
        "user_id": "alice",
        "agent_id": "helper",
        "route_id": None,
        "findings": ["instruction_override_en"],
        "origin": "external_unverified",
    }
    (rich,) = queue_rows([extended], now=now)
    assert rich.has_text and (rich.user_id, rich.agent_id, rich.findings) == (
        "alice",
        "helper",
        ("instruction_override_en",),
    )
    (late,) = queue_rows([item], now=parse_datetime(item["expires_at"]))
    assert late.expired


def test_history_rows_mark_only_the_latest_as_current(small: Any) -> None:
    """In a chain of three, only the last version is current, and the requested one is marked."""
    store, _ = small
    first = store.add([{"title": "Limit", "body": "The limit is 3.", **TRUSTED, **ALICE}])[0].id
    second = store.correct(first, memory_space_id="team", body="The limit is 4.").id
    third = store.correct(second, memory_space_id="team", body="The limit is 5.").id
    rows = history_rows(store.history(second, memory_space_id="team"), requested=second)
    assert [(r.record.id, r.current, r.requested) for r in rows] == [
        (first, False, False),
        (second, False, True),
        (third, True, False),
    ]


def test_audit_rows_filter_and_run_newest_first(small: Any) -> None:
    """Audit rows come newest first and every filter narrows them (event, scope, reason, time, dry-run)."""
    store, _ = small
    store.preview("deploy", scope=ALICE)
    store.query("deploy", scope={**ALICE, "user_id": "bob"})
    records = JsonlSink(store.audit_path).read()
    rows, total = audit_rows(records, AuditFilter(), limit=100)
    assert total == len(records) and [r.number for r in rows] == list(range(len(records), 0, -1))
    assert [r.record.event for r in rows] == ["recall", "recall", "write"]
    assert audit_rows(records, AuditFilter(user_id="bob"), limit=100)[1] == 1
    assert audit_rows(records, AuditFilter(include_dry_run=False, event="recall"), limit=100)[1] == 1
    assert audit_rows(records, AuditFilter(reason="untrusted"), limit=100)[1] == 1  # the write that held one
    assert audit_rows(records, AuditFilter(since=parse_datetime("2999-01-01")), limit=100)[1] == 0
    assert audit_rows(records, AuditFilter(until=parse_datetime("2000-01-01")), limit=100)[1] == 0
    limited, total = audit_rows(records, AuditFilter(), limit=1)
    assert len(limited) == 1 and total == len(records) and limited[0].number == len(records)
    assert all(json.loads(r.extra_json) == r.record.extra for r in rows)


def test_what_if_changes_parse_the_form() -> None:
    """Empty fields change nothing, `off` disables the lexical channel, bad numbers are ConfigErrors."""
    cfg = RecallGate().config_for(Scope(user_id="u", agent_id="a", memory_space_id="s"))  # thresholds resolved, as the page has them
    assert _what_if_changes({}, cfg) == {}
    assert _what_if_changes({"w_min_score": str(cfg.min_score)}, cfg) == {}  # same value: no change
    changes = _what_if_changes(
        {
            "w_min_score": "0.5",
            "w_min_lexical_score": "off",
            "w_max_hits": "3",
            "w_allow_draft": "yes",
            "w_tiers": "with_tentative",
        },
        cfg,
    )
    assert changes["min_score"] == (cfg.min_score, 0.5) and changes["min_lexical_score"] == (0.75, None)
    assert changes["max_hits"] == (8, 3) and changes["allow_draft"] == (False, True)
    assert changes["tier_priority"][1][-1].value == "tentative"
    for field, value in (("w_max_age_days", "forever"), ("w_max_hits", "2.5")):
        with pytest.raises(ConfigError, match=field[2:]):
            _what_if_changes({field: value}, cfg)
    assert (
        scope_label({"user_id": "u", "agent_id": "a", "memory_space_id": "s", "route_id": None})
        == "u / a / s"
    )
    assert scope_label({}) == "—"


@given(st.text(max_size=60))
def test_any_supplied_token_is_compared_safely(given_token: str) -> None:
    """Any text (non-ASCII, lone surrogates, empty) compares without raising and never matches a different token."""
    expected = "A" * 43
    assert same_token(given_token, expected) is (given_token == expected)


def test_session_book_keeps_at_most_its_limit() -> None:
    """Old sessions are dropped beyond the limit; known ones are found, unknown ones are not."""
    book = SessionBook(limit=3)
    sessions = [book.new() for _ in range(5)]
    assert len(book) == 3
    assert book.get(sessions[0].id) is None and book.get(sessions[-1].id) is sessions[-1]
    assert book.get(None) is None and book.get("") is None and book.get("x") is None
    assert len({s.csrf for s in sessions}) == 5 and all(s.csrf != s.id for s in sessions)


def test_server_start_and_stop_leave_no_listener(tmp_path: Path) -> None:
    """After stop() the port no longer answers (the background thread has ended)."""
    with MemoryStore(tmp_path, embedding=HashEmbedding()) as store:
        server = ReviewServer(store, port=0)
        server.start()
        assert httpx.get(server.base_url + "/").status_code == 403
        server.stop()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                httpx.get(server.base_url + "/", timeout=0.5)
            except httpx.TransportError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the server still answers after stop()")


def test_expired_candidate_cannot_be_approved(tmp_path: Path) -> None:
    """A candidate past its quarantine TTL is marked expired, its Approve is disabled, and a forced approve fails (W6)."""
    clock = FrozenClock("2026-07-01T09:00:00Z")
    with MemoryStore(tmp_path, embedding=HashEmbedding(), clock=clock) as store:
        (held,) = store.add(
            [{"title": "Rumour", "body": "Deploys stop.", "origin": "external_unverified", **ALICE}]
        )
        clock.advance(days=31)
        server = ReviewServer(store, port=0)
        server.start()
        try:
            with signed_in(server) as client:
                page = client.get("/").text
                card = page[page.index(f'data-qid="{held.id}"') :]
                assert 'badge b-expired">expired' in card and 'class="approve" disabled' in card
                csrf = re.search(r'name="csrf" value="([^"]+)"', page)
                assert csrf
                forced = client.post(
                    f"/quarantine/{held.id}/approve", data={"csrf": csrf.group(1), "reviewer": "ann"}
                )
            assert forced.status_code == 200 and "expired" in forced.text
            assert store.quarantine_list() == []
            assert store.query("Deploys stop.", scope=ALICE).accepted == ()
        finally:
            server.stop()


def test_loopback_detection_and_host_allow_list() -> None:
    """Only loopback binds are private; a wildcard bind accepts any Host, a named one its own name."""
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")
    assert _allowed_hosts("0.0.0.0") == ["*"] and _allowed_hosts("::") == ["*"]
    assert "192.168.1.5" in _allowed_hosts("192.168.1.5") and "localhost" in _allowed_hosts("127.0.0.1")


def test_a_request_sent_as_soon_as_the_link_is_known_waits_for_the_server(tmp_path: Path) -> None:
    """The socket listens before the link is printed: a request made before uvicorn runs is answered.

    The command prints the link and then starts uvicorn; a browser or script that connected in
    between was refused (seen once in CI: ``Connection refused`` in the test above).
    """
    import socket
    import threading

    with MemoryStore(tmp_path, embedding=HashEmbedding()) as store:
        server = ReviewServer(store, port=0)
        early = socket.create_connection(("127.0.0.1", server.port), timeout=5)  # before the server runs
        try:
            early.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nConnection: close\r\n\r\n".encode())
            later = threading.Timer(0.3, server.start)
            later.start()
            early.settimeout(10)
            assert early.recv(64).startswith(b"HTTP/1.1 403")
            later.join()
        finally:
            early.close()
            server.stop()
