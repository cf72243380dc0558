"""The relevance decision of the recall gate, measured: precision/recall operating points (issue 11).

Data (all tuning data; nothing held out is read):

* LoCoMo dev (``../shared/data/locomo_dev``): 7 conversations, 4,431 dialogue turns loaded **as
  exported** through the full write gate (``evaluation.exported_store``); 1,080 questions asked in
  their own scope (expected = evidence turns) and the same 1,080 asked in another user's scope
  (``cross_user_probe``: nothing there is on topic, and nothing foreign may come back).
* SituatedQA dev (``../shared/data/sqa_dev``): 400 questions whose answer changed; the old memory
  is superseded (links, validity windows, markers) and must never be accepted.
* SciFact TRAIN (``../shared/data/scifact``): 5,183 abstracts in one scope, 809 judged claims.
* Distractors (``benchmarks/data/distractor_*.jsonl``, written for this project): 8 small spaces of
  workplace notes; 16 questions with one right memory next to vaguely similar ones, 8 questions on
  a topic the space does not hold. Vaguely similar memories must be rejected (seed 000).

Every case is searched once (``store.search``, 50 fused candidates); each operating point then
re-runs only the gate on the same candidates (``evaluation.calibrate``). Columns:

* LoCoMo ``ratio`` = accepted recall@10 / pre-gate recall@10 (target >= 0.95); ``probe+`` = share
  of cross-user probes that accepted anything (own-scope memories, off topic); ``foreign`` =
  accepted memories of another user (must be 0);
* SQA ``rec`` = recall@10 (target >= 0.95), ``sup`` = superseded memories accepted (must be 0);
* SciFact ``nDCG`` gated and the gap to the pre-gate ranking's (target <= 0.03);
* Distractors ``rec``, ``vague`` = vaguely similar memories accepted, ``none+`` = off-topic
  questions that accepted anything; the same for the Japanese/Korean distractor cases
  (``benchmarks/data/distractor_ja_ko_*``: 5 spaces, 10 questions with an answer, 5 without).

Run (repository root; the first run embeds ~10k texts, a few minutes, then cached)::

    python benchmarks/conversational_eval.py            # the operating-point table and the default
    python benchmarks/conversational_eval.py --quick    # fewer points
    python benchmarks/conversational_eval.py --use      # the multilingual extra's calibration
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_core.config import GateConfig
from shared_core.embedding import calibration_of, default_embedding
from shared_core.evaluation import (
    CachedEmbedder,
    beir_cases,
    beir_store,
    cached_vectors,
    evaluate_cases,
    exported_store,
    load_beir,
    load_cases,
)
from shared_core.evaluation.calibrate import OperatingPoint, SearchedCase, operating_point, search_cases

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
HERE = Path(__file__).resolve().parent / "data"
CANDIDATES = 50
K = 10


def _meta(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--quick", action="store_true", help="a coarser grid")
    ap.add_argument("--no-scifact", action="store_true")
    ap.add_argument(
        "--use",
        action="store_true",
        help="the multilingual extra (UniversalSentenceEncoder) instead of MiniLM; SciFact skipped",
    )
    args = ap.parse_args(argv)

    if args.use:
        from shared_core.embedding import UniversalSentenceEncoder

        model: Any = UniversalSentenceEncoder()
        args.no_scifact = True
    else:
        model = default_embedding()
    cal = calibration_of(model)
    default = GateConfig().resolved(cal)
    print(f"embedding {model.name}; shipped calibration: {cal.model_dump(exclude={'source'})}")
    t0 = time.perf_counter()
    sets: dict[str, tuple[object, list[SearchedCase]]] = {}
    refused: dict[str, dict[str, int]] = {}

    for name, folder, prefix in (
        ("locomo", args.data / "locomo_dev", ""),
        ("sqa", args.data / "sqa_dev", ""),
        ("distractor", HERE, "distractor_"),
        ("ja_ko", HERE, "distractor_ja_ko_"),
    ):
        cases = load_cases(folder / f"{prefix}cases.jsonl")
        store, decisions = exported_store(
            folder / f"{prefix}memories.jsonl", embedding=model, config=default, queries=[c.query for c in cases]
        )
        counts: dict[str, int] = {}
        for d in decisions:
            key = d.action.value + (f" ({', '.join(r.value for r in d.reasons)})" if d.reasons else "")
            counts[key] = counts.get(key, 0) + 1
        refused[name] = counts
        searched = search_cases(store, cases, candidates=CANDIDATES)
        if name == "locomo":
            meta = _meta(folder / "cases.meta.jsonl")
            sets["locomo_in"] = (store, [s for s, m in zip(searched, meta, strict=True) if m["kind"] == "in_scope"])
            sets["locomo_probe"] = (store, [s for s, m in zip(searched, meta, strict=True) if m["kind"] != "in_scope"])
        else:
            sets[name] = (store, searched)
        print(f"  {name}: {len(decisions)} records loaded as exported: {counts}; {len(cases)} cases searched")
    if not args.no_scifact:
        data = load_beir(args.data / "scifact", split="train")
        emb = CachedEmbedder(model)
        emb.remember(data.queries, cached_vectors(model, data.queries))
        store = beir_store(data, embedding=emb, config=default)
        sets["scifact"] = (store, search_cases(store, beir_cases(data), candidates=CANDIDATES))
        print(f"  scifact: {len(data.doc_ids)} abstracts, {len(data.queries)} TRAIN claims searched")
    print(f"  searched everything once in {time.perf_counter() - t0:.0f} s\n")

    anchors = (0.5, 0.55, 0.6) if args.quick else (0.45, 0.5, 0.52, 0.55, 0.58, 0.6, 0.65)
    margins = (0.15, 0.25) if args.quick else (0.1, 0.15, 0.2, 0.25, 0.3)
    floors = (0.25,) if args.quick else (0.2, 0.25, 0.3)
    configs = [default.replace(relevance="absolute")] + [
        default.replace(anchor_score=a, relative_margin=m, relative_floor=f)
        for a in anchors
        for m in margins
        for f in floors
    ]
    if default not in configs:
        configs.append(default)

    header = (
        f"| {'operating point':<58} | LoCoMo ratio | probe+ | foreign | SQA rec | sup | SciFact nDCG (gap) "
        "| distr. rec | vague | none+ | ja/ko rec | vague | none+ |"
    )
    print(header)
    print("|" + "|".join("---" for _ in range(header.count("|") - 1)) + "|")
    rows: list[tuple[GateConfig, dict[str, OperatingPoint]]] = []
    for cfg in configs:
        pts = {n: operating_point(st, sc, cfg, k=K) for n, (st, sc) in sets.items()}  # type: ignore[arg-type]
        rows.append((cfg, pts))
        li, lp, sq, di, jk = pts["locomo_in"], pts["locomo_probe"], pts["sqa"], pts["distractor"], pts["ja_ko"]
        sf = pts.get("scifact")
        sf_txt = "n/a" if sf is None else f"{sf.ndcg:.4f} ({(sf.pre_ndcg or 0) - (sf.ndcg or 0):+.4f})"
        mark = " **default**" if cfg == default else ""
        print(
            f"| {li.label:<58}{mark} | {li.ratio:.3f} | {lp.empty_accepting / max(1, lp.empty_cases):.3f} | "
            f"{li.leaked + lp.leaked} | {sq.recall:.3f} | {sq.forbidden} | {sf_txt} | {di.recall:.3f} | "
            f"{di.forbidden} | {di.empty_accepting}/{di.empty_cases} | {jk.recall:.3f} | {jk.forbidden} | "
            f"{jk.empty_accepting}/{jk.empty_cases} |"
        )
    li = rows[0][1]["locomo_in"]
    sf0 = rows[0][1].get("scifact")
    print(
        f"\npre-gate: LoCoMo recall@10 {li.pre_recall:.4f} (in-scope questions); "
        + ("" if sf0 is None else f"SciFact nDCG@10 {sf0.pre_ndcg:.4f}")
    )

    def meets(p: dict[str, OperatingPoint]) -> bool:
        sf = p.get("scifact")
        return (
            (p["locomo_in"].ratio or 0) >= 0.95
            and p["locomo_in"].leaked + p["locomo_probe"].leaked == 0
            and (p["sqa"].recall or 0) >= 0.95
            and p["sqa"].forbidden == 0
            and (sf is None or (sf.pre_ndcg or 0) - (sf.ndcg or 0) <= 0.03)
        )

    ok = [(c, p) for c, p in rows if meets(p)]
    ok.sort(
        key=lambda cp: (
            cp[1]["distractor"].forbidden + cp[1]["distractor"].empty_accepting,
            cp[1]["locomo_probe"].empty_accepting,
        )
    )
    print(f"{len(ok)} of {len(rows)} points meet every target;")
    if ok:
        _, best = ok[0]
        print(
            "  fewest vaguely similar acceptances among them: "
            f"{best['locomo_in'].label} (distractors: {best['distractor'].forbidden} vague, "
            f"{best['distractor'].empty_accepting} off-topic questions answered; probes answered "
            f"{best['locomo_probe'].empty_accepting}/{best['locomo_probe'].empty_cases})"
        )
    chosen = dict(rows)[default]
    print(f"  shipped default: {'meets' if meets(chosen) else 'DOES NOT MEET'} the targets")

    # The shipped default through the real query path (store.query + the evaluation oracles).
    print("\nshipped default through `evaluate_cases` (store.query, dry runs, oracles):")
    for n in ("locomo_in", "sqa"):
        st, sc = sets[n]
        rep = evaluate_cases(st, [s.case for s in sc], k=K)  # type: ignore[arg-type]
        m = rep.metrics
        print(
            f"  {n}: recall@10 {m['recall@10']:.4f} (before gate {m['retrieval_recall@10']:.4f}), "
            f"stale {rep.counts['stale']}, leaked {rep.counts['leaked']}, exposed {rep.counts['exposed']}"
        )
    print(f"\nrecords refused for their shape: {sum(v for cs in refused.values() for k, v in cs.items() if k.startswith('reject'))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
