"""``recall-gate mcp --http --identities FILE``: the MCP tools over Streamable HTTP, one scope per bearer token.

Every HTTP request must carry ``Authorization: Bearer TOKEN`` for a token listed (by its hash) in
the identities file (:mod:`.mcp_identity`); the SDK's bearer middleware refuses any other request
with 401 before it reaches a tool. Each tool call is then served in the scope of *its own
request's* token, so a session opened with one token gives a request with another token nothing
of the first (the SDK also binds a session to the principal that opened it). Binds 127.0.0.1
by default, with the SDK's DNS-rebinding protection; put TLS in front of it (a reverse proxy)
before listening on another address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .mcp_identity import IdentityBook, ServerIdentity
from .mcp_server import ToolFailure, build_server

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken
    from starlette.applications import Starlette

    from ..store import MemoryStore

__all__ = ["BookVerifier", "http_app", "serve_http"]


class BookVerifier:
    """The SDK's ``TokenVerifier`` over an :class:`IdentityBook`: a known token's client id is its identity name."""

    def __init__(self, book: IdentityBook) -> None:
        self.book = book

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token of a known client, or ``None`` (the request is refused)."""
        from mcp.server.auth.provider import AccessToken

        found = self.book.resolve(token)
        if found is None:
            return None
        return AccessToken(token=token, client_id=found[0], scopes=[])


def _request_identity(book: IdentityBook) -> Any:
    def resolve(ctx: Any) -> ServerIdentity:
        user = getattr(getattr(ctx, "request", None), "user", None)
        access = getattr(user, "access_token", None)
        found = book.resolve(getattr(access, "token", None))
        if found is None:  # the middleware refuses these first; this is the second lock
            raise ToolFailure("not authenticated: no identity for this request")
        return found[1]

    return resolve


def http_app(
    store: MemoryStore, book: IdentityBook, *, host: str = "127.0.0.1", port: int = 8766
) -> Starlette:
    """The Starlette app serving the tools at ``/mcp``, each request in its bearer token's scope."""
    from mcp.server.auth.settings import AuthSettings

    server = build_server(store, _request_identity(book))
    url = f"http://{host}:{port}"
    return server.streamable_http_app(
        host=host,
        auth=AuthSettings(issuer_url=url, resource_server_url=None),  # type: ignore[arg-type]
        token_verifier=BookVerifier(book),
    )


def serve_http(store: MemoryStore, book: IdentityBook, *, host: str = "127.0.0.1", port: int = 8766) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    uvicorn.run(http_app(store, book, host=host, port=port), host=host, port=port, log_level="warning")
