"""``recall-gate mcp``: the memory store as MCP tools over stdio (A4, R11).

Three tools, built on the official ``mcp`` SDK's low-level :class:`mcp.server.lowlevel.Server`
(so that argument validation and error text are ours: the SDK's own validation errors quote the
caller's arguments, and a rejected ``memory_save`` must never echo a secret back):

``memory_save``
    Writes one memory **through the write gate** (W1). Returns the decision only: ``action``
    (``write``, ``update``, ``merge``, ``quarantine``, ``reject``), ``id``, ``reasons`` and the
    names of screen findings. Never the text, so a rejected secret is not echoed.
``memory_recall``
    Hybrid retrieval in the scope, then the recall gate. Returns **only accepted memories**
    (``id``, ``title``, ``body``, ``updated_at``, ``provenance``) and the operator summary
    (``rejected_count``, counts by reason), i.e. :meth:`GateResult.tool_result`.
``memory_preview``
    The same query as a dry run (R10): accepted ids and titles, rejected ids with reasons, counts
    by reason; no body at all.

Every tool takes a required ``scope`` object (``user_id``, ``agent_id``, ``memory_space_id``,
optional ``route_id``). A call without a complete scope is a tool error, never an unscoped search
(R1). Error messages name fields, never values.

Trust is the operator's, not the model's: what an ``origin`` may write, whether its ``tier`` is
honoured and what is quarantined come from the write policy (``--config``, W8). By default a new
memory starts ``tentative`` (not recalled) unless its origin is trusted with an explicit tier
(``user_explicit``, ``external_verified``) or it is confirmed by a second save (W7), as the seeds'
``memory_save`` (``既定tier=tentative``) prescribes.

Every call is audited in ``<store>/audit/audit.jsonl`` (ids and reasons only).
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import InputError, RecallGateError, ScopeError
from ..model import Origin, Scope, coerce_scope

if TYPE_CHECKING:
    import mcp.types as mcp_types
    from mcp.server.lowlevel import Server

    from ..store import MemoryStore

__all__ = [
    "SERVER_NAME",
    "TOOL_NAMES",
    "ToolFailure",
    "build_server",
    "call_tool",
    "run_mcp_command",
    "tool_specs",
]

_log = logging.getLogger("recall_gate.mcp")

SERVER_NAME = "recall-gate"
TOOL_NAMES = ("memory_save", "memory_recall", "memory_preview")
MAX_QUERY_CHARS = 10_000
MAX_K = 50

_SCOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": (
        "Who is asking or writing: the partition the call is confined to. Required: there is no "
        "unscoped search."
    ),
    "properties": {
        "user_id": {"type": "string", "minLength": 1, "description": "the end user"},
        "agent_id": {"type": "string", "minLength": 1, "description": "the agent"},
        "memory_space_id": {"type": "string", "minLength": 1, "description": "the memory space"},
        "route_id": {
            "type": "string",
            "description": "optional channel or account; omit for memories without a route",
        },
    },
    "required": ["user_id", "agent_id", "memory_space_id"],
    "additionalProperties": False,
}


class ToolFailure(Exception):
    """A tool call the server refuses (bad or missing arguments); the message names fields only."""


class _SaveArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    body: str = Field(min_length=1)
    title: str = ""
    tags: list[str] = Field(default_factory=list)
    source: str = ""
    source_record_id: str | None = None
    origin: Origin | None = None
    cited: bool = False
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
    """Name, description and input JSON schema of each tool (what ``tools/list`` returns)."""
    query_props = {
        "scope": _SCOPE_SCHEMA,
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
                "Save one fact to long-term memory through the write gate. Credentials are refused, "
                "personal data is masked, instructions aimed at the agent and untrusted sources are "
                "quarantined for review, duplicates are merged, and new memories start 'tentative' "
                "unless the operator's policy trusts their origin. Returns the decision (action, id, "
                "reasons), never the text."
            ),
            "input_schema": {
                "type": "object",
                "properties": {
                    "scope": _SCOPE_SCHEMA,
                    "body": _string("the fact, one fact per memory", minLength=1),
                    "title": _string("a short title"),
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "tags"},
                    "source": _string("where the fact comes from (e.g. chat, docs)"),
                    "source_record_id": _string("id of the source record (deletion lineage)"),
                    "origin": {
                        "type": "string",
                        "enum": [o.value for o in Origin],
                        "description": "who produced the fact (trust, W3); default: the policy's",
                    },
                    "cited": {"type": "boolean", "description": "the fact is grounded in a cited source"},
                    "tier": {
                        "type": "string",
                        "enum": ["tentative", "confirmed", "working"],
                        "description": "requested tier; honoured only for origins the policy trusts",
                    },
                    "status": {"type": "string", "enum": ["approved", "draft"], "description": "approval"},
                    "visibility": {
                        "type": "string",
                        "enum": ["private", "shared"],
                        "description": "private to the user and agent (default) or shared in the space",
                    },
                    "entity": _string("what the fact is about (with attribute: newer facts supersede)"),
                    "attribute": _string("which property of the entity"),
                    "supersedes": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "ids of memories this one corrects (same owner and route only)",
                    },
                },
                "required": ["scope", "body"],
                "additionalProperties": False,
            },
            "read_only": False,
        },
        {
            "name": "memory_recall",
            "description": (
                "Recall memories for a question within a scope. Returns only memories the recall gate "
                "accepted (id, title, body, updated_at, provenance) plus how many were rejected and why."
            ),
            "input_schema": {
                "type": "object",
                "properties": query_props,
                "required": ["scope", "query"],
                "additionalProperties": False,
            },
            "read_only": True,
        },
        {
            "name": "memory_preview",
            "description": (
                "Dry run of memory_recall: which memory ids would be accepted, which rejected and why. "
                "Returns no memory bodies and changes nothing."
            ),
            "input_schema": {
                "type": "object",
                "properties": query_props,
                "required": ["scope", "query"],
                "additionalProperties": False,
            },
            "read_only": True,
        },
    ]


def _fields(exc: ValidationError) -> str:
    return ", ".join(sorted({".".join(str(p) for p in e["loc"]) or "arguments" for e in exc.errors()}))


def _scope_of(arguments: Mapping[str, Any]) -> Scope:
    if "scope" not in arguments or arguments["scope"] is None:
        raise ToolFailure(
            "scope is required (user_id, agent_id, memory_space_id[, route_id]); unscoped search is refused"
        )
    raw = arguments["scope"]
    if not isinstance(raw, Mapping):
        raise ToolFailure("scope must be an object with user_id, agent_id, memory_space_id[, route_id]")
    try:
        return coerce_scope(raw)
    except ScopeError as exc:
        raise ToolFailure(str(exc)) from None


def _rest(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if k != "scope"}


def _save(store: MemoryStore, arguments: Mapping[str, Any]) -> dict[str, Any]:
    from ..write import candidate_from_mapping

    scope = _scope_of(arguments)
    try:
        args = _SaveArgs.model_validate(_rest(arguments))
    except ValidationError as exc:
        raise ToolFailure(f"invalid arguments: problem with {_fields(exc)}") from None
    fields = args.model_dump(exclude_none=True)
    fields["tags"] = tuple(args.tags)
    fields["supersedes"] = tuple(args.supersedes)
    try:
        candidate = candidate_from_mapping({**scope.model_dump(), **fields})
    except InputError as exc:
        raise ToolFailure(str(exc)) from None
    decision = store.add([candidate])[0]
    return {
        "action": decision.action.value,
        "id": decision.id,
        "stored": decision.stored,
        "reasons": [r.value for r in decision.reasons],
        "findings": list(decision.findings),
        "existing_id": decision.existing_id,
    }


def _query_args(arguments: Mapping[str, Any]) -> tuple[Scope, _QueryArgs]:
    scope = _scope_of(arguments)
    try:
        return scope, _QueryArgs.model_validate(_rest(arguments))
    except ValidationError as exc:
        raise ToolFailure(f"invalid arguments: problem with {_fields(exc)}") from None


def _recall(store: MemoryStore, arguments: Mapping[str, Any]) -> dict[str, Any]:
    scope, args = _query_args(arguments)
    result = store.query(args.query, scope=scope, k=args.k)
    return result.tool_result()


def _preview(store: MemoryStore, arguments: Mapping[str, Any]) -> dict[str, Any]:
    scope, args = _query_args(arguments)
    result = store.preview(args.query, scope=scope, k=args.k)
    return {
        "dry_run": True,
        "accepted_ids": result.accepted_ids,
        "accepted": [{"id": h.record.id, "title": h.record.title} for h in result.accepted],
        "rejected": [{"id": r.id, "reason": r.reason.value} for r in result.rejected],
        "rejected_count": result.audit.rejected_count,
        "counts": dict(result.audit.counts),
        "config_hash": result.audit.config_hash,
    }


_HANDLERS: dict[str, Callable[[MemoryStore, Mapping[str, Any]], dict[str, Any]]] = {
    "memory_save": _save,
    "memory_recall": _recall,
    "memory_preview": _preview,
}


def call_tool(store: MemoryStore, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run one tool against ``store`` synchronously (what the server does for ``tools/call``).

    Raises:
        ToolFailure: for an unknown tool, a missing or incomplete scope, or invalid arguments
            (the message names fields, never values).
        RecallGateError: if the store fails (messages carry ids, never memory text).
    """
    handler = _HANDLERS.get(name)
    if handler is None:
        raise ToolFailure(f"unknown tool {name[:64]!r}; tools: {', '.join(TOOL_NAMES)}")
    if arguments is not None and not isinstance(arguments, Mapping):
        raise ToolFailure("arguments must be an object")
    return handler(store, arguments or {})


def build_server(store: MemoryStore, *, name: str = SERVER_NAME) -> Server[Any]:
    """A low-level MCP server exposing the three tools over ``store``.

    Store work runs in a worker thread, so the event loop keeps serving while a query embeds.
    """
    import anyio.to_thread
    import mcp.types as types
    from mcp.server import ServerRequestContext
    from mcp.server.lowlevel import Server

    from .. import __version__

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
            payload = await anyio.to_thread.run_sync(call_tool, store, tool, params.arguments)
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
            "Long-term memory behind a recall gate. Always pass your scope. memory_recall returns only "
            "memories that may be used; memory_save decides what may be stored."
        ),
        on_list_tools=list_tools,
        on_call_tool=handle_call,
    )


def _error(message: str) -> mcp_types.CallToolResult:
    import mcp.types as types

    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def serve_stdio(store: MemoryStore) -> None:
    """Serve the tools over stdin/stdout until the client closes the connection."""
    from mcp.server.stdio import stdio_server

    server = build_server(store)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_mcp_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate mcp --store DIR [--config FILE]``: serve over stdio; returns the exit status.

    Nothing is printed on stdout (it carries the protocol); diagnostics go to stderr.
    """
    import anyio

    from ..config import load_config
    from ..store import MemoryStore

    book = load_config(args.config) if getattr(args, "config", None) else None
    with MemoryStore(args.store, config=book) as store:
        anyio.run(serve_stdio, store)
    return 0
