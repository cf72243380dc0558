"""``recall-gate review``: the operator's desk, a local web page over one memory store (W6, L1, R8-R10).

Quarantine queue with approve / reject, a memory's correction history, "why was this (not)
recalled?" dry-runs with a what-if, and the audit log with its hash-chain check. Served on
127.0.0.1 behind an unguessable token (see :mod:`.security`); Starlette, uvicorn and Jinja2.

This module only wires the command: the web stack is imported when the command runs, so
``recall-gate --help`` and the other commands do not pay for it. To add the command to a parser::

    from shared_core.apps.review import add_review_parser
    add_review_parser(subparsers)   # sets func=run_review_command
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any, TextIO

__all__ = ["add_review_parser", "run_review_command"]


def _default_reviewer() -> str:
    try:
        return getpass.getuser() or "operator"
    except (KeyError, OSError):  # no login name (some containers)
        return "operator"


def add_review_parser(subparsers: Any) -> None:
    """Add the ``review`` subcommand to an ``argparse`` subparsers object.

    Args:
        subparsers: what ``ArgumentParser.add_subparsers()`` returned.
    """
    r = subparsers.add_parser(
        "review",
        help="serve a local web page to review quarantine, memory history, recall decisions and the audit log",
        description=(
            "Serve the operator's review page for a store on 127.0.0.1. It prints a link with a "
            "secret token; open it in a browser. Approving a held memory writes it through the "
            "store's write gate. The page holds the store's writer lock until you stop it (Ctrl-C)."
        ),
    )
    r.add_argument("--store", required=True, help="store folder (must exist)")
    r.add_argument("--config", help="TOML config file (the gate settings dry-runs use)")
    r.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, this machine only)"
    )
    r.add_argument("--port", type=int, default=8765, help="port (default: 8765; 0 picks a free one)")
    r.add_argument(
        "--reviewer",
        default=_default_reviewer(),
        help="name filled in as reviewer (default: your login name)",
    )
    r.set_defaults(func=run_review_command)


def run_review_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``recall-gate review`` (see :func:`add_review_parser`); returns the exit status."""
    from .server import run_review_command as run

    return run(args, out)
