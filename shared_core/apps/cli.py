"""The ``recall-gate`` command.

Subcommands: ``gate`` (replay the recall gate over exported hits), ``add``, ``query``,
``quarantine``, ``forget`` (the store, see :mod:`.commands`), ``eval``, ``mcp`` (the store as MCP
tools, see :mod:`.mcp_server`), ``demo`` and ``review`` (the operator's review page, :mod:`.review`).

Exit status: 0 on success; 2 on bad input or misuse (a message on stderr that names files,
lines and fields, never memory text); 1 when the store or its infrastructure fails; 141 when
the reader of the output went away (``recall-gate query ... | head``), quietly, like other
command-line tools killed by ``SIGPIPE``.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any, TextIO

from ..config import ConfigBook, load_config
from ..errors import InputError, RecallGateError
from ..evaluation.calibrate import add_calibrate_parser
from ..model import Origin, Scope
from ..timeutil import parse_datetime
from ..version import __version__
from .commands import (
    add_store_arguments,
    cmd_add,
    cmd_compact,
    cmd_forget,
    cmd_quarantine,
    cmd_query,
    default_reviewer,
)
from .output import json_line, print_result
from .review import add_review_parser

__all__ = ["EXIT_PIPE", "example_hits_path", "main", "print_result", "read_hits_jsonl"]

Command = Callable[[argparse.Namespace, TextIO], int]
EXIT_PIPE = 141  # 128 + SIGPIPE, what a shell shows for a tool whose reader closed the pipe

_SCOPE_HELP = "who is asking: user=U,agent=A,space=S[,route=R] (all but route required)"


def read_hits_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read exported hits, one JSON object per line (blank lines skipped).

    Raises:
        InputError: if the file cannot be read.
        HitParseError: naming the first line that is not a JSON object.
    """
    from ..model.jsonl import read_jsonl as read_records

    return read_records(path, what="hits file")


def _cmd_gate(args: argparse.Namespace, out: TextIO) -> int:
    from ..recall.gate import RecallGate

    scope = Scope.parse(args.scope)
    book = load_config(args.config) if args.config else ConfigBook()
    now = parse_datetime(args.now) if args.now else None
    hits = read_hits_jsonl(args.hits)
    result = RecallGate(book).evaluate(hits, scope=scope, now=now, query=args.query, dry_run=args.dry_run)
    if args.json:
        print(json_line(result.to_json_dict()), file=out)
    else:
        print_result(result, out, title=f"recall gate over {len(hits)} hit(s) from {args.hits}")
        print(f"  config {result.audit.config_hash}, {result.audit.elapsed_ms:.2f} ms", file=out)
    return 0


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    from ..evaluation import run_eval_command

    return run_eval_command(args, out)


def _cmd_mcp(args: argparse.Namespace, out: TextIO) -> int:
    from .mcp_command import run_mcp_command

    return run_mcp_command(args, out)


def _cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    from .demo import run_demo

    return run_demo(out, keep=args.keep)


def _line_format() -> str:
    from ..write.candidate import CANDIDATE_FIELDS

    required = ("body", "user_id", "agent_id", "memory_space_id")
    optional = ", ".join(f for f in sorted(CANDIDATE_FIELDS) if f not in required)
    wrapped = textwrap.fill(optional, width=88, initial_indent="    ", subsequent_indent="    ")
    return (
        "line format:\n"
        "  One JSON object per line (blank lines are skipped): the record shape every way into\n"
        "  memory shares (shared_core.write.MemoryCandidate).\n"
        "  required: body, user_id, agent_id, memory_space_id (the owner fields may be left out\n"
        "    with --scope, which fills them in)\n"
        f"  optional:\n{wrapped}\n"
        "  values: visibility private|shared; status approved|draft|rejected|quarantined; tier\n"
        "    tentative|confirmed|working; origin " + "|".join(o.value for o in Origin) + ";\n"
        "    times ISO 8601 (a time without a zone is UTC); supersedes an id or a list of ids.\n"
        "  example:\n"
        '    {"title": "Posting policy", "body": "Posts go out at 10:00 JST.", "user_id": "u1",\n'
        '     "agent_id": "writer", "memory_space_id": "brand", "origin": "user_explicit"}\n\n'
        "  A record with an unknown or malformed field is rejected, naming the field (never its\n"
        "  value); a line that is not a JSON object stops the whole file before anything is written.\n"
        "  What a person stated (origin user_explicit) is recalled at once; agent notes start\n"
        "  tentative; untrusted sources and instructions aimed at the agent are held for review."
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="recall-gate",
        description="Gate what an agent's long-term memory may recall and write.",
    )
    parser.add_argument("--version", action="version", version=f"recall-gate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    g = sub.add_parser(
        "gate",
        help="replay the recall gate over hits exported from another memory system",
        description="Decide, for each exported hit, whether it may reach the model, and why not.",
    )
    g.add_argument(
        "--hits", required=True, metavar="FILE", help="JSON-lines file, one hit per line (see README)"
    )
    g.add_argument("--scope", required=True, help=_SCOPE_HELP)
    g.add_argument(
        "--config", metavar="FILE", help="TOML settings file ([gate] and [spaces.NAME.gate] tables)"
    )
    g.add_argument("--now", metavar="TIME", help="ISO 8601 instant to evaluate at (default: now)")
    g.add_argument("--query", metavar="TEXT", help="the query text (short queries need a higher score)")
    g.add_argument("--dry-run", action="store_true", help="mark the audit record as a preview")
    g.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    g.set_defaults(func=_cmd_gate)

    a = sub.add_parser(
        "add",
        help="write memories from a JSON-lines file through the write gate",
        description=textwrap.fill(
            "Write memories through the write gate: credentials are refused, personal data masked, "
            "untrusted or instruction-like text held for review, duplicates merged. Prints the "
            "counts by action and reason, and each problem with its line and field.",
            width=88,
        ),
        epilog=_line_format(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_arguments(a, creates=True)
    a.add_argument(
        "--input", required=True, metavar="FILE", help="JSON-lines file, one memory per line (format below)"
    )
    a.add_argument(
        "--scope",
        help="pin the owner: user=U,agent=A,space=S[,route=R]; records naming another owner are "
        "rejected (scope_mismatch), records naming none get this one (default: each record names its owner)",
    )
    a.add_argument(
        "--origin",
        choices=[o.value for o in Origin],
        metavar="ORIGIN",
        help=f"one of {', '.join(o.value for o in Origin)}: "
        "the most trusted origin the file may claim: records claiming more are lowered "
        "(trust_lowered) and their own evidence claims (cited, confirmations, evidence_count) are "
        "ignored (default: records' claims honoured, as you vouch for the file)",
    )
    a.add_argument(
        "--cited", action="store_true", help="with --origin: vouch that the records are grounded in a source"
    )
    a.add_argument(
        "--private",
        action="store_true",
        help="write every record private to its owner: records asking for visibility shared are "
        "lowered (trust_lowered: visibility) (default: records' visibility honoured; private when unset)",
    )
    a.add_argument(
        "--batch", type=int, default=64, metavar="N", help="memories per write batch (default: 64)"
    )
    a.add_argument("--dry-run", action="store_true", help="decide without writing anything")
    a.add_argument(
        "--json",
        action="store_true",
        help="one JSON decision per line, with the line number and field-level detail",
    )
    a.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    a.set_defaults(func=cmd_add)

    q = sub.add_parser(
        "query",
        help="ask a question in a scope: hybrid retrieval, then the recall gate",
        description=(
            "Search the scope's memories (keyword and vector), then show what the recall gate "
            "accepted and what it rejected with the reasons. Opens the store read-only, so it "
            "works while `recall-gate mcp` serves it."
        ),
    )
    add_store_arguments(q)
    q.add_argument("--scope", required=True, help=_SCOPE_HELP)
    q.add_argument("-k", type=int, default=None, help="at most k accepted memories")
    q.add_argument("--dry-run", action="store_true", help="preview: marked as such in the audit log")
    q.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    q.add_argument("text", help="the question")
    q.set_defaults(func=cmd_query)

    qu = sub.add_parser(
        "quarantine",
        help="review memories held back by the write gate",
        description=(
            "list: what is held, with title, text, owner and why (read-only: works while a server "
            "runs). approve ID: write it as a confirmed memory. reject ID: discard it. purge: discard "
            "expired ones. approve, reject and purge need the writer (stop `recall-gate mcp`, or use "
            "the review page)."
        ),
    )
    qu.add_argument("action", choices=["list", "approve", "reject", "purge"], help="what to do")
    qu.add_argument("id", nargs="?", help="the held memory's id (approve, reject)")
    add_store_arguments(qu)
    qu.add_argument("--space", metavar="SPACE", help="list: only this memory space")
    qu.add_argument("--json", action="store_true", help="list: one JSON object per held memory (full text)")
    qu.add_argument(
        "--reviewer", default=default_reviewer(), help="approve: who approves (default: your login name)"
    )
    qu.set_defaults(func=cmd_quarantine)

    f = sub.add_parser(
        "forget",
        help="delete everything derived from a source record, for good",
        description=(
            "Delete every memory and held memory derived from a source record, and tombstone the "
            "source so that records from it are refused if they arrive again. Forgetting a source "
            "nothing came from is not an error (exit 0) but prints a warning."
        ),
    )
    f.add_argument("--source", required=True, help="the source_record_id to forget")
    add_store_arguments(f)
    f.add_argument("--json", action="store_true", help="print the report as JSON")
    f.set_defaults(func=cmd_forget)

    c = sub.add_parser(
        "compact",
        help="make deleted text leave the disk (forget does this itself on an embedded store)",
        description=(
            "Scrub Chroma's write-ahead log, merge its full-text index, VACUUM the database and zero "
            "the unused HNSW capacity, so that forgotten and deleted text is in no byte of the "
            "folder. `forget` runs it on an embedded store; run it on a schedule for a store opened "
            "with erase_on_forget=False, or with --server-folder on the folder of a stopped "
            "`chroma run --path DIR`."
        ),
    )
    where = c.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", metavar="DIR", help="the store folder (needs the writer)")
    where.add_argument(
        "--server-folder", metavar="DIR", help="the --path folder of a Chroma server that has stopped"
    )
    c.add_argument("--json", action="store_true", help="print the counts as JSON")
    c.set_defaults(func=cmd_compact, chroma_host=None, chroma_port=8000)

    e = sub.add_parser(
        "eval",
        help="measure retrieval and gating on labelled cases",
        description="Recall, precision and nDCG of the accepted memories on labelled cases (read-only).",
    )
    e.add_argument(
        "cases", nargs="?", help="cases file, JSON lines (query, scope, expected_memory_ids, must_not_return)"
    )
    e.add_argument(
        "--store", metavar="DIR", help="the store folder the cases refer to (must exist; opened read-only)"
    )
    e.add_argument(
        "--beir",
        metavar="DIR",
        help="a BEIR folder (corpus.jsonl, queries*.jsonl, qrels/) instead of a cases file",
    )
    e.add_argument("--split", default="train", help="BEIR relevance split (default: train)")
    e.add_argument("--limit", type=int, default=None, help="evaluate at most this many queries")
    e.add_argument("-k", type=int, default=10, help="cut-off K for the metrics (default: 10)")
    e.add_argument("--json", action="store_true", help="print the metrics as JSON")
    e.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    e.set_defaults(func=_cmd_eval)

    from .mcp_command import add_mcp_arguments

    m = sub.add_parser(
        "mcp",
        help="serve the store as MCP tools (memory_save, memory_recall, memory_preview) over stdio",
        description=(
            "Serve one identity's memories to an MCP client over stdio. The scope is fixed when "
            "the server starts (--user/--agent/--space, or an identities file): tools take no user "
            "id and cannot reach another scope; what the agent saves is trusted at most as --origin."
        ),
    )
    add_mcp_arguments(m)
    m.set_defaults(func=_cmd_mcp)

    d = sub.add_parser(
        "demo",
        help="build a small memory space offline and show what the gate accepts and rejects",
    )
    d.add_argument(
        "--keep",
        action="store_true",
        help="keep the demo's store folder and audit log instead of deleting them",
    )
    d.set_defaults(func=_cmd_demo)

    add_review_parser(sub)
    add_calibrate_parser(sub).set_defaults(func=_cmd_calibrate)
    return parser


def _cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    from ..evaluation.calibrate import run_calibrate_command

    return run_calibrate_command(args, out)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout without a file descriptor (tests)
        pass


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    out = out or sys.stdout
    parser = _parser()
    args = parser.parse_args(argv)
    func: Command = args.func
    if getattr(args, "action", None) in ("approve", "reject") and not args.id:
        parser.error(
            f"quarantine {args.action} needs the held memory's ID (see `recall-gate quarantine list`)"
        )
    try:
        code = func(args, out)
        out.flush()
        return code
    except BrokenPipeError:
        _quiet_stdout()
        return EXIT_PIPE
    except (InputError, ValueError) as exc:  # includes ScopeError, ConfigError, HitParseError
        print(f"recall-gate: error: {exc}", file=sys.stderr)
        return 2
    except RecallGateError as exc:
        print(f"recall-gate: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("recall-gate: interrupted", file=sys.stderr)
        return 130


def example_hits_path() -> Path:
    """Path of the example hits file shipped with the package."""
    return Path(str(files("shared_core") / "data" / "example_hits.jsonl"))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
