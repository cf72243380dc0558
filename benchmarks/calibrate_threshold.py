"""Calibrate ``MiniLMEmbedding.recommended_min_score`` on SciFact TRAIN, and measure throughput.

What is measured
    Every train query (809) and every abstract (5,183, embedded as ``title + " " + text``, truncated
    to 256 tokens) is embedded with :class:`shared_core.embedding.MiniLMEmbedding`. For each query
    we take (a) the cosine to each of its relevant abstracts (qrels/train.tsv, 919 pairs, found by
    the search or not) and (b) its top-20 abstracts by brute-force cosine over the whole corpus,
    each labelled relevant or not.

Which threshold, and why
    Shipped: the crossing of the two *normalised* densities, that of (a) relevant pairs and that of
    the non-relevant hits among (b), estimated with Gaussian kernel density estimates (Silverman
    bandwidth) on a 0.001 grid; of the crossings in [0.3, 0.9], the highest one where the relevant
    density rises above the non-relevant one. At that cosine a score is as likely to come from a
    relevant abstract as from a non-relevant top-20 hit (likelihood ratio 1); above it, a hit is
    more likely relevant than not when relevant and non-relevant candidates are equally common.
    That is a property of the model's scores, not of how many candidates a search returns.

    Also printed, not shipped: the two readings that keep SciFact's prior, P(relevant | cosine = t)
    = 0.5 (logistic fit on the top-20 hits) and the lowest t with P(relevant | cosine >= t) >= 0.5.
    In a top-20 list over 5,183 abstracts with about one labelled abstract per claim, non-relevant
    hits outnumber relevant ones about 18 to 1, and unlabelled abstracts on the same topic count as
    non-relevant; so these land near 0.7 and would drop four in five relevant abstracts. A recall
    gate whose default drops the right answer is as wrong as one that lets a wrong one through,
    so they are reported for context only.

    For each threshold the share of all relevant pairs (a) at or above it is printed: the recall a
    gate with that threshold would keep on this data.

Run (from the repository root)::

    /work/venv/bin/python benchmarks/calibrate_threshold.py
    /work/venv/bin/python benchmarks/calibrate_threshold.py --data /path/to/scifact --threads 2

Embeddings are cached under ``--cache`` (default ``/tmp/recall-gate-calibration``), keyed by the
model hash, ``max_length`` and the corpus/queries file contents, so reruns take seconds. The first
run embeds the corpus: a few minutes on two cores.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import itertools
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from shared_core.embedding import MiniLMEmbedding
from shared_core.embedding import minilm as embedding_module

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"
DEFAULT_CACHE = Path("/tmp/recall-gate-calibration")
TOP_K = 20


def load_scifact(
    data: Path,
) -> tuple[list[str], list[str], list[str], list[str], dict[str, set[str]]]:
    """Return (doc ids, doc texts, query ids, query texts, qrels query id -> relevant doc ids)."""
    doc_ids: list[str] = []
    doc_texts: list[str] = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            doc_ids.append(str(row["_id"]))
            doc_texts.append(f"{row.get('title', '')} {row.get('text', '')}".strip())
    qrels: dict[str, set[str]] = defaultdict(set)
    with (data / "qrels" / "train.tsv").open(encoding="utf-8") as fh:
        for rec in csv.DictReader(fh, delimiter="\t"):
            if int(rec["score"]) > 0:
                qrels[str(rec["query-id"])].add(str(rec["corpus-id"]))
    query_ids: list[str] = []
    query_texts: list[str] = []
    with (data / "queries.train.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if str(row["_id"]) in qrels:
                query_ids.append(str(row["_id"]))
                query_texts.append(row["text"])
    return doc_ids, doc_texts, query_ids, query_texts, dict(qrels)


def cached_embeddings(
    emb: MiniLMEmbedding, texts: list[str], cache: Path, label: str, source: Path
) -> NDArray[np.float32]:
    """Embed ``texts``, or load them from an ``np.save`` cache keyed by model, settings and input."""
    key = hashlib.sha256()
    key.update(embedding_module._MODEL_SHA256.encode())
    key.update(f"{emb.name}|{emb.max_length}|{len(texts)}".encode())
    key.update(source.read_bytes())
    path = cache / f"{label}-{key.hexdigest()[:16]}.npy"
    if path.exists():
        arr: NDArray[np.float32] = np.load(path)
        print(f"  {label}: {arr.shape[0]} vectors from cache {path}")
        return arr
    cache.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    arr = emb.embed_documents(texts)
    seconds = time.perf_counter() - start
    print(f"  {label}: embedded {len(texts)} texts in {seconds:.1f} s ({len(texts) / seconds:.1f}/s)")
    np.save(path, arr)
    return arr


def fit_logistic(x: NDArray[np.float64], y: NDArray[np.float64], *, balanced: bool = False) -> float:
    """Fit P(y=1|x) = sigmoid(a*x + b) by Newton's method; return the 0.5 crossing -b/a."""
    weights = np.ones_like(x)
    if balanced:  # each class weighs the same in total: the normalised-density crossing
        weights = np.where(y > 0, 0.5 / y.mean(), 0.5 / (1.0 - y.mean()))
    design = np.column_stack([x, np.ones_like(x)])
    theta = np.zeros(2)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(design @ theta)))
        grad = design.T @ (weights * (y - p))
        hess = (design * (weights * p * (1.0 - p))[:, None]).T @ design
        step = np.linalg.solve(hess, grad)
        theta += step
        if np.abs(step).max() < 1e-10:
            break
    a, b = theta
    return float(-b / a)


def density_crossing(rel: NDArray[np.float64], nonrel: NDArray[np.float64]) -> float:
    """Highest cosine in [0.3, 0.9] where the relevant KDE density rises above the non-relevant one."""
    grid = np.linspace(0.3, 0.9, 601)

    def kde(x: NDArray[np.float64]) -> NDArray[np.float64]:
        bandwidth = 1.06 * x.std() * len(x) ** -0.2  # Silverman's rule of thumb
        z = (grid[:, None] - x[None, :]) / bandwidth
        density: NDArray[np.float64] = np.exp(-0.5 * z**2).sum(axis=1) / (
            len(x) * bandwidth * np.sqrt(2 * np.pi)
        )
        return density

    diff = kde(rel) - kde(nonrel)
    rising = np.flatnonzero((diff[:-1] < 0) & (diff[1:] >= 0))
    if not rising.size:
        return float("nan")
    i = int(rising[-1])  # interpolate between grid[i] and grid[i + 1]
    return float(grid[i] + (grid[i + 1] - grid[i]) * (-diff[i]) / (diff[i + 1] - diff[i]))


def cumulative_threshold(scores: NDArray[np.float64], labels: NDArray[np.float64]) -> float:
    """Lowest t (0.005 grid) with P(relevant | cos >= t') >= 0.5 for every t' >= t with >= 10 hits."""
    grid = np.round(np.arange(0.0, 1.0001, 0.005), 3)
    ok_from = float("nan")
    for t in grid[::-1]:
        above = scores >= t
        if above.sum() < 10:
            continue
        if labels[above].mean() >= 0.5:
            ok_from = float(t)
        else:
            break
    return ok_from


def throughput(texts: list[str], threads: int, batch_size: int = 32, repeats: int = 3) -> float:
    """Texts per second of ``embed_documents`` (best of ``repeats``), after a warm-up call."""
    emb = MiniLMEmbedding(threads=threads, batch_size=batch_size)
    emb.embed_documents(texts[:batch_size])
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        emb.embed_documents(texts)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="SciFact directory")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="embedding cache directory")
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--no-throughput", action="store_true", help="skip the throughput measurement")
    args = parser.parse_args(argv)

    doc_ids, doc_texts, query_ids, query_texts, qrels = load_scifact(args.data)
    print(
        f"SciFact train: {len(query_ids)} queries, {len(doc_ids)} abstracts, "
        f"{sum(len(v) for v in qrels.values())} relevant pairs"
    )
    emb = MiniLMEmbedding(threads=args.threads)
    docs = cached_embeddings(emb, doc_texts, args.cache, "corpus", args.data / "corpus.jsonl")
    queries = cached_embeddings(
        emb, query_texts, args.cache, "queries-train", args.data / "queries.train.jsonl"
    )

    doc_index = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    sims = queries.astype(np.float64) @ docs.astype(np.float64).T
    rel_scores: list[float] = []
    hit_scores: list[float] = []
    hit_labels: list[float] = []
    recall_at_k = 0.0
    ndcg10 = 0.0
    for qi, qid in enumerate(query_ids):
        relevant = {doc_index[d] for d in qrels[qid] if d in doc_index}
        rel_scores.extend(float(sims[qi, d]) for d in relevant)
        top = np.argsort(-sims[qi], kind="stable")[:TOP_K]
        for d in top:
            hit_scores.append(float(sims[qi, d]))
            hit_labels.append(1.0 if int(d) in relevant else 0.0)
        recall_at_k += len(relevant.intersection(int(d) for d in top)) / len(relevant)
        dcg = sum(1.0 / np.log2(r + 2) for r, d in enumerate(top[:10]) if int(d) in relevant)
        idcg = sum(1.0 / np.log2(r + 2) for r in range(min(len(relevant), 10)))
        ndcg10 += dcg / idcg
    n_q = len(query_ids)
    rel = np.array(rel_scores)
    hits = np.array(hit_scores)
    labels = np.array(hit_labels)
    print(f"dense retrieval on train: nDCG@10 {ndcg10 / n_q:.3f}, recall@{TOP_K} {recall_at_k / n_q:.3f}")
    print(
        f"relevant pairs: cosine median {np.median(rel):.3f}, "
        f"p10 {np.quantile(rel, 0.1):.3f}, p90 {np.quantile(rel, 0.9):.3f}"
    )
    nonrel = hits[labels == 0]
    print(
        f"non-relevant top-{TOP_K} hits: cosine median {np.median(nonrel):.3f}, "
        f"p90 {np.quantile(nonrel, 0.9):.3f}, p99 {np.quantile(nonrel, 0.99):.3f}"
    )

    print(
        f"\nTop-{TOP_K} hits by cosine bin (P = share relevant among top-{TOP_K} hits; 'all rel>=lo' = share "
        "of all relevant pairs at or above lo;\nf_rel, f_non = share of all relevant pairs / of non-relevant "
        "top-20 hits in the bin; LR = f_rel / f_non)"
    )
    print(
        f"{'cosine bin':>13} {'rel':>5} {'non-rel':>8} {'P(rel|bin)':>11} {'P(rel|>=lo)':>12} "
        f"{'hits>=lo':>9} {'all rel>=lo':>12} {'f_rel':>6} {'f_non':>6} {'LR':>6}"
    )
    edges = [0.0, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 1.01]
    for lo, hi in itertools.pairwise(edges):
        in_bin = (hits >= lo) & (hits < hi)
        above = hits >= lo
        n_rel = int(labels[in_bin].sum())
        n_non = int(in_bin.sum()) - n_rel
        p_bin = f"{n_rel / (n_rel + n_non):.2f}" if n_rel + n_non else "-"
        p_cum = f"{labels[above].mean():.2f}" if above.any() else "-"
        f_rel = float(((rel >= lo) & (rel < hi)).mean())
        f_non = float(((nonrel >= lo) & (nonrel < hi)).mean())
        ratio = f"{f_rel / f_non:.2f}" if f_non else "-"
        print(
            f"{lo:5.2f}-{min(hi, 1.0):<5.2f}   {n_rel:5d} {n_non:8d} {p_bin:>11} {p_cum:>12} "
            f"{above.mean():9.1%} {(rel >= lo).mean():12.1%} {f_rel:6.3f} {f_non:6.3f} {ratio:>6}"
        )

    t_dens = density_crossing(rel, nonrel)
    t_dens_logit = fit_logistic(
        np.concatenate([rel, nonrel]),
        np.concatenate([np.ones_like(rel), np.zeros_like(nonrel)]),
        balanced=True,
    )
    t_post = fit_logistic(hits, labels)
    t_cum = cumulative_threshold(hits, labels)
    print(f"\n{'threshold':<58} {'t':>5} {'all rel >= t':>13} {'hits >= t':>10} {'P(rel|>=t)':>11}")
    for label, t in (
        ("normalised densities cross, KDE (shipped)", t_dens),
        ("normalised densities cross, balanced logistic (check)", t_dens_logit),
        ("P(rel | cos = t) = 0.5 in top-20, logistic", t_post),
        ("P(rel | cos >= t) >= 0.5 in top-20", t_cum),
    ):
        above = hits >= t
        prec = f"{labels[above].mean():.2f}" if above.any() else "-"
        print(f"  {label:<56} {t:5.3f} {(rel >= t).mean():13.1%} {above.mean():10.1%} {prec:>11}")
    shipped = round(t_dens, 2)
    print(
        f"\nrecommended_min_score = {shipped:.2f}  (in the code now: {MiniLMEmbedding.recommended_min_score})"
    )
    print(
        f"  keeps {(rel >= shipped).mean():.1%} of relevant pairs and {(nonrel >= shipped).mean():.1%} "
        f"of non-relevant top-{TOP_K} hits; P(rel | cos >= it) in top-{TOP_K} = "
        f"{labels[hits >= shipped].mean():.2f}"
    )

    if not args.no_throughput:
        short = query_texts[:512]
        long = doc_texts[:128]
        print(f"\nThroughput, batch 32 (best of 3; {os.cpu_count()} CPUs):")
        for threads in (1, 2):
            s = throughput(short, threads)
            d = throughput(long, threads)
            print(
                f"  threads={threads}: {s:7.1f} sentences/s (SciFact claims, ~{_tokens(short):.0f} tokens); "
                f"{d:6.1f} abstracts/s (~{_tokens(long):.0f} tokens)"
            )
    return 0


def _tokens(texts: list[str]) -> float:
    emb = MiniLMEmbedding()
    tokenizer = emb._load()[1]
    return float(np.mean([len(tokenizer.encode(t).ids) for t in texts]))


if __name__ == "__main__":
    sys.exit(main())
