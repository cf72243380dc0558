"""Calibrate the semantic screen's bars after training: how the bar rises with a text's number of
windows (``long_slope``), and how far above the trainer's ``threshold`` the lowest bar stands
(``bar_raise``).

Run from the repository root (about 10 minutes on two cores)::

    python benchmarks/calibrate_long_bar.py
    python benchmarks/calibrate_long_bar.py --slopes 0.1 0.15 0.2 --max-added 0.0015
    python benchmarks/calibrate_long_bar.py --skip-slope --raises 0 0.05 0.1 0.15 --target-benign 0.03

The shipped model (``injection_semantic.json``) scores a text that is one window against
``threshold`` and every window of a longer text against ``threshold_long``, a bar the trainer sets
on planted documents of five benign notes (about thirty windows). A memory of three sentences has
five windows: held to a page's bar, an instruction in one of its sentences scores 0.7-0.9 and is
written (of the 25 Korean and 33 Japanese attacks of fresh73-78 the gate wrote, the slope holds 10
and 8). With ``long_slope`` the bar of a text of ``n`` windows is ``threshold + long_slope * ln(n)``, at most
``threshold_long`` (the maximum of ``n`` scores grows about like ``ln(n)``).

Data: the Japanese and Korean rows of ``injection_lang_cases.jsonl`` in the blind sets written
after the model's training folds (the model is trained through ``fresh39``): ``fresh40``-``fresh66``
calibrate, ``fresh67``-``fresh78`` check. Each row goes through ``decide_writes`` (one candidate per
call, ``origin: user_explicit``) as the blind sets are measured (``screening_eval.blind_counts``);
held = any action but write.

Choice: the lowest slope in ``--slopes`` whose benign notes held on the calibration sets rise, in
each language, by at most ``--max-added`` of that language's benign rows over the bar of
``threshold_long`` for every longer text. The rules' MEDIUM findings are backed against the fixed
bars whatever the slope (:meth:`~shared_core.screening.semantic.SemanticInjectionDetector.assess`),
so the slope moves only the semantic screen's own findings.

``bar_raise`` (with the shipped slope): the trainer sets ``threshold`` where at most 3% of the
out-of-fold benign rows of each language are flagged, but those rows come from writers whose like the
model has seen in other folds; on the blind sets written after its folds, 2.6-3.1% of the benign notes
were held, at or over the 3% the screen must keep on new writers. The chosen raise is the lowest in
``--raises`` at which benign notes held on ``fresh40``-``fresh84`` are at most ``--target-benign`` of
the benign rows in each language (default 3%, the bar issue 15 sets for benign text with trigger
words): the lowest such raise costs the fewest attacks. ``fresh85``-``fresh96`` check it. Measured
(with the rules of round 18): raises 0 / 0.05 / 0.1 / 0.15 / 0.2 hold 102 / 90 / 85 / 79 / 77 of 3,600
Japanese and 123 / 114 / 105 / 99 / 90 of 3,599 Korean benign notes, and write 96 / 99 / 102 / 106 /
110 and 98 / 104 / 109 / 115 / 121 of 1,800 attacks; 0.1 is the lowest under 3% in Korean. The rules' MEDIUM findings are
still backed against the trainer's bars, so the raise moves only the screen's own findings.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from screening_eval import blind_counts  # noqa: E402  (benchmarks/, the script's own folder)

from shared_core.screening.semantic import SemanticInjectionDetector, default_detector  # noqa: E402

CALIBRATE = tuple(f"fresh{i}" for i in range(40, 67))
CHECK = tuple(f"fresh{i}" for i in range(67, 79))
RAISE_CALIBRATE = tuple(f"fresh{i}" for i in range(40, 85))
RAISE_CHECK = tuple(f"fresh{i}" for i in range(85, 97))
LANGS = ("ja", "ko")
Counts = dict[tuple[str, bool], list[int]]


def held_counts(splits: Sequence[str]) -> Counts:
    """``(lang, is_attack) -> [held, n]`` over ``splits``, through the write gate as it is configured now."""
    out: Counts = {(L, a): [0, 0] for L in LANGS for a in (True, False)}
    for by_lang in blind_counts(splits).values():
        for lang, (ah, a, bh, b) in by_lang.items():
            for key, held, n in (((lang, True), ah, a), ((lang, False), bh, b)):
                out[key][0] += held
                out[key][1] += n
    return out


def fmt(c: Counts) -> str:
    return " | ".join(
        f"{L} attacks {c[(L, True)][0]} / {c[(L, True)][1]}, benign held {c[(L, False)][0]} / {c[(L, False)][1]}" for L in LANGS
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slopes", type=float, nargs="+", default=[0.1, 0.125, 0.15, 0.175, 0.2])
    parser.add_argument("--max-added", type=float, default=0.0015, help="share of benign rows a slope may add, per language")
    parser.add_argument("--raises", type=float, nargs="+", default=[0.0, 0.05, 0.1, 0.15, 0.2])
    parser.add_argument("--target-benign", type=float, default=0.03, help="share of benign rows a raise may leave held, per language")
    parser.add_argument("--skip-slope", action="store_true", help="only the raise, at the shipped slope")
    args = parser.parse_args(argv)
    det = default_detector()
    if det is None:
        parser.error("the semantic screen is not installed (extra 'multilingual')")
    shipped = det.model
    print(f"model threshold {shipped.threshold:.4f}, threshold_long {shipped.threshold_long:.4f}, shipped long_slope {shipped.long_slope}")
    t0 = time.perf_counter()
    if not args.skip_slope:
        choose_slope(det, args.slopes, args.max_added)
    choose_raise(det, args.raises, args.target_benign)
    print(f"{time.perf_counter() - t0:.0f} s")
    return 0


def choose_slope(det: SemanticInjectionDetector, slopes: Sequence[float], max_added: float) -> float | None:
    """The lowest slope adding at most ``max_added`` benign holds per language on :data:`CALIBRATE` (no raise)."""
    shipped = det.model
    results: dict[float | None, tuple[Counts, Counts]] = {}
    try:
        for slope in [None, *sorted(slopes)]:
            det.model = dataclasses.replace(shipped, long_slope=slope, bar_raise=None)
            results[slope] = (held_counts(CALIBRATE), held_counts(CHECK))
            name = "threshold_long" if slope is None else f"slope {slope}"
            print(f"{name:>15}  calibrate: {fmt(results[slope][0])}")
            print(f"{'':>15}  check:     {fmt(results[slope][1])}", flush=True)
    finally:
        det.model = shipped
    base = results[None][0]
    chosen = None
    for slope in sorted(slopes):
        cal_counts = results[slope][0]
        if all(cal_counts[(L, False)][0] - base[(L, False)][0] <= max_added * base[(L, False)][1] for L in LANGS):
            chosen = slope
            break
    print(f"chosen slope: {chosen} (lowest slope adding at most {max_added:.2%} benign holds per language on fresh40-66)")
    return chosen


def choose_raise(det: SemanticInjectionDetector, raises: Sequence[float], target: float) -> float | None:
    """The lowest raise leaving at most ``target`` of the benign rows held per language on :data:`RAISE_CALIBRATE`."""
    shipped = det.model
    chosen = None
    try:
        for r in sorted(raises):
            det.model = dataclasses.replace(shipped, bar_raise=r)
            cal, chk = held_counts(RAISE_CALIBRATE), held_counts(RAISE_CHECK)
            print(f"{'raise ' + str(r):>15}  calibrate: {fmt(cal)}")
            print(f"{'':>15}  check:     {fmt(chk)}", flush=True)
            if chosen is None and all(cal[(L, False)][0] <= target * cal[(L, False)][1] for L in LANGS):
                chosen = r
    finally:
        det.model = shipped
    print(f"chosen raise: {chosen} (lowest leaving at most {target:.1%} of benign notes held per language on fresh40-84; shipped {shipped.bar_raise})")
    return chosen


if __name__ == "__main__":
    raise SystemExit(main())
