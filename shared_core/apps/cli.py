"""The ``recall-gate`` command.

Subcommands: ``gate`` (replay the recall gate over exported hits), ``demo`` (show the gate on
the embedded default). Exit status: 0 on success, 2 on bad input or misuse (with a message on
stderr that names lines and fields, never memory text), 1 on infrastructure failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, TextIO

from ..config import ConfigBook, load_config
from ..errors import HitParseError, InputError, RecallGateError
from ..model import Scope
from ..recall.gate import GateResult, RecallGate
from ..timeutil import parse_datetime

__all__ = ["main", "read_hits_jsonl"]

Command = Callable[[argparse.Namespace, TextIO], int]


def read_hits_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read exported hits, one JSON object per line (blank lines skipped).

    Raises:
        InputError: if the file cannot be read.
        HitParseError: naming the first line that is not a JSON object.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"hits file not found: {p}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read hits file {p}: {type(exc).__name__}") from None
    out: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HitParseError(f"not valid JSON ({exc.msg} at column {exc.colno})", line=number) from None
        if not isinstance(obj, dict):
            raise HitParseError(f"expected a JSON object, got {type(obj).__name__}", line=number)
        out.append(obj)
    return out


def _shown(text: str) -> str:
    """Text safe to print on a UTF-8 stream: a lone surrogate is shown as a backslash escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _json_line(obj: Any) -> str:
    """One line of JSON; if it holds a lone surrogate (not valid UTF-8), it is written escaped."""
    text = json.dumps(obj, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj)
    return text


def _fmt_score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_result(result: GateResult, out: TextIO, *, title: str | None = None) -> None:
    """Print a gate result as a readable table (accepted, then rejected with reasons)."""
    if title:
        print(title, file=out)
    print(f"  accepted ({len(result.accepted)}):", file=out)
    for rank, hit in enumerate(result.accepted, start=1):
        p = hit.provenance()
        channels = "+".join(p["channels"]) or "imported"
        print(
            f"    {rank}. {_shown(hit.record.id):<24} sem={_fmt_score(hit.score)}"
            f" lex={_fmt_score(hit.lexical_score)} via={channels:<14} {_shown(hit.record.title[:48])}",
            file=out,
        )
    print(f"  rejected ({len(result.rejected)}):", file=out)
    for rej in result.rejected:
        others = [r.value for r in rej.reasons[1:]]
        more = f" (also: {', '.join(others)})" if others else ""
        print(f"    - {_shown(rej.id):<24} {rej.reason.value:<15}{more}", file=out)


def _cmd_gate(args: argparse.Namespace, out: TextIO) -> int:
    scope = Scope.parse(args.scope)
    book = load_config(args.config) if args.config else ConfigBook()
    now = parse_datetime(args.now) if args.now else None
    hits = read_hits_jsonl(args.hits)
    result = RecallGate(book).evaluate(hits, scope=scope, now=now, query=args.query, dry_run=args.dry_run)
    if args.json:
        print(_json_line(result.to_json_dict()), file=out)
    else:
        print_result(result, out, title=f"recall gate over {len(hits)} hit(s) from {args.hits}")
        print(f"  config {result.audit.config_hash}, {result.audit.elapsed_ms:.2f} ms", file=out)
    return 0


def _open_store(args: argparse.Namespace, *, read_only: bool = False) -> Any:
    from ..store import MemoryStore

    book = load_config(args.config) if getattr(args, "config", None) else None
    return MemoryStore(args.store, config=book, read_only=read_only)


def _cmd_add(args: argparse.Namespace, out: TextIO) -> int:
    from tqdm import tqdm

    items = read_hits_jsonl(args.input)
    counts: dict[str, int] = {}
    with _open_store(args) as store:
        batch = max(1, args.batch)
        bar = tqdm(total=len(items), unit="memory", disable=not args.progress, file=sys.stderr)
        for start in range(0, len(items), batch):
            for d in store.add(items[start : start + batch], dry_run=args.dry_run):
                counts[d.action.value] = counts.get(d.action.value, 0) + 1
                if args.json:
                    print(json.dumps(d.model_dump(mode="json") | {"index": d.index + start}), file=out)
            bar.update(min(batch, len(items) - start))
        bar.close()
    if not args.json:
        summary = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) or "nothing"
        print(
            f"{len(items)} item(s) from {args.input}{' (dry run)' if args.dry_run else ''}: {summary}",
            file=out,
        )
    return 0


def _cmd_query(args: argparse.Namespace, out: TextIO) -> int:
    scope = Scope.parse(args.scope)
    with _open_store(args, read_only=args.dry_run) as store:
        result = store.query(args.text, scope=scope, k=args.k, dry_run=args.dry_run)
    if args.json:
        print(_json_line(result.to_json_dict()), file=out)
    else:
        print_result(result, out, title=f"query over {args.store}{' (dry run)' if args.dry_run else ''}")
    return 0


def _cmd_quarantine(args: argparse.Namespace, out: TextIO) -> int:
    with _open_store(args) as store:
        if args.action == "list":
            for item in store.quarantine_list():
                print(json.dumps(item, ensure_ascii=False), file=out)
        elif args.action == "approve":
            d = store.quarantine_approve(args.id)
            print(f"{args.id}: {d.action.value} {d.id or ''}".rstrip(), file=out)
        elif args.action == "reject":
            if not store.quarantine_reject(args.id):
                raise InputError(f"no quarantined candidate {args.id!r}")
            print(f"{args.id}: discarded", file=out)
        else:
            print(f"purged {store.quarantine_purge()} expired candidate(s)", file=out)
    return 0


def _cmd_forget(args: argparse.Namespace, out: TextIO) -> int:
    with _open_store(args) as store:
        report = store.forget(args.source)
    print(json.dumps(report, ensure_ascii=False), file=out)
    return 0


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from ..evaluation import run_eval_command

    return run_eval_command(args, out)


def _cmd_mcp(args: argparse.Namespace, out: TextIO) -> int:
    from .mcp_server import run_mcp_command

    return run_mcp_command(args, out)


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import run_demo

    return run_demo(out, keep=args.keep)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recall-gate",
        description="Gate what an agent's long-term memory may recall and write.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("gate", help="replay the recall gate over exported hits (JSON lines)")
    g.add_argument("--hits", required=True, help="JSONL file, one hit per line (the seeds' MemoryHit shape)")
    g.add_argument("--scope", required=True, help="user=U,agent=A,space=S[,route=R]")
    g.add_argument("--config", help="TOML file with [gate] and [spaces.NAME.gate] tables")
    g.add_argument("--now", help="ISO 8601 instant to evaluate at (default: now)")
    g.add_argument("--query", help="the query text (for the short-query threshold and audit hash)")
    g.add_argument("--dry-run", action="store_true", help="mark the audit record as a preview")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    g.set_defaults(func=_cmd_gate)

    a = sub.add_parser("add", help="write memories from a JSONL file through the write gate")
    a.add_argument("--store", required=True, help="store folder (created if missing)")
    a.add_argument("--input", required=True, help="JSONL file, one memory per line")
    a.add_argument("--config", help="TOML config file")
    a.add_argument("--batch", type=int, default=64, help="memories per write batch")
    a.add_argument("--dry-run", action="store_true", help="decide without writing")
    a.add_argument("--json", action="store_true", help="one JSON decision per line")
    a.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    a.set_defaults(func=_cmd_add)

    q = sub.add_parser("query", help="hybrid retrieval in a scope, then the recall gate")
    q.add_argument("--store", required=True)
    q.add_argument("--scope", required=True, help="user=U,agent=A,space=S[,route=R]")
    q.add_argument("--config", help="TOML config file")
    q.add_argument("-k", type=int, default=None, help="at most k accepted hits")
    q.add_argument("--dry-run", action="store_true", help="preview: opens the store read-only")
    q.add_argument("--json", action="store_true")
    q.add_argument("text", help="the question")
    q.set_defaults(func=_cmd_query)

    qu = sub.add_parser("quarantine", help="review held candidates (W6)")
    qu.add_argument("action", choices=["list", "approve", "reject", "purge"])
    qu.add_argument("id", nargs="?", help="quarantine id (approve, reject)")
    qu.add_argument("--store", required=True)
    qu.set_defaults(func=_cmd_quarantine)

    f = sub.add_parser("forget", help="delete everything derived from a source record (L2)")
    f.add_argument("--source", required=True, help="source_record_id")
    f.add_argument("--store", required=True)
    f.set_defaults(func=_cmd_forget)

    e = sub.add_parser("eval", help="evaluate retrieval and gating on labeled cases (E1)")
    e.add_argument(
        "cases", nargs="?", help="cases JSONL (query, scope, expected_memory_ids, must_not_return)"
    )
    e.add_argument("--store", help="store folder the cases refer to")
    e.add_argument(
        "--beir", help="a BEIR folder (corpus.jsonl, queries*.jsonl, qrels/) instead of a cases file"
    )
    e.add_argument("--split", default="train", help="BEIR qrels split (default: train)")
    e.add_argument("--limit", type=int, default=None, help="evaluate at most this many queries")
    e.add_argument("-k", type=int, default=10, help="cut-off K for the metrics")
    e.add_argument("--json", action="store_true", help="print the metrics as JSON")
    e.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    e.set_defaults(func=_cmd_eval)

    m = sub.add_parser("mcp", help="serve memory_save / memory_recall / memory_preview over MCP stdio (A4)")
    m.add_argument("--store", required=True, help="store folder")
    m.add_argument("--config", help="TOML config file")
    m.set_defaults(func=_cmd_mcp)

    d = sub.add_parser("demo", help="build a memory space offline and show what the gate accepts and rejects")
    d.add_argument("--keep", action="store_true", help="keep the demo store folder instead of deleting it")
    d.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    out = out or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    if getattr(args, "action", None) in ("approve", "reject") and not args.id:
        parser.error(f"quarantine {args.action} needs an ID")
    try:
        return func(args, out)
    except (InputError, ValueError) as exc:  # includes ScopeError, ConfigError, HitParseError
        print(f"recall-gate: error: {exc}", file=sys.stderr)
        return 2
    except RecallGateError as exc:
        print(f"recall-gate: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def example_hits_path() -> Path:
    """Path of the example hits file shipped with the package."""
    return Path(str(files("shared_core") / "data" / "example_hits.jsonl"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
