"""Who may use the review page: an unguessable token, a session cookie, CSRF tokens, safe headers.

The page can approve memories into long-term storage, so it is an authority path (issue 13):

* **Token.** The server makes a random token at start (:func:`new_token`, 256 bits) and prints
  one URL with it (``/?token=...``). A request with the right token starts a session: the
  response sets a cookie ``rg_review_<port>`` (``HttpOnly``, ``SameSite=Strict``, ``Path=/``) holding a
  *separate* random session id, and redirects to the same page without the token, so the token
  does not linger in the address bar, the history or a ``Referer``. Every other request needs
  that cookie; anything else (no token, a wrong token, an unknown cookie) gets ``403`` and a page
  that says nothing about the store.
* **CSRF.** Each session has its own random CSRF token, rendered into every form as a hidden
  field and compared in constant time on every ``POST`` (:func:`check_csrf`); a ``POST`` whose
  ``Origin`` header names another origin is refused too. ``SameSite=Strict`` already keeps the
  cookie off cross-site requests; the token is the second lock.
* **Headers.** Every response carries a Content-Security-Policy that allows only this origin's
  stylesheet (no scripts at all, no frames, forms only to this origin), a ``same-origin``
  referrer policy (``no-referrer`` would make browsers send ``Origin: null`` on the forms'
  ``POST``), ``nosniff`` and ``Cache-Control: no-store`` (pages show memory text).

Hand-written rather than a session library: Starlette's ``SessionMiddleware`` signs a cookie
that carries the session data itself (and needs ``itsdangerous``); here the session is two
random strings kept in the server's memory, which is all a single-operator local page needs.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import URL, Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "COOKIE_NAME",
    "SECURITY_HEADERS",
    "Session",
    "SessionBook",
    "TokenGate",
    "check_csrf",
    "new_token",
    "same_token",
]

COOKIE_NAME = "rg_review"
MAX_SESSIONS = 64
SECURITY_HEADERS: dict[str, str] = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "referrer-policy": "same-origin",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
_FORBIDDEN_PAGE = (
    "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>403 Forbidden</title></head>"
    "<body><h1>403 Forbidden</h1><p>Open the review page through the link that "
    "<code>recall-gate review</code> printed when it started.</p></body></html>"
)


def new_token() -> str:
    """A fresh unguessable token (256 random bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a supplied token with the expected one (any text is safe)."""
    if not given:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


@dataclass
class Session:
    """One browser's session: its id (the cookie), its CSRF token, and messages shown once."""

    id: str
    csrf: str
    flash: list[dict[str, str | None]] = field(default_factory=list)

    def say(self, kind: str, text: str, href: str | None = None) -> None:
        """Queue a message for the next page (``kind``: ``ok`` or ``error``; ``href``: a link)."""
        self.flash.append({"kind": kind, "text": text, "href": href})


class SessionBook:
    """The sessions of one server, in memory; the oldest is dropped beyond ``MAX_SESSIONS``.

    Args:
        limit: most sessions kept.
        cookie_name: the session cookie's name. Cookies are not kept apart by port, so two
            review servers on one host use different names (the server appends its port).
    """

    def __init__(self, *, limit: int = MAX_SESSIONS, cookie_name: str = COOKIE_NAME) -> None:
        self.cookie_name = cookie_name
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def new(self) -> Session:
        """Start a session."""
        session = Session(id=new_token(), csrf=new_token())
        with self._lock:
            self._sessions[session.id] = session
            while len(self._sessions) > self._limit:
                self._sessions.popitem(last=False)
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The session of a cookie value, or ``None`` (constant-time per known session)."""
        if not session_id:
            return None
        with self._lock:
            candidates = list(self._sessions.values())
        found = None
        for session in candidates:
            if same_token(session_id, session.id):
                found = session
        return found

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)


def check_csrf(session: Session, given: object) -> bool:
    """True when a form's ``csrf`` field is this session's CSRF token."""
    return isinstance(given, str) and same_token(given, session.csrf)


def _origin_ok(headers: Headers) -> bool:
    """A ``POST`` may come only from this origin (no ``Origin`` header: a non-browser client)."""
    origin = headers.get("origin")
    if origin is None:
        return True
    host = headers.get("host", "")
    parts = urlsplit(origin)
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.lower()


def forbidden() -> Response:
    """The ``403`` response for a request without a valid token or session."""
    return HTMLResponse(_FORBIDDEN_PAGE, status_code=403)


class TokenGate:
    """ASGI middleware: token-to-cookie exchange, session check, origin check, security headers.

    Args:
        app: the application behind the gate.
        token: the server's token.
        sessions: the server's sessions (endpoints look the session up again by cookie).
    """

    def __init__(self, app: ASGIApp, *, token: str, sessions: SessionBook) -> None:
        self.app = app
        self.token = token
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let a request through only with a valid session (or the token, exchanged for one)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.decode("latin-1") not in SECURITY_HEADERS
                ]
                headers.extend(
                    (k.encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()
                )
                message = {**message, "headers": headers}
            await send(message)

        request = Request(scope)
        supplied = request.query_params.get("token")
        if supplied is not None:
            if request.method != "GET" or not same_token(supplied, self.token):
                await forbidden()(scope, receive, send_with_headers)
                return
            session = self.sessions.new()
            response = RedirectResponse(_without_token(request.url), status_code=303)
            response.set_cookie(
                self.sessions.cookie_name, session.id, httponly=True, samesite="strict", path="/"
            )
            await response(scope, receive, send_with_headers)
            return
        if self.sessions.get(request.cookies.get(self.sessions.cookie_name)) is None:
            await forbidden()(scope, receive, send_with_headers)
            return
        if request.method not in ("GET", "HEAD") and not _origin_ok(request.headers):
            await forbidden()(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


def _without_token(url: URL) -> str:
    """The request's path and query, minus the ``token`` parameter (a relative URL)."""
    kept = [(k, v) for k, v in parse_qsl(url.query, keep_blank_values=True) if k != "token"]
    return url.path + (f"?{urlencode(kept)}" if kept else "")
