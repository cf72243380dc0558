"""Vaguely similar memories are rejected, the right one kept: real embeddings, real stores (seed 000, R3).

The cases are ``benchmarks/data/distractor_*.jsonl`` (written for this project): small spaces of
workplace notes, questions with one right memory next to vaguely similar ones, and questions on a
topic the space does not hold. The figures per operating point are in
``benchmarks/conversational_eval.py``; these tests pin the shipped defaults' behaviour.
"""

from __future__ import annotations

import io
import json
from argparse import Namespace
from pathlib import Path

import pytest

from shared_core import GateConfig
from shared_core.embedding import UniversalSentenceEncoder, calibration_of, default_embedding
from shared_core.evaluation import exported_store, load_cases
from shared_core.evaluation.calibrate import choose, run_calibrate_command, search_cases, sweep
from shared_core.store import MemoryStore

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def _run(prefix: str, embedding: object) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Accepted, expected and must-not ids per case, with the embedding's calibrated defaults."""
    cases = load_cases(DATA / f"{prefix}cases.jsonl")
    cfg = GateConfig().resolved(calibration_of(embedding))
    store, decisions = exported_store(
        DATA / f"{prefix}memories.jsonl", embedding=embedding, config=cfg, queries=[c.query for c in cases]
    )
    # Nothing is refused for its shape. (The injection screen holds one Japanese note, "every image
    # needs alt text", in quarantine: a false positive reported to the screening owners; it is then
    # simply not in the space.)
    assert [d for d in decisions if d.action.value == "reject"] == []
    out = {}
    with store:
        for c in cases:
            acc = store.query(c.query, scope=c.scope, k=10).accepted_ids
            out[c.id] = (acc, list(c.expected_memory_ids), list(c.must_not_return))
    return out


def test_minilm_defaults_reject_the_vaguely_similar() -> None:
    """With MiniLM's calibration: off-topic questions accept nothing, vague neighbours are dropped, answers kept."""
    res = _run("distractor_", default_embedding())
    off_topic = {cid: acc for cid, (acc, exp, _) in res.items() if not exp}
    assert off_topic and all(acc == [] for acc in off_topic.values()), off_topic
    answered = [cid for cid, (acc, exp, _) in res.items() if exp and set(exp) <= set(acc)]
    assert len(answered) >= 14, answered  # of 16; misses: a 0.33 and a 0.41 cosine answer
    vague = {cid: sorted(set(acc) & set(nots)) for cid, (acc, _, nots) in res.items() if set(acc) & set(nots)}
    # The one known failure: the vendor-invoice note scores above the right answer (0.57 vs 0.51).
    assert vague == {"billing-0": ["bill-unpaid-vendor"]}


def test_the_seeds_plain_threshold_loses_answers_the_relative_rule_keeps() -> None:
    """The absolute 0.54 alone misses right answers that the relative rule keeps, with no more vague ones."""
    emb = default_embedding()
    cases = load_cases(DATA / "distractor_cases.jsonl")
    cfg = GateConfig().resolved(calibration_of(emb))
    store, _ = exported_store(DATA / "distractor_memories.jsonl", embedding=emb, config=cfg)
    with store:
        searched = search_cases(store, cases)
        points = sweep(store, searched, cfg, anchors=(0.55,), margins=(0.25,), floors=(0.25,))
    absolute, relative = points
    assert (relative.recall or 0) > (absolute.recall or 0)
    assert relative.forbidden <= absolute.forbidden + 0 and relative.empty_accepting == 0
    assert choose(points, min_ratio=0.8) is not None


def test_multilingual_extra_separates_japanese_and_korean() -> None:
    """With the multilingual extra, Japanese and Korean questions get their answer and off-topic ones nothing."""
    res = _run("distractor_ja_ko_", UniversalSentenceEncoder())
    off_topic = {cid: acc for cid, (acc, exp, _) in res.items() if not exp}
    assert all(acc == [] for acc in off_topic.values()), off_topic
    answered = [cid for cid, (acc, exp, _) in res.items() if exp and set(exp) <= set(acc)]
    assert len(answered) >= 8, answered  # of 10 (two Japanese deploy notes score 0.24-0.28)
    vague = sum(len(set(acc) & set(nots)) for acc, _, nots in res.values())
    assert vague <= 2


def test_minilm_cannot_tell_japanese_memories_apart() -> None:
    """The English default scores an off-topic Japanese memory as high as the right one: why the extra exists."""
    emb = default_embedding()
    q = emb.embed_query("公式アカウントの投稿はいつ出ますか？")
    right, other = emb.embed_documents(
        ["公式アカウントの投稿は平日の朝9時に出します", "返金ポリシーは年額プランには適用されない"]
    )
    assert float(q @ other) > calibration_of(emb).min_score  # off-topic, yet "relevant" for MiniLM
    use = UniversalSentenceEncoder()
    uq = use.embed_query("公式アカウントの投稿はいつ出ますか？")
    ur, uo = use.embed_documents(
        ["公式アカウントの投稿は平日の朝9時に出します", "返金ポリシーは年額プランには適用されない"]
    )
    assert float(uq @ ur) - float(uq @ uo) > 0.3 > float(q @ right) - float(q @ other)


def test_calibrate_command_prints_the_trade_off_and_settings(tmp_path: Path) -> None:
    """`recall-gate calibrate` on a persistent store prints every operating point and a TOML snippet."""
    path = tmp_path / "store"
    with MemoryStore(path) as store:
        lines = [
            json.loads(x)
            for x in (DATA / "distractor_memories.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        assert all(d.stored for d in store.add(lines))
    out = io.StringIO()
    args = Namespace(
        cases=str(DATA / "distractor_cases.jsonl"),
        store=str(path),
        k=10,
        min_ratio=0.9,
        candidates=50,
        json=False,
    )
    assert run_calibrate_command(args, out) == 0
    text = out.getvalue()
    assert "absolute min_score=0.54" in text and "relative anchor=" in text
    assert "anchor_score = " in text and "relative_margin = " in text
    out_json = io.StringIO()
    args.json = True
    run_calibrate_command(args, out_json)
    payload = json.loads(out_json.getvalue())
    assert payload["chosen"]["ratio"] >= 0.9 and len(payload["points"]) > 10


@pytest.mark.skipif(
    not (SHARED / "sqa_dev").is_dir(), reason="the shared evaluation data is not in ../shared/data"
)
def test_exported_records_load_as_they_are_and_superseded_never_comes_back() -> None:
    """SituatedQA dev records load as exported (none refused for shape) and no superseded memory is accepted."""
    lines = (SHARED / "sqa_dev" / "memories.jsonl").read_text(encoding="utf-8").splitlines()[:120]
    records = [json.loads(x) for x in lines]
    ids = {r["id"] for r in records}
    cases = [c for c in load_cases(SHARED / "sqa_dev" / "cases.jsonl") if set(c.expected_memory_ids) <= ids]
    emb = default_embedding()
    store, decisions = exported_store(
        records, embedding=emb, config=GateConfig().resolved(calibration_of(emb))
    )
    assert [d for d in decisions if d.action.value == "reject"] == []
    with store:
        for c in cases:
            acc = store.query(c.query, scope=c.scope, k=10).accepted_ids
            assert not set(acc) & set(c.must_not_return), c.id
            stored = {d.id for d in decisions if d.stored}
            if set(c.expected_memory_ids) <= stored:
                assert set(c.expected_memory_ids) <= set(acc), c.id
