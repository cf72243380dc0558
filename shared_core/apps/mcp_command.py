"""``recall-gate mcp``: the command that serves :mod:`.mcp_server`'s tools over stdio or HTTP.

Who is served comes from the command line (``--user/--agent/--space[/--route]``, one client over
stdio) or from an identities file (``--identities``: client tokens to scopes, see
:mod:`.mcp_identity`); a server with neither refuses to start. ``--store DIR`` is created when
missing (a new agent starts with an empty memory; stderr says so), ``--chroma-host`` uses a
store on a Chroma server.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from ..errors import InputError, ScopeError
from ..model import Origin, Scope, coerce_scope
from .commands import add_store_arguments, open_store
from .mcp_identity import TOKEN_ENV, IdentityBook, ServerIdentity, new_token
from .mcp_server import serve_stdio

__all__ = ["add_mcp_arguments", "run_mcp_command"]


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``recall-gate mcp``."""
    add_store_arguments(parser, creates=True)
    who = parser.add_argument_group("whose memories (the scope every call is confined to)")
    who.add_argument("--user", help="the end user served")
    who.add_argument("--agent", help="the agent served")
    who.add_argument("--space", help="the memory space")
    who.add_argument("--route", help="optional channel or account (memories of other routes are never seen)")
    who.add_argument(
        "--identities",
        metavar="FILE",
        help=f"TOML file mapping client tokens to scopes (several clients; the stdio client passes its token in {TOKEN_ENV})",
    )
    trust = parser.add_argument_group("how far saves are trusted")
    trust.add_argument(
        "--origin",
        choices=[o.value for o in Origin],
        default=Origin.AGENT_INFERRED.value,
        metavar="ORIGIN",
        help=f"one of {', '.join(o.value for o in Origin)}: the most trusted origin a save gets (default: agent_inferred, so notes start tentative); "
        "a save may claim less, never more",
    )
    trust.add_argument(
        "--allow-shared", action="store_true", help="saves may be shared with the whole memory space"
    )
    trust.add_argument(
        "--review-saves",
        action="store_true",
        help="hold every agent note for review instead of writing it tentative",
    )
    http = parser.add_argument_group("transport (default: stdio)")
    http.add_argument(
        "--http", action="store_true", help="serve MCP over HTTP instead (needs --identities; bearer tokens)"
    )
    http.add_argument("--host", default="127.0.0.1", help="--http: address to listen on (default: 127.0.0.1)")
    http.add_argument("--port", type=int, default=8766, help="--http: port (default: 8766)")
    parser.add_argument(
        "--new-token",
        action="store_true",
        help="print a fresh client token and its token_sha256 line, then exit",
    )


def _pinned_identity(args: argparse.Namespace) -> ServerIdentity:
    missing = [f"--{n}" for n in ("user", "agent", "space") if not getattr(args, n)]
    if missing:
        raise InputError(
            "the MCP server serves one fixed scope: give --user, --agent and --space "
            f"(missing: {', '.join(missing)}), or --identities FILE"
        )
    try:
        scope: Scope = coerce_scope(
            {
                "user_id": args.user,
                "agent_id": args.agent,
                "memory_space_id": args.space,
                "route_id": args.route,
            }
        )
    except ScopeError as exc:
        raise InputError(str(exc)) from None
    return ServerIdentity(
        scope=scope,
        origin=Origin(args.origin),
        allow_shared=args.allow_shared,
        review_saves=args.review_saves,
    )


def _resolve_identity(args: argparse.Namespace) -> tuple[ServerIdentity | None, IdentityBook | None]:
    if args.identities:
        flags = [f"--{n}" for n in ("user", "agent", "space", "route") if getattr(args, n)]
        if flags:
            raise InputError(f"give --identities or {'/'.join(flags)}, not both")
        book = IdentityBook.load(args.identities)
        if args.http:
            return None, book
        found = book.resolve(os.environ.get(TOKEN_ENV))
        if found is None:
            raise InputError(f"no identity in {args.identities} matches the token in {TOKEN_ENV}")
        return found[1], book
    if args.http:
        raise InputError("--http serves several clients: give --identities FILE (bearer tokens to scopes)")
    return _pinned_identity(args), None


def run_mcp_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate mcp``: serve over stdio (or HTTP); returns the exit status.

    Nothing is printed on stdout in stdio mode (it carries the protocol); diagnostics go to stderr.
    """
    if args.new_token:
        token, digest = new_token()
        print(f"token (give it to the client, e.g. in {TOKEN_ENV}): {token}", file=out)
        print(f'line for the identities file: token_sha256 = "{digest}"', file=out)
        return 0
    identity, book = _resolve_identity(args)
    creating = bool(args.store) and not Path(args.store).exists()
    with open_store(args, mode="create", command="mcp") as store:
        where = args.store or f"{args.chroma_host}:{args.chroma_port}"
        if creating:
            print(f"recall-gate mcp: created a new store at {where}", file=sys.stderr)
        if book is not None and args.http:
            from .mcp_http import serve_http

            print(
                f"recall-gate mcp: serving {len(book.names)} identit(ies) from {where} "
                f"on http://{args.host}:{args.port}/mcp",
                file=sys.stderr,
            )
            serve_http(store, book, host=args.host, port=args.port)
            return 0
        import anyio

        if identity is None:  # pragma: no cover - _resolve_identity returns one without --http
            raise InputError("no identity to serve")
        print(
            f"recall-gate mcp: serving {identity.describe()} from {where}; saves trusted at most as "
            f"{identity.origin.value}",
            file=sys.stderr,
        )
        anyio.run(serve_stdio, store, identity)
    return 0
