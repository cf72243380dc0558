"""``recall-gate eval``: a case file against a store, or a BEIR folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from ..errors import InputError
from .beir import beir_cases, beir_store, load_beir
from .cases import load_cases
from .runner import evaluate_cases

__all__ = ["run_eval_command"]


def run_eval_command(args: argparse.Namespace, out: TextIO) -> int:
    """``recall-gate eval``: a case file against a store, or a BEIR folder; returns the exit status.

    Raises:
        InputError: on missing or conflicting arguments and unreadable inputs.
    """
    k = args.k
    if not isinstance(k, int) or k < 1:
        raise InputError("-k must be a positive integer")
    if args.beir and args.cases:
        raise InputError("give either a cases file or --beir, not both")
    if args.beir:
        data = load_beir(args.beir, split=args.split, limit=args.limit)
        if not data.query_ids:
            raise InputError(f"no judged queries in {args.beir} for split {args.split!r}")
        with beir_store(data, progress=args.progress) as store:
            report = evaluate_cases(
                store,
                beir_cases(data),
                k=k,
                progress=args.progress,
                source=f"BEIR {data.name}/{args.split} ({len(data.doc_ids)} documents)",
            )
    else:
        if not args.cases:
            raise InputError("give a cases file (with --store) or --beir FOLDER")
        if not args.store:
            raise InputError("a cases file needs --store DIR (the store its ids refer to)")
        if not Path(args.store).is_dir():
            raise InputError(f"store folder not found: {args.store}")
        cases = load_cases(args.cases)
        if args.limit is not None:
            cases = cases[: max(0, args.limit)]
        from ..store import MemoryStore

        with MemoryStore(args.store, read_only=True) as store:
            report = evaluate_cases(store, cases, k=k, progress=args.progress, source=str(args.store))
    if args.json:
        print(json.dumps(report.to_json_dict(), ensure_ascii=False), file=out)
    else:
        print(report.format_table(), file=out)
    return 0
