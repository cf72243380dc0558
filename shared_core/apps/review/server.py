"""Serving the review page: a socket on 127.0.0.1, uvicorn, and the ``recall-gate review`` command.

:class:`ReviewServer` binds the socket itself (so ``port=0`` picks a free port and the printed URL
is right), runs uvicorn in the calling thread (:meth:`ReviewServer.run`, the command) or in a
background thread (:meth:`ReviewServer.start`, tests and notebooks), and keeps uvicorn's access
log off: request lines carry the token on the first visit, and the server must never log it.

The store and its writer lock: the command opens ``MemoryStore(path)`` as the writer (approvals
write) and holds it while it serves; stopping the server (Ctrl-C, SIGTERM) closes the store and
releases the lock (uvicorn finishes the requests in flight first; after SIGTERM it re-raises the
signal, and the operating system drops the lock with the process). While it runs, another writer on the same folder (``recall-gate mcp``, ``add``,
``forget``) gets ``StoreLockedError``, as with any writer; started while one of those runs, the
review command says so and exits 1.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import socket
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ...errors import InputError, StoreLockedError
from .security import new_token

__all__ = ["ReviewServer", "run_review_command"]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (the page is then reachable from this machine only)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _allowed_hosts(host: str) -> list[str]:
    """``Host`` headers to accept: loopback names and ``host`` itself (any, when bound to 0.0.0.0 or ::)."""
    try:
        if ipaddress.ip_address(host).is_unspecified:
            return ["*"]
    except ValueError:
        pass
    return sorted({"127.0.0.1", "localhost", "::1", "[::1]", host, f"[{host}]" if ":" in host else host})


class ReviewServer:
    """The review page over an open store, on ``host:port``.

    Args:
        store: an open :class:`~shared_core.store.MemoryStore` (the caller closes it).
        host: address to bind (default loopback only).
        port: port to bind; ``0`` picks a free one.
        reviewer: default reviewer name in the forms.
        token: the access token (default: a fresh random one).

    Example:
        >>> with MemoryStore("./memory") as store:
        ...     server = ReviewServer(store, port=0)
        ...     url = server.start()   # background thread; server.stop() to end
    """

    def __init__(
        self,
        store: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 8765,
        reviewer: str = "operator",
        token: str | None = None,
    ) -> None:
        import uvicorn

        from .app import create_app

        self.token = token or new_token()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((host, port))
        except OSError as exc:
            self.socket.close()
            raise InputError(
                f"cannot listen on {host}:{port} ({exc.strerror or type(exc).__name__})"
            ) from None
        # listen now: the command prints the link before uvicorn starts, and a browser (or a test)
        # that connects in between waits in the backlog instead of being refused
        self.socket.listen(128)
        self.host = host
        self.port = int(self.socket.getsockname()[1])
        self.cookie_name = f"rg_review_{self.port}"
        self.app = create_app(
            store,
            token=self.token,
            reviewer=reviewer,
            allowed_hosts=_allowed_hosts(host),
            cookie_name=self.cookie_name,
        )
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,  # the first request line carries the token
            server_header=False,
            lifespan="off",
            proxy_headers=False,
        )
        self.server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://host:port`` (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The URL to open: the base URL with the token (set as a cookie on first visit)."""
        return f"{self.base_url}/?token={self.token}"

    def run(self) -> None:
        """Serve in this thread until Ctrl-C or SIGTERM (uvicorn handles both)."""
        self.server.run(sockets=[self.socket])

    def start(self, *, timeout: float = 10.0) -> str:
        """Serve in a background thread; returns :attr:`url` once the server accepts connections.

        Raises:
            InputError: if the server did not start within ``timeout`` seconds.
        """
        self._thread = threading.Thread(target=self.run, name="recall-gate-review", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            self.stop()
            raise InputError(f"the review server did not start within {timeout} s")
        return self.url

    def stop(self, *, timeout: float = 10.0) -> None:
        """Ask the server to finish (background mode) and wait for it."""
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with contextlib.suppress(OSError):
            self.socket.close()


def run_review_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate review --store DIR``: serve the review page until interrupted.

    Raises:
        InputError: if the store folder does not exist or the address cannot be bound.
        StoreLockedError: if another process holds the store's writer lock.
    """
    from ...config import load_config
    from ...store import MemoryStore

    path = Path(args.store)
    if not path.is_dir() or not (path / "chroma").is_dir():
        raise InputError(f"no memory store at {path} (create one with `recall-gate add --store {path} ...`)")
    book = load_config(args.config) if getattr(args, "config", None) else None
    try:
        store = MemoryStore(path, config=book)
    except StoreLockedError:
        raise StoreLockedError(
            f"the store at {path} is open for writing by another process (recall-gate mcp, add, forget, "
            "another review, or an application); stop it, then start the review page again"
        ) from None
    try:
        server = ReviewServer(store, host=args.host, port=args.port, reviewer=args.reviewer)
        print(f"recall-gate review: serving {path} on {server.base_url}", file=out)
        print(f"  open {server.url}", file=out)
        if not is_loopback(args.host):
            print(
                f"  warning: {args.host} is not a loopback address; other machines can reach this page over "
                "plain HTTP, and anyone holding the link can approve memories",
                file=out,
            )
        print(
            "  (the link is the key: keep it private; Ctrl-C stops the server and releases the store)",
            file=out,
        )
        out.flush()
        with contextlib.suppress(KeyboardInterrupt):  # uvicorn shuts down, then re-raises Ctrl-C
            server.run()
    finally:
        store.close()
    print("recall-gate review: stopped; the store's writer lock is released", file=out)
    return 0
