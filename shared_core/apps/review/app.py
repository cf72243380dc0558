"""The review application: four pages over one open :class:`~shared_core.store.MemoryStore`.

* ``/`` — the quarantine queue (W6): each held candidate with its text, why it was held, owner,
  space, route and expiry; **approve** and **reject** forms (``POST``, CSRF-checked) that call
  ``store.quarantine_approve(qid, reviewer=...)`` and ``store.quarantine_reject(qid)``, i.e. the
  store's own write gate (W1). The page never chooses an owner, a tier or a trust level: the
  candidate keeps the scope it was held for, and the store decides what approval writes.
* ``/memory`` — a memory's history (L1): its correction chain oldest first, with validity window,
  tier, evidence count, status and lineage to its source record.
* ``/recall`` — "why was this (not) recalled?" (R8, R10, R12): a dry-run of a query in a scope,
  accepted and rejected hits with every failed rule, scores and channel ranks, and a what-if
  with other settings.
* ``/audit`` — the audit log (R9), newest first, filterable by event, scope, reason and time, with
  the hash-chain verification of each audit file.

Every review decision also emits a ``review`` audit record (ids, action, reviewer; never text).
Store calls run in a worker thread, one at a time (one lock), so the event loop never blocks
on Chroma and two reviewers clicking at once are serialised.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import jinja2
from markupsafe import escape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ...audit import AuditRecord, JsonlSink, RejectedEntry, emit, verify_chain
from ...display import ACTION_COLOURS, REASON_COLOURS
from ...errors import ConfigError, InputError, RecallGateError, ScopeError, StoreError
from ...model import Scope, Tier, coerce_scope
from ...timeutil import parse_datetime, to_utc
from .security import COOKIE_NAME, Session, SessionBook, TokenGate, check_csrf, forbidden
from .views import AuditFilter, audit_rows, history_rows, hit_rows, queue_rows, what_if

__all__ = ["ReviewDesk", "create_app"]

_log = logging.getLogger("recall_gate.review")
_T = TypeVar("_T")
_REVIEWER = re.compile(r"^\w[\w .@+-]{0,63}$")
MAX_QUERY_FIELD = 2_000
AUDIT_LIMIT = 200
QUEUE_LIMIT = 200
_WHAT_IF_FLOATS = ("min_score", "min_lexical_score", "max_age_days")


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("shared_core.apps.review", "templates"),
        autoescape=True,  # every page shows memory text: escaping is not optional
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = _when
    env.filters["score"] = _score
    env.filters["badge"] = _badge_class
    env.filters["scope"] = scope_label
    return env


def _when(value: datetime | str | None) -> str:
    if value is None or value == "":
        return "—"
    try:
        at = value if isinstance(value, datetime) else parse_datetime(value)
    except ValueError:
        return str(value)
    return to_utc(at).strftime("%Y-%m-%d %H:%M:%S UTC")


def _score(value: float | int | None, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


_CLASS_SAFE = re.compile(r"[^a-z0-9_]")


def _badge_class(name: str) -> str:
    """CSS class of a reason or action badge (only known names get a colour of their own)."""
    key = _CLASS_SAFE.sub("", str(name).lower())
    return f"b-{key}" if key in REASON_COLOURS or key in ACTION_COLOURS else "b-other"


def _stylesheet() -> str:
    base = (files("shared_core.apps.review") / "static" / "review.css").read_text(encoding="utf-8")
    colours = {**ACTION_COLOURS, **REASON_COLOURS}
    badges = "\n".join(
        f".badge.b-{name} {{ background: {colour}; }}" for name, colour in sorted(colours.items())
    )
    return f"{base}\n/* reason and action colours (shared_core.display) */\n{badges}\n"


def _relative(delta_seconds: float) -> str:
    days = delta_seconds / 86400.0
    if abs(days) >= 1:
        n = round(abs(days))
        unit = "day" if n == 1 else "days"
    else:
        n = round(abs(delta_seconds) / 3600.0)
        unit = "hour" if n == 1 else "hours"
    return f"in {n} {unit}" if delta_seconds >= 0 else f"{n} {unit} ago"


class ReviewDesk:
    """The state behind the pages: the store, its lock, the sessions and the templates.

    Args:
        store: an open :class:`~shared_core.store.MemoryStore` (the writer, so that approvals
            can write); the desk does not close it.
        token: the token of the printed URL (:func:`~.security.new_token`).
        reviewer: the default reviewer name shown in the approve/reject forms.
    """

    def __init__(
        self, store: Any, *, token: str, reviewer: str = "operator", cookie_name: str = COOKIE_NAME
    ) -> None:
        self.store = store
        self.token = token
        self.reviewer = reviewer if _REVIEWER.match(reviewer or "") else "operator"
        self.sessions = SessionBook(cookie_name=cookie_name)
        self.env = _env()
        self.css = _stylesheet()
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------------

    async def call(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run a store call in a worker thread, one at a time."""

        def locked() -> _T:
            with self._lock:
                return fn(*args, **kwargs)

        return await run_in_threadpool(locked)

    def session(self, request: Request) -> Session:
        """The request's session (the gate already refused requests without one)."""
        session = self.sessions.get(request.cookies.get(self.sessions.cookie_name))
        if session is None:  # pragma: no cover - TokenGate guarantees a session
            raise InputError("no session")
        return session

    def now(self) -> datetime:
        """The store's clock."""
        return to_utc(self.store.clock())

    def render(self, request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
        """Render a page with the context every page has (nav, CSRF token, one-time messages)."""
        session = self.session(request)
        flash, session.flash = session.flash, []
        page = self.env.get_template(template).render(
            request_path=request.url.path,
            store_path=str(self.store.path) if self.store.path is not None else "(in memory)",
            csrf=session.csrf,
            flash=flash,
            reviewer=self.reviewer,
            **context,
        )
        return HTMLResponse(page, status_code=status)

    # -- quarantine ----------------------------------------------------------------------------

    async def queue(self, request: Request) -> Response:
        """The quarantine queue, optionally for one memory space."""
        space = _field(request.query_params, "space")
        items = await self.call(self.store.quarantine_list, memory_space_id=space)
        now = self.now()
        rows = queue_rows(items, now=now)
        shown = rows[:QUEUE_LIMIT]
        relative = {r.id: _relative((r.expires_at - now).total_seconds()) for r in shown if r.expires_at}
        return self.render(
            request, "queue.html", rows=shown, total=len(rows), space=space or "", relative=relative
        )

    async def decide(self, request: Request) -> Response:
        """Approve or reject one held candidate (``POST``; CSRF token and reviewer name required)."""
        session = self.session(request)
        form = await request.form()
        if not check_csrf(session, form.get("csrf")):
            return forbidden()
        qid = str(request.path_params["qid"])
        action = str(request.path_params["action"])
        reviewer = str(form.get("reviewer") or "").strip()
        back = _back_to(form.get("space"))
        if not _REVIEWER.match(reviewer):
            session.say("error", "reviewer: give your name (1-64 letters, digits, spaces or . @ + - _)")
            return RedirectResponse(back, status_code=303)
        held = {item.get("id"): item for item in await self.call(self.store.quarantine_list)}
        item = held.get(qid)
        if item is None:
            session.say("error", f"{qid}: no such quarantined candidate (already decided?)")
            return RedirectResponse(back, status_code=303)
        space = item.get("memory_space_id")
        if action == "approve":
            try:
                decision = await self.call(self.store.quarantine_approve, qid, reviewer=reviewer)
            except InputError as exc:  # expired, or decided by someone else meanwhile
                session.say("error", str(exc))
                return RedirectResponse(back, status_code=303)
            result = decision.action.value
            memory_id = None
            if decision.stored:
                memory_id = decision.id
            elif result == "merge":
                memory_id = decision.existing_id or decision.id
            self._audit_review(action, qid, reviewer, space, memory_id=memory_id, result=result)
            href = _history_href(space, memory_id)
            if decision.stored:
                session.say("ok", f"{qid} approved by {reviewer}: written as {memory_id}", href)
            elif result == "merge":
                session.say("ok", f"{qid} approved by {reviewer}: merged into {memory_id}", href)
            else:
                why = ", ".join(r.value for r in decision.reasons) or "its source was forgotten"
                session.say("error", f"{qid} was not written ({result}: {why})")
        else:
            existed = await self.call(self.store.quarantine_reject, qid)
            result = "discarded" if existed else "missing"
            self._audit_review(action, qid, reviewer, space, memory_id=None, result=result)
            session.say("ok", f"{qid} rejected by {reviewer}: discarded, it will never be recalled")
        return RedirectResponse(back, status_code=303)

    def _audit_review(
        self, action: str, qid: str, reviewer: str, space: object, *, memory_id: str | None, result: str
    ) -> None:
        """One ``review`` audit record per decision: ids, action, result and reviewer; no text."""
        record = AuditRecord.model_construct(
            event="review",
            at=self.now().isoformat(),
            query_hash=None,
            query=None,
            scope={"memory_space_id": str(space)} if isinstance(space, str) else {},
            accepted_ids=(memory_id,) if memory_id else (),
            rejected=() if action == "approve" else (RejectedEntry(qid, "rejected_by_reviewer", ()),),
            counts={action: 1},
            input_count=1,
            dry_run=False,
            config_hash="",
            elapsed_ms=0.0,
            extra={"action": action, "quarantine_id": qid, "reviewer": reviewer, "result": result},
        )
        emit(record, self.store.sinks)
        _log.info("review: %s %s by %s -> %s", action, qid, reviewer, result)

    # -- history -------------------------------------------------------------------------------

    async def memory(self, request: Request) -> Response:
        """A memory's correction chain, looked up by id in a memory space."""
        params = request.query_params
        space, mid = _field(params, "space"), _field(params, "id")
        rows: list[Any] = []
        error = None
        if space and mid:
            try:
                found = await self.call(self.store.get, [mid], memory_space_id=space)
                if found:
                    chain = await self.call(self.store.history, mid, memory_space_id=space)
                    rows = history_rows(chain, requested=mid)
                else:
                    error = f"no memory {mid} in space {space}"
            except (InputError, ValueError) as exc:
                error = str(exc)
        elif space or mid:
            error = "give both the memory space and the memory id"
        return self.render(request, "memory.html", space=space or "", mid=mid or "", rows=rows, error=error)

    # -- why (not) recalled --------------------------------------------------------------------

    async def recall(self, request: Request) -> Response:
        """A dry-run of a query in a scope, and optionally a what-if with other settings."""
        params = request.query_params
        form = {k: _field(params, k) or "" for k in ("q", "user", "agent", "space", "route", "at")}
        form.update(
            {
                f"w_{k}": _field(params, f"w_{k}") or ""
                for k in (*_WHAT_IF_FLOATS, "max_hits", "allow_draft", "tiers")
            }
        )
        context: dict[str, Any] = {"form": form, "result": None, "error": None, "whatif": None}
        if not form["q"]:
            return self.render(request, "recall.html", **context)
        try:
            if len(form["q"]) > MAX_QUERY_FIELD:
                raise InputError(f"query: at most {MAX_QUERY_FIELD} characters")
            scope = coerce_scope(
                {
                    "user_id": form["user"],
                    "agent_id": form["agent"],
                    "memory_space_id": form["space"],
                    "route_id": form["route"] or None,
                }
            )
            at = parse_datetime(form["at"]) if form["at"] else None
        except (ScopeError, InputError) as exc:
            context["error"] = str(exc)
            return self.render(request, "recall.html", status=400, **context)
        except ValueError:
            context["error"] = "evaluate at: not an ISO 8601 time (e.g. 2026-07-13T10:00:00Z)"
            return self.render(request, "recall.html", status=400, **context)
        try:
            result = await self.call(self.store.preview, form["q"], scope=scope, now=at)
            base_cfg = self.store.gate.config_for(scope)
            changes = _what_if_changes(form, base_cfg)
            if changes:
                cfg = base_cfg.replace(**{k: new for k, (_, new) in changes.items()})
                alt = await self.call(
                    self.store.query, form["q"], scope=scope, dry_run=True, now=at, config=cfg
                )
                context["whatif"] = what_if(result, alt, changes)
        except (InputError, ConfigError, ScopeError) as exc:
            context["error"] = str(exc)
            return self.render(request, "recall.html", status=400, **context)
        accepted, rejected = hit_rows(result)
        context.update(
            result=result,
            accepted=accepted,
            rejected=rejected,
            config=base_cfg,
            scope=scope,
            whatif_accepted=hit_rows(context["whatif"].result)[0] if context["whatif"] else [],
        )
        return self.render(request, "recall.html", **context)

    # -- audit ---------------------------------------------------------------------------------

    async def audit(self, request: Request) -> Response:
        """The audit log newest first, filtered, with each audit file's hash-chain check."""
        params = request.query_params
        form = {
            k: _field(params, k) or ""
            for k in (
                "event",
                "user",
                "agent",
                "space",
                "route",
                "reason",
                "since",
                "until",
                "dry_run",
                "limit",
            )
        }
        error = None
        try:
            since = parse_datetime(form["since"]) if form["since"] else None
            until = parse_datetime(form["until"]) if form["until"] else None
        except ValueError:
            since = until = None
            error = "since / until: not an ISO 8601 time (e.g. 2026-07-13 or 2026-07-13T10:00:00Z)"
        try:
            limit = max(1, min(5000, int(form["limit"]))) if form["limit"] else AUDIT_LIMIT
        except ValueError:
            limit = AUDIT_LIMIT
            error = "limit: not a whole number"
        flt = AuditFilter(
            event=form["event"] or None,
            user_id=form["user"] or None,
            agent_id=form["agent"] or None,
            memory_space_id=form["space"] or None,
            route_id=form["route"] or None,
            reason=form["reason"] or None,
            since=since,
            until=until,
            include_dry_run=form["dry_run"] != "hide",
        )
        files_, records, read_error = await self.call(_read_audit, self.store.audit_path)
        rows, total = audit_rows(records, flt, limit=limit)
        return self.render(
            request,
            "audit.html",
            form=form,
            rows=rows,
            total=total,
            count=len(records),
            files=files_,
            audit_path=str(self.store.audit_path) if self.store.audit_path else None,
            error=error or read_error,
            scope_filter=flt.has_scope,
        )

    async def stylesheet(self, request: Request) -> Response:
        """The page's stylesheet (static file plus the shared reason colours)."""
        return Response(self.css, media_type="text/css")


def _read_audit(path: Path | None) -> tuple[list[dict[str, Any]], list[AuditRecord], str | None]:
    """Every audit file (rotated ones first, oldest first), its chain check, and its records."""
    if path is None:
        return [], [], None
    rotated = sorted(
        (p for p in path.parent.glob(f"{path.name}.*") if p.suffix[1:].isdigit()),
        key=lambda p: -int(p.suffix[1:]),
    )
    out_files: list[dict[str, Any]] = []
    records: list[AuditRecord] = []
    error = None
    for p in [*rotated, path]:
        if not p.exists():
            continue
        ok, bad = verify_chain(p)
        try:
            got = JsonlSink(p).read()
        except ValueError:
            got = []
            error = f"{p.name}: a line is not a valid audit record; its records are not shown"
        out_files.append({"name": p.name, "ok": ok, "bad_line": bad, "records": len(got)})
        records.extend(got)
    return out_files, records, error


def _field(params: Mapping[str, Any], name: str) -> str | None:
    value = params.get(name)
    if not isinstance(value, str):
        return None
    value = value.strip()
    return value or None


def _back_to(space: object) -> str:
    if isinstance(space, str) and space.strip():
        return "/?" + urlencode({"space": space.strip()})
    return "/"


def _history_href(space: object, memory_id: str | None) -> str | None:
    if not isinstance(space, str) or not memory_id:
        return None
    return "/memory?" + urlencode({"space": space, "id": memory_id})


def _what_if_changes(form: Mapping[str, str], cfg: Any) -> dict[str, tuple[Any, Any]]:
    """Settings the what-if form changes: ``{name: (current, new)}``; empty fields change nothing.

    Raises:
        ConfigError: naming the field whose value is not a number.
    """
    changes: dict[str, tuple[Any, Any]] = {}
    for name in _WHAT_IF_FLOATS:
        raw = form.get(f"w_{name}", "")
        if not raw:
            continue
        if name == "min_lexical_score" and raw.lower() == "off":
            new: Any = None
        else:
            try:
                new = float(raw)
            except ValueError:
                raise ConfigError(f"what-if {name}: not a number") from None
        changes[name] = (getattr(cfg, name), new)
    raw = form.get("w_max_hits", "")
    if raw:
        try:
            changes["max_hits"] = (cfg.max_hits, int(raw))
        except ValueError:
            raise ConfigError("what-if max_hits: not a whole number") from None
    if form.get("w_allow_draft") in ("yes", "no"):
        changes["allow_draft"] = (cfg.allow_draft, form["w_allow_draft"] == "yes")
    if form.get("w_tiers") == "with_tentative":
        tiers = (Tier.WORKING, Tier.CONFIRMED, Tier.TENTATIVE)
        changes["tier_priority"] = (cfg.tier_priority, tiers)
    return {k: v for k, v in changes.items() if v[0] != v[1]}


def create_app(
    store: Any,
    *,
    token: str,
    reviewer: str = "operator",
    allowed_hosts: list[str] | None = None,
    cookie_name: str = COOKIE_NAME,
) -> Starlette:
    """The review application over an open store.

    Args:
        store: an open :class:`~shared_core.store.MemoryStore` (not closed by the app).
        token: the token the printed URL carries; requests need it (or the session it starts).
        reviewer: default reviewer name in the forms.
        allowed_hosts: ``Host`` headers accepted (DNS-rebinding guard); default: loopback names;
            ``["*"]``: any.
        cookie_name: name of the session cookie.

    Returns:
        A Starlette application (serve it with uvicorn, see :mod:`.server`).
    """
    desk = ReviewDesk(store, token=token, reviewer=reviewer, cookie_name=cookie_name)
    routes = [
        Route("/", desk.queue, methods=["GET"]),
        Route("/quarantine/{qid}/{action:str}", _only_actions(desk), methods=["POST"]),
        Route("/memory", desk.memory, methods=["GET"]),
        Route("/recall", desk.recall, methods=["GET"]),
        Route("/audit", desk.audit, methods=["GET"]),
        Route("/static/review.css", desk.stylesheet, methods=["GET"]),
        Route("/favicon.ico", _no_content, methods=["GET"]),
    ]
    hosts = allowed_hosts or ["127.0.0.1", "localhost", "::1", "[::1]"]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=hosts),
            Middleware(TokenGate, token=token, sessions=desk.sessions),
        ],
        exception_handlers={RecallGateError: _store_error, StoreError: _store_error},
    )
    app.state.desk = desk
    return app


def _only_actions(desk: ReviewDesk) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        if request.path_params.get("action") not in ("approve", "reject"):
            return HTMLResponse("<!doctype html><title>404</title><h1>404 Not Found</h1>", status_code=404)
        return await desk.decide(request)

    return endpoint


async def _no_content(request: Request) -> Response:
    return Response(status_code=204)


async def _store_error(request: Request, exc: Exception) -> Response:
    """A store failure as a short page: the error's type and message (ids and paths, never text)."""
    _log.error("review: %s on %s", type(exc).__name__, request.url.path)
    status = 503 if isinstance(exc, StoreError) else 400
    body = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>recall-gate review: error</title>"
        "<link rel='stylesheet' href='/static/review.css'></head><body><main><h1>Something failed</h1>"
        f"<p class='flash error'>{escape(type(exc).__name__)}: "
        f"{escape(str(exc))}</p><p><a href='/'>Back to the queue</a></p></main></body></html>"
    )
    return HTMLResponse(body, status_code=status)


def scope_label(scope: Scope | Mapping[str, Any] | None) -> str:
    """``user / agent / space [/ route]`` of a scope or an audit record's scope dict ("—" if empty)."""
    if scope is None:
        return "—"
    data = scope.model_dump() if isinstance(scope, Scope) else dict(scope)
    keys = ("user_id", "agent_id", "memory_space_id", "route_id")
    parts = [str(data[k]) for k in keys if data.get(k)]
    return " / ".join(parts) if parts else "—"
