"""What dedup does to memories exported from other systems: merged, superseded, kept (W2, issue 15 item 4).

The LoCoMo and SituatedQA dev exports (``../shared/data/{locomo_dev,sqa_dev}/memories.jsonl``) are
written as ``recall-gate add`` writes them: ``store.add`` in batches of 64 into a store on disk with the
offline MiniLM default and the default ``dedup_threshold`` (0.92) and ``correction_threshold`` (0.6).
Printed per set: the actions, how many memories dedup superseded as a changed fact (``changed_fact``) or
merged, and how many of those are the expected evidence of a labelled case (``cases.jsonl``), which a
supersede hides from recall and a merge folds into another memory. Then a table of hand-written pairs:
each kind of near-duplicate and what the write gate makes of it.

    python benchmarks/dedup_eval.py                  # ~8 minutes on 2 cores (1,330 labelled pairs, one store each)
    python benchmarks/dedup_eval.py --data ../shared/data
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shared_core import MemoryStore  # noqa: E402
from shared_core.write import WriteDecision  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
BATCH = 64  # recall-gate add's default

PAIRS: tuple[tuple[str, str, str], ...] = (
    ("a number", "The billing cycle is limited to 27 per minute.", "The billing cycle is limited to 16 per minute."),
    ("a name", "Alice owns the launch checklist now.", "Bob owns the launch checklist now."),
    ("a negation", "Refunds are allowed after manager review.", "Refunds are not allowed after manager review."),
    ("a word", "Use the small model for drafts.", "Use the large model for drafts."),
    ("a relative date", "The report is due next week.", "The report is due this week."),
    ("the order", "The user prefers tea over coffee.", "The user prefers coffee over tea."),
    ("a synonym", "User likes pizza.", "User loves pizza."),
    ("a word added", "The dose is one tablet a day.", "The dose is one tablet twice a day."),
    ("a sign", "The freezer is set to -18 degrees.", "The freezer is set to 18 degrees."),
    (
        "several values (one template)",
        "Invoice 2024-001 for ACME Corp, amount $1,200, was paid on March 3 by bank transfer.",
        "Invoice 2024-002 for ACME Corp, amount $1,500, was paid on March 10 by bank transfer.",
    ),
    ("punctuation", "The kite shed is behind the boathouse.", "The kite shed is behind the boathouse!"),
    ("an article", "User enjoys hiking on weekends.", "User enjoys hiking on the weekends."),
    ("two turns", "Joanna: Awesome! Enjoy yourself!", "Joanna: Later, take care!"),
)


def load_set(folder: Path) -> dict[str, object]:
    items = [json.loads(line) for line in (folder / "memories.jsonl").read_text(encoding="utf-8").splitlines()]
    evidence: set[str] = set()
    for line in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        evidence.update(json.loads(line)["expected_memory_ids"])
    tmp = Path(tempfile.mkdtemp(prefix="rg-dedup-"))
    try:
        store = MemoryStore(tmp / "store")
        actions: Counter[str] = Counter()
        by_dedup: list[str] = []
        merged: list[str] = []
        for start in range(0, len(items), BATCH):
            part = items[start : start + BATCH]
            for d in store.add(part):
                actions[d.action.value] += 1
                if d.action.value == "update" and "changed_fact" in {r.value for r in d.reasons} and d.existing_id:
                    by_dedup.append(d.existing_id)  # the memory the new one supersedes
                if d.action.value == "merge":
                    merged.append(str(part[d.index].get("id")))  # the record folded into another
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {
        "memories": len(items),
        "actions": dict(actions),
        "superseded": len(by_dedup),
        "superseded evidence": sum(i in evidence for i in by_dedup),
        "merged": len(merged),
        "merged evidence": sum(i in evidence for i in merged),
    }


def second_write(old: str, new: str) -> tuple[float, WriteDecision]:
    """The MiniLM cosine of two texts and the decision on ``new`` written after ``old`` (two sources)."""
    store = MemoryStore.in_memory()
    try:
        scope = {"user_id": "u", "agent_id": "a", "memory_space_id": "s", "origin": "user_explicit"}
        store.add([{**scope, "body": old, "source_record_id": "one"}])
        [d] = store.add([{**scope, "body": new, "source_record_id": "two"}])
        vectors = store.embedder.embed_documents([old, new])
        return float(vectors[0] @ vectors[1]), d
    finally:
        store.close()


def pairs_table() -> list[tuple[str, str, str]]:
    rows = []
    for kind, old, new in PAIRS:
        cosine, d = second_write(old, new)
        rows.append((kind, f"{cosine:.3f}", f"{d.action.value} ({', '.join(r.value for r in d.reasons) or '-'})"))
    return rows


CHANGE_PAIRS = Path(__file__).resolve().parent / "data" / "dedup_change_pairs.jsonl"
"""Pairs of notes that differ in one value, labelled ``correction`` (the new value replaces the old: an
account, a room, a version, who holds a role, a manager, a deadline) or ``distinct`` (both true: two
invoices, two tickets, two people each doing something, two languages a user speaks, two offices), by
split: ``red_team`` (150, written knowing the rules of 2026-12-05), ``dev2`` / ``dev3`` (written blind by
helpers: distinct records of one template), ``dev4`` / ``dev5`` (written blind on 2026-12-06: a slot that
holds one value against a relation that holds many; the record-change model of dedup is trained on these
five, ``benchmarks/train_record_change.py``) and ``blind`` / ``blind2`` (written blind, measured, never
trained on; ``blind2`` like ``dev4`` / ``dev5``)."""


def change_table() -> dict[tuple[str, str, str], int]:
    """``(split, kind, outcome) -> pairs``: outcome ``superseded`` (the old memory hidden), ``beside``
    (both current, ``changed_fact``) or ``not near`` (both written as unrelated: under the cosine
    threshold, or other words)."""
    counts: Counter[tuple[str, str, str]] = Counter()
    for line in CHANGE_PAIRS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        _, d = second_write(row["old"], row["new"])
        reasons = {r.value for r in d.reasons}
        outcome = "superseded" if "supersedes" in reasons else ("beside" if "changed_fact" in reasons else "not near")
        counts[(row["split"], row["kind"], outcome)] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the shared data folder")
    args = parser.parse_args(argv)
    print("| set | memories | actions | superseded as a changed fact (of them evidence) | merged (of them evidence) |")
    print("| --- | ---: | --- | ---: | ---: |")
    for name in ("locomo_dev", "sqa_dev"):
        r = load_set(args.data / name)
        print(
            f"| {name} | {r['memories']} | {r['actions']} | {r['superseded']} ({r['superseded evidence']}) "
            f"| {r['merged']} ({r['merged evidence']}) |"
        )
    print()
    print("| the new memory differs in | cosine (MiniLM) | decision |")
    print("| --- | ---: | --- |")
    for kind, cosine, decision in pairs_table():
        print(f"| {kind} | {cosine} | {decision} |")
    print()
    counts = change_table()
    print("| one value changed (labelled pairs) | split | superseded | beside | not near |")
    print("| --- | --- | ---: | ---: | ---: |")
    for split in sorted({k[0] for k in counts}):
        for kind, label in (("correction", "a corrected value (should supersede)"), ("distinct", "another record (should be beside)")):
            c = [counts[(split, kind, o)] for o in ("superseded", "beside", "not near")]
            print(f"| {label} | {split} | {c[0]} | {c[1]} | {c[2]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
