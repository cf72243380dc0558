"""Who an MCP server serves: a pinned identity, or an identities file mapping client tokens to scopes.

An MCP tool call comes from a model, and a model can be steered by whatever text it read. So the
scope of every call, and how far its saves are trusted, are fixed by the **operator** when the
server starts, never by tool arguments (issue "Authority on every path"):

- **One client (stdio, the usual case).** ``recall-gate mcp --store DIR --user U --agent A
  --space S [--route R] [--origin O]``: the process serves exactly that scope. Whoever can start
  the process chose the identity, which is the authentication stdio has.
- **Several clients.** ``recall-gate mcp --identities FILE``: a TOML file names each client, its
  scope and its trust, keyed by the SHA-256 of a secret token the client presents (the file holds
  hashes, never tokens, so reading it does not let anyone act as a client)::

      [identities.aiko-writer]
      token_sha256 = "3f0a..."      # sha256 of the client's token, hex
      user = "aiko"
      agent = "writer"
      space = "brand"
      route = "official"            # optional
      origin = "agent_inferred"     # optional: the most trusted origin its saves get
      allow_shared = false          # optional: may it write memories shared with the space?
      review_saves = false          # optional: hold every agent note for review instead of writing it tentative

  Over stdio the client passes its token in the ``RECALL_GATE_TOKEN`` environment variable (MCP
  client configurations have an ``env`` table; an argument would show in ``ps``). Over HTTP
  (``--http``) every request carries it as ``Authorization: Bearer TOKEN`` and is served in that
  token's scope; a request without a known token is refused (401). ``recall-gate mcp --new-token``
  prints a fresh token and the ``token_sha256`` line for the file.

Trust of saves (:meth:`ServerIdentity.write_path`): ``WritePath.pinned(scope, origin=O)``, so a
save claiming another owner is rejected (``scope_mismatch``), and an ``origin``, ``tier``,
``visibility: shared`` or evidence claim above the identity's is lowered (``trust_lowered``).
The server vouches that agent notes are grounded in the conversation it serves, so an
``agent_inferred`` note is written ``tentative`` (seed 004: ``memory_save`` defaults to
tentative; tentative memories are not recalled until confirmed). ``review_saves`` withdraws that:
every agent note is then held for review. A save may lower its own trust (``origin:
external_unverified`` for text from a web page, ``cited: false``), never raise it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError, ScopeError
from ..model import Origin, Scope, coerce_scope
from ..write.authority import WritePath

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "TOKEN_ENV",
    "IdentityBook",
    "ServerIdentity",
    "new_token",
    "token_hash",
]

TOKEN_ENV = "RECALL_GATE_TOKEN"
_SCOPE_KEYS = {"user": "user_id", "agent": "agent_id", "space": "memory_space_id", "route": "route_id"}


def token_hash(token: str) -> str:
    """The hex SHA-256 of a client token (what an identities file stores)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh random client token and its hash: ``(token, token_sha256)``."""
    token = secrets.token_urlsafe(32)
    return token, token_hash(token)


class ServerIdentity(BaseModel):
    """The scope one MCP client is served in, and how far its saves are trusted.

    Attributes:
        name: a label for logs and audit records (``mcp`` or ``mcp:<identity name>``).
        scope: the only scope its calls search and write.
        origin: the most trusted origin its saves get (default ``agent_inferred``).
        allow_shared: its saves may be ``visibility: shared``.
        review_saves: hold every agent note for review (the server does not vouch for grounding).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "mcp"
    scope: Scope
    origin: Origin = Origin.AGENT_INFERRED
    allow_shared: bool = False
    review_saves: bool = False

    def write_path(self, *, cited: bool | None = None) -> WritePath:
        """The write path of one ``memory_save``: pinned scope, origin ceiling, grounding vouched by the server.

        Args:
            cited: the save's own ``cited`` argument; ``False`` lowers the grounding (the note is
                then held for review), ``True`` or ``None`` cannot raise it above the server's.
        """
        vouched = not self.review_saves and cited is not False
        return WritePath.pinned(
            self.scope, name=self.name, origin=self.origin, allow_shared=self.allow_shared, cited=vouched
        )

    def describe(self) -> str:
        """``user=U agent=A space=S[ route=R]`` for logs (ids only)."""
        s = self.scope
        route = f" route={s.route_id}" if s.route_id else ""
        return f"user={s.user_id} agent={s.agent_id} space={s.memory_space_id}{route}"


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    token_sha256: str = Field(pattern="^[0-9a-f]{64}$")
    user: str
    agent: str
    space: str
    route: str | None = None
    origin: Origin = Origin.AGENT_INFERRED
    allow_shared: bool = False
    review_saves: bool = False


class IdentityBook:
    """The identities of a multi-client server, looked up by token (see the module docstring)."""

    def __init__(self, identities: Mapping[str, tuple[str, ServerIdentity]]) -> None:
        self._by_name = dict(identities)
        hashes = [h for h, _ in self._by_name.values()]
        if len(set(hashes)) != len(hashes):
            raise ConfigError("identities file: two identities share a token_sha256")

    @property
    def names(self) -> list[str]:
        """The identity names, sorted."""
        return sorted(self._by_name)

    @classmethod
    def load(cls, path: str | Path) -> IdentityBook:
        """Read an identities file.

        Raises:
            ConfigError: if the file is missing, not TOML, empty, or an entry is malformed
                (naming the entry and field, never a value).
        """
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"identities file not found: {p}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read identities file {p}: {type(exc).__name__}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"identities file {p} is not valid TOML: {exc}") from None
        return cls.from_mapping(data, source=str(p))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, source: str = "identities") -> IdentityBook:
        """Build from the parsed TOML (``{"identities": {name: {...}}}``).

        Raises:
            ConfigError: on a malformed file or entry.
        """
        unknown = sorted(set(data) - {"identities"})
        if unknown:
            raise ConfigError(f"{source}: unknown table(s) {', '.join(unknown)}; expected [identities.NAME]")
        table = data.get("identities")
        if not isinstance(table, Mapping) or not table:
            raise ConfigError(f"{source}: no [identities.NAME] tables")
        out: dict[str, tuple[str, ServerIdentity]] = {}
        for name, raw in table.items():
            if not isinstance(raw, Mapping):
                raise ConfigError(f"{source}: [identities.{name}] must be a table")
            try:
                entry = _Entry.model_validate(dict(raw))
                scope = coerce_scope({_SCOPE_KEYS[k]: getattr(entry, k) for k in _SCOPE_KEYS})
            except ValidationError as exc:
                fields = sorted({str(e["loc"][0]) if e["loc"] else "entry" for e in exc.errors()})
                raise ConfigError(
                    f"{source}: [identities.{name}]: problem with {', '.join(fields)}"
                ) from None
            except ScopeError as exc:
                raise ConfigError(f"{source}: [identities.{name}]: {exc}") from None
            out[str(name)] = (
                entry.token_sha256,
                ServerIdentity(
                    name=f"mcp:{name}",
                    scope=scope,
                    origin=entry.origin,
                    allow_shared=entry.allow_shared,
                    review_saves=entry.review_saves,
                ),
            )
        return cls(out)

    def resolve(self, token: str | None) -> tuple[str, ServerIdentity] | None:
        """The ``(name, identity)`` whose token hash matches ``token``, or ``None``.

        Every entry is compared in constant time, so timing does not reveal how close a guess was.
        """
        if not token:
            return None
        digest = token_hash(token)
        found: tuple[str, ServerIdentity] | None = None
        for name, (expected, identity) in self._by_name.items():
            if hmac.compare_digest(digest, expected):
                found = (name, identity)
        return found
