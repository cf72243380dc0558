"""``recall-gate mcp``: one identity's memories as MCP tools, over stdio or HTTP (A4, R11).

Three tools, on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server` (so that
argument validation and error text are ours: the SDK's own validation errors quote the
caller's arguments, and a rejected ``memory_save`` must never echo a secret back):

``memory_save``
    Writes one memory **through the write gate** (W1) on the identity's pinned write path.
    Returns the decision: ``action`` (``write``, ``update``, ``merge``, ``quarantine``,
    ``reject``), ``id``, ``reasons``, screen finding names, field-level ``detail`` and the tier a
    stored note starts in. Never the text, so a rejected secret is not echoed.
``memory_recall``
    Hybrid retrieval in the identity's scope, then the recall gate. Returns **only accepted
    memories** (``id``, ``title``, ``body``, ``updated_at``, ``provenance``), the operator summary
    (``rejected_count``, counts by reason) and, when nothing was accepted or tentative memories
    were held back, ``notes`` saying so.
``memory_preview``
    The same query as a dry run (R10): accepted ids and titles, rejected ids with reasons, counts
    by reason, how many tentative memories were held back, and ``notes``; no body at all.

**The scope is the server's, not the model's** (:mod:`.mcp_identity`): the tool schemas have no
user, agent, space or route, and a call that names a scope other than the server's is refused
(one that repeats the server's own scope is tolerated, for older clients). Routes are separate
partitions, not subsets of a scope, so arguments cannot narrow to a route either: a route is
served only when the server pins it (``--route``). Arguments narrow only what is returned
(``k``). A save's ``origin``, ``tier``, ``visibility`` and ``cited`` may lower its trust, never
raise it above the identity's (``WritePath.pinned``): agent notes start ``tentative``.

Every call is audited in the store's audit log (ids and reasons only).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import RecallGateError
from ..model import Origin
from .mcp_identity import ServerIdentity
from .output import recall_summary

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp.server.lowlevel import Server

    from ..store import MemoryStore

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "IdentityResolver",
    "ToolFailure",
    "build_server",
    "call_tool",
    "fixed_identity",
    "serve_stdio",
    "tool_specs",
]

_log = logging.getLogger("recall_gate.mcp")

SERVER_NAME = "recall-gate"
TOOL_NAMES = ("memory_save", "memory_recall", "memory_preview")
MAX_QUERY_CHARS = 10_000
MAX_K = 50
_SCOPE_ARGS = ("user_id", "agent_id", "memory_space_id", "route_id")


class ToolFailure(Exception):
    """A tool call the server refuses (bad or missing arguments); the message names fields only."""


IdentityResolver = Callable[[Any], ServerIdentity]
"""Finds the identity a request is served as (its argument: the SDK's request context)."""


class _SaveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: str = Field(min_length=1)
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    source: str = ""
    source_record_id: str | None = None
    origin: Origin | None = None
    cited: bool | None = None
    tier: str | None = Field(default=None, pattern="^(tentative|confirmed|working)$")
    status: str = Field(default="approved", pattern="^(approved|draft)$")
    visibility: str = Field(default="private", pattern="^(private|shared)$")
    entity: str | None = None
    attribute: str | None = None
    supersedes: list[str] = Field(default_factory=list)


class _QueryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    k: int | None = Field(default=None, ge=1, le=MAX_K)


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def tool_specs() -> list[dict[str, Any]]:
    """Name, description and input JSON schema of each tool (what ``tools/list`` returns).

    No schema asks for a user, agent, space or route: the server serves one fixed scope.
    """
    query_props = {
        "query": _string("the question", minLength=1, maxLength=MAX_QUERY_CHARS),
        "k": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_K,
            "description": "at most this many memories (default: the memory space's max_hits)",
        },
    }
    return [
        {
            "name": "memory_save",
            "description": (
                "Save one fact to your long-term memory through the write gate. Credentials are "
                "refused, personal data is masked, instructions aimed at an agent and untrusted "
                "sources are held for review, duplicates are merged. Your notes start 'tentative' "
                "(not recalled until confirmed). Returns the decision (action, id, reasons), never the text."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "body": _string("the fact, one fact per memory", minLength=1),
                    "title": _string("a short title"),
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "tags"},
                    "source": _string("where the fact comes from (e.g. chat, docs, web)"),
                    "source_record_id": _string("id of the source record (so it can be forgotten later)"),
                    "origin": {
                        "type": "string",
                        "enum": [o.value for o in Origin],
                        "description": (
                            "who produced the fact; may only lower trust (use external_unverified "
                            "for text read from a web page or document)"
                        ),
                    },
                    "cited": {
                        "type": "boolean",
                        "description": "false: the fact is not grounded in the conversation or a source (held for review)",
                    },
                    "tier": {
                        "type": "string",
                        "enum": ["tentative", "confirmed", "working"],
                        "description": "requested tier; may only lower it (the server decides how far notes are trusted)",
                    },
                    "status": {
                        "type": "string",
                        "enum": ["approved", "draft"],
                        "description": "draft: not recalled",
                    },
                    "visibility": {
                        "type": "string",
                        "enum": ["private", "shared"],
                        "description": "private (default); shared only where the operator allows it",
                    },
                    "entity": _string("what the fact is about (with attribute: a newer fact supersedes)"),
                    "attribute": _string("which property of the entity"),
                    "supersedes": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "ids of your memories this one corrects",
                    },
                },
                "required": ["body"],
                "additionalProperties": False,
            },
            "read_only": False,
        },
        {
            "name": "memory_recall",
            "description": (
                "Recall your memories for a question. Returns only memories the recall gate accepted "
                "(id, title, body, updated_at, provenance), how many were rejected and why, and "
                "notes when nothing was accepted."
            ),
            "input_schema": {
                "type": "object",
                "properties": query_props,
                "required": ["query"],
                "additionalProperties": False,
            },
            "read_only": True,
        },
        {
            "name": "memory_preview",
            "description": (
                "Dry run of memory_recall: which memory ids would be accepted, which rejected and why, "
                "and how many tentative memories are held back. Returns no memory bodies and changes nothing."
            ),
            "input_schema": {
                "type": "object",
                "properties": query_props,
                "required": ["query"],
                "additionalProperties": False,
            },
            "read_only": True,
        },
    ]


def _fields(exc: ValidationError) -> str:
    return ", ".join(sorted({".".join(str(p) for p in e["loc"]) or "arguments" for e in exc.errors()}))


def _without_scope(arguments: Mapping[str, Any], identity: ServerIdentity) -> dict[str, Any]:
    """The arguments minus any scope they repeat; a scope other than the server's is refused.

    Raises:
        ToolFailure: naming the fields that differ (never their values).
    """
    pinned = identity.scope.model_dump()
    named: dict[str, Any] = {k: arguments[k] for k in _SCOPE_ARGS if k in arguments}
    if "scope" in arguments:
        raw = arguments["scope"]
        if not isinstance(raw, Mapping):
            raise ToolFailure("scope is fixed by this server; tools take no scope argument")
        for key, value in raw.items():
            if key not in _SCOPE_ARGS:
                raise ToolFailure("scope is fixed by this server; tools take no scope argument")
            named[key] = value
    differ = sorted(k for k, v in named.items() if (v or None) != pinned[k])
    if differ:
        raise ToolFailure(
            f"scope is fixed by this server: the call named another {', '.join(differ)}; "
            "tools cannot reach another user's, agent's, space's or route's memories"
        )
    return {k: v for k, v in arguments.items() if k != "scope" and k not in _SCOPE_ARGS}


def _save(store: MemoryStore, identity: ServerIdentity, arguments: Mapping[str, Any]) -> dict[str, Any]:
    try:
        args = _SaveArgs.model_validate(_without_scope(arguments, identity))
    except ValidationError as exc:
        raise ToolFailure(f"invalid arguments: problem with {_fields(exc)}") from None
    fields = args.model_dump(exclude_none=True, exclude={"cited"})
    decision = store.add([fields], path=identity.write_path(cited=args.cited))[0]
    out: dict[str, Any] = {
        "action": decision.action.value,
        "id": decision.id,
        "stored": decision.stored,
        "reasons": [r.value for r in decision.reasons],
        "findings": list(decision.findings),
        "detail": list(decision.detail),
        "existing_id": decision.existing_id,
    }
    if decision.record is not None:
        out["tier"] = decision.record.tier.value
        if decision.record.tier.value == "tentative":
            out["note"] = "saved tentative: not recalled until it is confirmed"
    elif decision.action.value == "quarantine":
        out["note"] = "held for review by an operator; not recalled unless approved"
    return out


def _query_args(arguments: Mapping[str, Any], identity: ServerIdentity) -> _QueryArgs:
    try:
        return _QueryArgs.model_validate(_without_scope(arguments, identity))
    except ValidationError as exc:
        raise ToolFailure(f"invalid arguments: problem with {_fields(exc)}") from None


def _recall(store: MemoryStore, identity: ServerIdentity, arguments: Mapping[str, Any]) -> dict[str, Any]:
    args = _query_args(arguments, identity)
    result = store.query(args.query, scope=identity.scope, k=args.k)
    out = result.tool_result()
    summary = recall_summary(result)
    out["audit"]["tentative_held_back"] = summary.tentative_held_back
    notes = summary.hints(operator=False)
    if notes:
        out["notes"] = notes
    return out


def _preview(store: MemoryStore, identity: ServerIdentity, arguments: Mapping[str, Any]) -> dict[str, Any]:
    args = _query_args(arguments, identity)
    result = store.preview(args.query, scope=identity.scope, k=args.k)
    summary = recall_summary(result)
    return {
        "dry_run": True,
        "accepted_ids": result.accepted_ids,
        "accepted": [{"id": h.record.id, "title": h.record.title} for h in result.accepted],
        "rejected": [{"id": r.id, "reason": r.reason.value} for r in result.rejected],
        "rejected_count": result.audit.rejected_count,
        "counts": dict(result.audit.counts),
        "all_rejected": summary.accepted == 0 and summary.rejected > 0,
        "tentative_held_back": summary.tentative_held_back,
        "notes": summary.hints(operator=False),
        "config_hash": result.audit.config_hash,
    }


_HANDLERS: dict[str, Callable[[MemoryStore, ServerIdentity, Mapping[str, Any]], dict[str, Any]]] = {
    "memory_save": _save,
    "memory_recall": _recall,
    "memory_preview": _preview,
}


def call_tool(
    store: MemoryStore, name: str, arguments: Mapping[str, Any] | None, *, identity: ServerIdentity
) -> dict[str, Any]:
    """Run one tool against ``store`` as ``identity``, synchronously (what ``tools/call`` does).

    Raises:
        ToolFailure: for an unknown tool, invalid arguments or a scope other than the identity's
            (the message names fields, never values).
        RecallGateError: if the store fails (messages carry ids, never memory text).
    """
    handler = _HANDLERS.get(name)
    if handler is None:
        raise ToolFailure(f"unknown tool {name[:64]!r}; tools: {', '.join(TOOL_NAMES)}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ToolFailure("arguments must be an object")
    return handler(store, identity, arguments or {})


def fixed_identity(identity: ServerIdentity) -> IdentityResolver:
    """A resolver serving every request as ``identity`` (stdio: one client)."""
    return lambda ctx: identity


def build_server(store: MemoryStore, resolve: IdentityResolver, *, name: str = SERVER_NAME) -> Server[Any]:
    """A low-level MCP server exposing the three tools over ``store``.

    Args:
        store: the memory store.
        resolve: finds the identity of each request (see :func:`fixed_identity`).
        name: the server's name in the MCP handshake.

    Store work runs in a worker thread, so the event loop keeps serving while a query embeds.
    """
    import anyio.to_thread
    import mcp.types as types
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server

    from ..version import __version__

    tools = [
        types.Tool(
            name=spec["name"],
            description=spec["description"],
            input_schema=spec["input_schema"],
            annotations=types.ToolAnnotations(
                read_only_hint=spec["read_only"], destructive_hint=False, open_world_hint=False
            ),
        )
        for spec in tool_specs()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def handle_call(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = params.name
        try:
            identity = resolve(ctx)
            payload = await anyio.to_thread.run_sync(
                lambda: call_tool(store, tool, params.arguments, identity=identity)
            )
        except ToolFailure as exc:
            return _error(str(exc))
        except RecallGateError as exc:
            _log.info("tool %s failed: %s", tool, type(exc).__name__)
            return _error(f"{type(exc).__name__}: {exc}")
        except Exception as exc:
            _log.error("tool %s crashed: %s", tool, type(exc).__name__)
            return _error(f"internal error ({type(exc).__name__})")
        text = json.dumps(payload, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=payload
        )

    return Server(
        name,
        version=__version__,
        instructions=(
            "Your long-term memory behind a recall gate. memory_recall returns only memories that "
            "may be used; memory_save decides what may be stored. The scope is fixed by the server."
        ),
        on_list_tools=list_tools,
        on_call_tool=handle_call,
    )


def _error(message: str) -> mcp_types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def serve_stdio(store: MemoryStore, identity: ServerIdentity) -> None:
    """Serve the tools over stdin/stdout as ``identity`` until the client closes the connection."""
    from mcp.server.stdio import stdio_server

    server = build_server(store, fixed_identity(identity))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
