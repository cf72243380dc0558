"""The store commands of ``recall-gate``: ``add``, ``query``, ``quarantine`` and ``forget``.

Opening a store (:func:`open_store`):

- Only ``add`` creates a store. Every other command needs an existing store folder, so a
  mistyped ``--store`` is an error (exit 2), never a new empty store.
- Reading commands (``query``, ``query --dry-run``, ``quarantine list``; ``eval`` likewise) open
  the store **read-only**: they take no writer lock, so they work while ``recall-gate mcp`` or
  the review page holds the store open for writing.
- Writing commands (``add``, ``quarantine approve|reject|purge``, ``forget``) need the writer
  lock; when another process holds it, the error says what to do from the command line.
- ``--chroma-host``/``--chroma-port`` use a store on a Chroma server instead of a folder
  (several processes may write through one server).

Messages name files, lines, fields and ids, never memory text (the exception: ``quarantine
list`` shows the held text to the operator, whose job is to read it before approving).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ..errors import HitParseError, InputError, StoreLockedError
from ..model import Origin, Scope
from ..model.jsonl import iter_jsonl
from ..write.authority import WritePath
from .output import cell_width, fit, json_line, one_line, plural, print_result, recall_summary, shown

if TYPE_CHECKING:
    from ..store import MemoryStore
    from ..write.candidate import WriteDecision

__all__ = [
    "add_store_arguments",
    "cmd_add",
    "cmd_forget",
    "cmd_quarantine",
    "cmd_query",
    "default_reviewer",
    "open_store",
    "write_path_of",
]

Mode = Literal["read", "write", "create"]
MAX_PROBLEM_LINES = 20
PREVIEW_CELLS = 72


def default_reviewer() -> str:
    """The login name, or ``operator`` when there is none (some containers)."""
    try:
        return getpass.getuser() or "operator"
    except (KeyError, OSError):
        return "operator"


def add_store_arguments(parser: argparse.ArgumentParser, *, creates: bool = False) -> None:
    """``--store DIR`` or ``--chroma-host HOST [--chroma-port PORT]``, and ``--config``."""
    where = parser.add_argument_group("where the memories are (one of)")
    where.add_argument(
        "--store",
        metavar="DIR",
        help="the store folder"
        + (" (created if missing)" if creates else " (must exist; only `add` creates one)"),
    )
    where.add_argument(
        "--chroma-host", metavar="HOST", help="use a store on this Chroma server instead of a folder"
    )
    where.add_argument(
        "--chroma-port",
        metavar="PORT",
        type=int,
        default=8000,
        help="the Chroma server's port (default: 8000)",
    )
    parser.add_argument(
        "--config", metavar="FILE", help="TOML settings file (gate and write policy per memory space)"
    )


def _lock_hint(where: str, command: str) -> str:
    return (
        f"the store at {where} is open for writing by another process (for example `recall-gate mcp` "
        f"or `recall-gate review`); `{command}` needs the writer. Stop that process and run again, "
        "approve or reject held memories in the review page it serves, or share the store through "
        "a Chroma server (`--chroma-host`). Reading commands (query, quarantine list, eval) work "
        "alongside a writer."
    )


@contextmanager
def open_store(args: argparse.Namespace, *, mode: Mode, command: str) -> Iterator[MemoryStore]:
    """Open the store named by ``--store`` or ``--chroma-host`` for one command (see the module docstring).

    Raises:
        InputError: if no store is named, both are, or the folder does not exist (``read``/``write``).
        StoreLockedError: with the command-line hint, when another process holds the writer lock.
    """
    from ..config import load_config
    from ..store import MemoryStore

    book = load_config(args.config) if getattr(args, "config", None) else None
    host = getattr(args, "chroma_host", None)
    if host and args.store:
        raise InputError("give --store or --chroma-host, not both")
    if host:
        with MemoryStore.http(host, args.chroma_port, config=book) as remote:
            yield remote
        return
    if not args.store:
        raise InputError("give the store: --store DIR (or --chroma-host HOST)")
    path = Path(args.store)
    if mode != "create":
        if not path.exists():
            raise InputError(
                f"no store at {path}: the folder does not exist (only `recall-gate add` creates a store)"
            )
        if not path.is_dir():
            raise InputError(f"no store at {path}: it is a file, not a store folder")
        if not (path / "chroma").is_dir():
            raise InputError(f"no store at {path}: the folder holds no recall-gate store")
    try:
        store = MemoryStore(path, config=book, read_only=mode == "read")
    except StoreLockedError:
        raise StoreLockedError(_lock_hint(str(path), command)) from None
    with store:
        yield store


# -- add ------------------------------------------------------------------------------------------


def write_path_of(args: argparse.Namespace) -> WritePath:
    """The authority of one ``recall-gate add`` (``--scope``, ``--origin``, ``--cited``, ``--private``).

    Without ``--origin``: the operator path, records' owners and trust claims as given (you
    vouch for the file); ``--scope`` pins one owner. With ``--origin``: that origin is the
    ceiling (records claiming more are lowered, ``trust_lowered``), and records' own evidence
    claims (``cited``, ``confirmations``, ``evidence_count``, ``verification_status``) are
    ignored; ``--cited`` vouches that the file's records are grounded in a source. ``--private``:
    no record of the file is written shared with the space (one asking for it is lowered).

    Raises:
        InputError: on ``--cited`` without ``--origin``.
        ScopeError: on a malformed ``--scope``.
    """
    scope = Scope.parse(args.scope) if args.scope else None
    shared = not args.private
    if args.origin is None:
        if args.cited:
            raise InputError("--cited needs --origin (without it, each record's own 'cited' is honoured)")
        return WritePath.operator(name="cli", scope=scope).model_copy(update={"allow_shared": shared})
    return WritePath(
        name="cli",
        scope=scope,
        origin=Origin(args.origin),
        trust_claims=False,
        cited=args.cited,
        allow_shared=shared,
    )


def _decision_json(d: WriteDecision, line: int) -> dict[str, Any]:
    return {"line": line, **d.model_dump(mode="json")}


def cmd_add(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate add``: write a JSONL file of memories through the write gate."""
    from tqdm import tqdm

    path = write_path_of(args)
    try:
        rows = list(iter_jsonl(args.input, what="memories file"))
    except HitParseError as exc:
        raise InputError(
            f"{args.input}, {exc}; nothing was written (the whole file is checked before any write): "
            "fix that line and run again"
        ) from None
    if not rows:
        print(f"{args.input}: no memories (the file is empty)", file=out)
        return 0
    lines = [n for n, _ in rows]
    items = [obj for _, obj in rows]
    by_action: Counter[str] = Counter()
    by_reason: dict[str, Counter[str]] = {}
    problems: list[str] = []
    stored = 0
    batch = max(1, args.batch)
    with open_store(args, mode="create", command="add") as store:
        bar = tqdm(total=len(items), unit="memory", disable=not args.progress, file=sys.stderr)
        try:
            for start in range(0, len(items), batch):
                for d in store.add(items[start : start + batch], path=path, dry_run=args.dry_run):
                    line = lines[start + d.index]
                    action = d.action.value
                    by_action[action] += 1
                    by_reason.setdefault(action, Counter()).update(r.value for r in d.reasons)
                    stored += d.stored
                    if args.json:
                        print(json_line(_decision_json(d, line)), file=out)
                    elif action in ("reject", "quarantine"):
                        why = ", ".join(r.value for r in d.reasons) or "-"
                        detail = f": {'; '.join(d.detail)}" if d.detail else ""
                        found = f" (found: {', '.join(d.findings)})" if d.findings else ""
                        problems.append(f"line {line}: {action} {why}{detail}{found}")
                bar.update(min(batch, len(items) - start))
        except Exception:
            bar.close()
            done = sum(by_action.values())
            print(
                f"recall-gate: stopped after {done} of {len(items)} record(s) of {args.input} "
                f"({stored} stored); the first line not handled is {lines[done] if done < len(items) else '-'}",
                file=sys.stderr,
            )
            raise
        bar.close()
    if args.json:
        return 0
    dry = " (dry run: nothing was changed)" if args.dry_run else ""
    verb = "would be stored" if args.dry_run else "stored"
    print(f"{args.input}: {plural(len(items), 'record', 'records')}, {stored} {verb}{dry}", file=out)
    for action in ("write", "update", "merge", "quarantine", "reject"):
        if not by_action[action]:
            continue
        reasons = by_reason.get(action, Counter())
        why = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items()))
        print(f"  {action + ':':<12}{by_action[action]:>6}" + (f"   ({why})" if why else ""), file=out)
    for problem in problems[:MAX_PROBLEM_LINES]:
        print(f"  {problem}", file=out)
    if len(problems) > MAX_PROBLEM_LINES:
        print(f"  ... and {len(problems) - MAX_PROBLEM_LINES} more (--json lists every decision)", file=out)
    if stored == 0 and not by_action["merge"]:
        print("  nothing was written: every record was rejected or held for review", file=out)
    if by_action["quarantine"] and not args.dry_run:
        where = f"--store {args.store}" if args.store else f"--chroma-host {args.chroma_host}"
        print(f"  held for review: recall-gate quarantine list {where}", file=out)
    return 0


# -- query ----------------------------------------------------------------------------------------


def cmd_query(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate query``: hybrid retrieval in a scope, then the recall gate (read-only)."""
    scope = Scope.parse(args.scope)
    with open_store(args, mode="read", command="query") as store:
        result = store.query(args.text, scope=scope, k=args.k, dry_run=args.dry_run)
    if args.json:
        print(json_line(result.to_json_dict() | {"summary": recall_summary(result).to_json()}), file=out)
    else:
        where = args.store or f"{args.chroma_host}:{args.chroma_port}"
        print_result(result, out, title=f"query over {where}{' (dry run)' if args.dry_run else ''}")
    return 0


# -- quarantine -----------------------------------------------------------------------------------


def _owner(item: dict[str, Any]) -> str:
    route = f" route={item['route_id']}" if item.get("route_id") else ""
    return (
        f"user={item.get('user_id')} agent={item.get('agent_id')} space={item.get('memory_space_id')}{route}"
    )


def _print_held(items: list[dict[str, Any]], out: TextIO) -> None:
    if not items:
        print("no memories are held for review", file=out)
        return
    print(f"{plural(len(items), 'memory', 'memories')} held for review:", file=out)
    for item in items:
        title = one_line(str(item.get("title") or "")) or "(no title)"
        body = one_line(str(item.get("body") or ""))
        why = ", ".join(item.get("reasons") or []) or "-"
        found = f" (found: {', '.join(item['findings'])})" if item.get("findings") else ""
        print(f"\n  {shown(str(item['id']))}  {title}", file=out)
        print(f"    owner:   {shown(_owner(item))}  visibility={item.get('visibility')}", file=out)
        print(f"    why:     {why}{found}; origin={item.get('origin') or '-'}", file=out)
        print(f"    held:    {item.get('held_at')}  expires {item.get('expires_at')}", file=out)
        text = body if cell_width(body) <= PREVIEW_CELLS else fit(body, PREVIEW_CELLS).rstrip()
        print(f"    text:    {text}", file=out)


def cmd_quarantine(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate quarantine list|approve|reject|purge``."""
    if args.action == "list":
        with open_store(args, mode="read", command="quarantine list") as store:
            items = store.quarantine_list(memory_space_id=args.space)
        if args.json:
            for item in items:
                print(json_line(item), file=out)
        else:
            _print_held(items, out)
        return 0
    with open_store(args, mode="write", command=f"quarantine {args.action}") as store:
        if args.action == "approve":
            d = store.quarantine_approve(args.id, reviewer=args.reviewer)
            if d.stored:
                print(f"{args.id}: approved, written as {d.id} (confirmed)", file=out)
            else:
                why = ", ".join(r.value for r in d.reasons) or d.action.value
                print(f"{args.id}: not written ({d.action.value}: {why})", file=out)
        elif args.action == "reject":
            if not store.quarantine_reject(args.id):
                raise InputError(
                    f"no memory {args.id!r} is held for review (see `recall-gate quarantine list`)"
                )
            print(f"{args.id}: discarded", file=out)
        else:
            n = store.quarantine_purge()
            print(f"purged {plural(n, 'expired held memory', 'expired held memories')}", file=out)
    return 0


# -- forget ---------------------------------------------------------------------------------------


def cmd_forget(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate forget``: delete everything derived from a source record and tombstone it.

    An unknown source is not an error (exit 0, so a repeated forget in a script succeeds), but
    the command says so on stderr: nothing came from it, and it is tombstoned anyway, so records
    from it are refused if they arrive later.
    """
    with open_store(args, mode="write", command="forget") as store:
        already = store.tombstoned(args.source, None)
        report = store.forget(args.source)
    if args.json:
        print(json_line(report), file=out)
    else:
        print(
            f"forgot source {shown(args.source)!r}: {plural(report['memories'], 'memory', 'memories')} deleted, "
            f"{plural(report['quarantined'], 'held memory', 'held memories')} discarded; "
            "it is tombstoned (records from it are refused)",
            file=out,
        )
    if not report["memories"] and not report["quarantined"]:
        note = (
            "it had been forgotten before"
            if already
            else "no memory or held memory came from it (check the id for a typo)"
        )
        print(f"recall-gate: warning: source {shown(args.source)!r}: {note}", file=sys.stderr)
    return 0


def cmd_compact(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate compact``: deleted text leaves the bytes of a store's (or a stopped server's) folder (L2)."""
    if args.server_folder:
        from ..store.erasure import compact_chroma

        folder = Path(args.server_folder)
        if not (folder / "chroma.sqlite3").is_file():
            raise InputError(f"no Chroma folder at {folder}: it holds no chroma.sqlite3")
        report = compact_chroma(folder)
    else:
        with open_store(args, mode="write", command="compact") as store:
            report = store.compact()
    if args.json:
        print(json_line(report), file=out)
    else:
        print(f"compacted: {report.get('scrubbed', 0)} log rows scrubbed, {report.get('ms', 0)} ms", file=out)
    return 0
