"""The evaluation harness (E1): exact metrics on a hand-made store, oracles, case files, BEIR, the CLI."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from stores import NOW, SpyEmbedding, restore

from shared_core import GateConfig, GateResult, Hit
from shared_core.apps.cli import main
from shared_core.errors import InputError
from shared_core.evaluation import (
    EvalCase,
    beir_cases,
    beir_store,
    beir_texts,
    build_example_store,
    embedding_cache_path,
    evaluate_cases,
    example_cases_path,
    is_out_of_date,
    load_beir,
    load_cases,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    visible_to,
)
from shared_core.model import Scope
from shared_core.store import MemoryStore
from shared_core.testing import FrozenClock, HashEmbedding, make_record

SCOPE = Scope(user_id="u1", agent_id="a1", memory_space_id="s1")
# Semantic threshold out of reach of the hashing embedding: only the lexical channel (all query
# terms present -> 1.0 >= 0.6) lets a memory pass, so the accepted sets below are certain.
LEXICAL_ONLY = GateConfig(min_score=0.99, min_lexical_score=0.6)


def _tiny_store(cls: type[MemoryStore] = MemoryStore, **kwargs: Any) -> MemoryStore:
    store = cls(None, embedding=HashEmbedding(), config=LEXICAL_ONLY, clock=FrozenClock(NOW), **kwargs)
    records = [
        make_record(
            "kiwi-1", title="kiwi smoothie", body="kiwi smoothie with mint", updated_at="2026-07-10T00:00:00Z"
        ),
        make_record(
            "kiwi-old",
            title="kiwi smoothie",
            body="kiwi smoothie with ice",
            updated_at="2025-01-01T00:00:00Z",
        ),
        make_record(
            "mango-1",
            title="mango lassi",
            body="mango lassi with cardamom",
            updated_at="2026-07-10T00:00:00Z",
        ),
        make_record(
            "mango-draft",
            title="mango lassi",
            body="sweet mango lassi",
            status="draft",
            updated_at="2026-07-10T00:00:00Z",
        ),
        make_record("fig-1", title="fig jam", body="fig jam recipe", updated_at="2026-07-10T00:00:00Z"),
        make_record(
            "gone", title="guava juice", body="guava juice recipe", updated_at="2026-07-10T00:00:00Z"
        ),
        make_record(
            "u2-kiwi",
            user_id="u2",
            title="kiwi smoothie",
            body="kiwi smoothie for u2",
            updated_at="2026-07-10T00:00:00Z",
        ),
    ]
    restore(store, records)
    assert store.delete(["gone"], memory_space_id="s1") == 1
    return store


def _case(query: str, expected: list[str], **kw: Any) -> EvalCase:
    return EvalCase(query=query, scope=SCOPE, expected_memory_ids=tuple(expected), id=query, **kw)


def test_ranking_metrics_exact() -> None:
    """Recall, precision, reciprocal rank and nDCG match hand-computed values."""
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, {"b", "d"}, 2) == 0.5
    assert recall_at_k(ranked, {"b", "d"}, 4) == 1.0
    assert precision_at_k(ranked, {"b", "d"}, 2) == 0.5
    assert precision_at_k(ranked, {"b", "d"}, 4) == 0.5
    assert reciprocal_rank(ranked, {"c", "d"}, 4) == pytest.approx(1 / 3)
    assert reciprocal_rank(ranked, {"z"}, 4) == 0.0
    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at_k(ranked, {"b": 1, "d": 1}, 4) == pytest.approx(
        (1 / math.log2(3) + 1 / math.log2(5)) / ideal
    )
    assert ndcg_at_k(["x", "y"], {"x": 2, "y": 1}, 2) == pytest.approx(1.0)
    assert recall_at_k(ranked, set(), 4) is None and ndcg_at_k(ranked, {}, 4) is None
    assert precision_at_k([], {"a"}, 4) is None


def test_tiny_store_exact_metrics() -> None:
    """On a hand-made store with known answers every metric has its exact expected value."""
    store = _tiny_store()
    cases = [
        _case("kiwi smoothie", ["kiwi-1"], must_not_return=("kiwi-old",), sensitive_ids=("u2-kiwi",)),
        _case("mango lassi", ["mango-1", "fig-1"], must_not_return=("mango-draft",)),
        _case("fig jam", []),  # a negative case that accepts fig-1: precision 0
        _case("durian", ["durian-x"]),  # nothing accepted: recall, RR and nDCG 0, no precision
        _case("guava juice", [], deleted_ids=("gone",)),
    ]
    report = evaluate_cases(store, cases, k=10)
    accepted = {c.case.id: c.accepted_ids for c in report.cases}
    assert accepted == {
        "kiwi smoothie": ("kiwi-1",),
        "mango lassi": ("mango-1",),
        "fig jam": ("fig-1",),
        "durian": (),
        "guava juice": (),
    }
    m = report.metrics
    assert m["recall@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert m["precision@10"] == pytest.approx((1 + 1 + 0) / 3)
    assert m["mrr"] == pytest.approx((1 + 1 + 0) / 3)
    assert m["ndcg@10"] == pytest.approx((1 + 1 / (1 + 1 / math.log2(3)) + 0) / 3)
    assert m["stale_rate"] == 0.0
    assert m["leakage_rate"] == 0.0
    assert m["sensitive_exposure_rate"] == 0.0
    assert m["deletion_propagation"] == 1.0
    assert report.deletion == {"gone": {"chroma": False, "bm25": False, "results": False}}
    counts = report.counts
    assert (
        counts["accepted"] == 3 and counts["cases_with_expected"] == 3 and counts["cases_with_accepted"] == 3
    )
    assert counts["rejected_stale"] >= 1 and counts["rejected_not_approved"] >= 1


class _LeakyStore(MemoryStore):
    """A deliberately broken store: no recall rules, and every result smuggles in u2's private memory."""

    def query(self, query: str, **kwargs: Any) -> GateResult:
        result = super().query(query, **kwargs)
        foreign = Hit(
            record=make_record("u2-kiwi", user_id="u2", updated_at="2026-07-10T00:00:00Z"), score=0.5
        )
        return GateResult(accepted=(*result.accepted, foreign), rejected=result.rejected, audit=result.audit)


def test_oracles_catch_a_broken_gate() -> None:
    """Stale, leaked and sensitive memories that a broken gate lets through are counted exactly."""
    store = _tiny_store(_LeakyStore, rules=())
    report = evaluate_cases(store, [_case("kiwi smoothie", ["kiwi-1"], must_not_return=("kiwi-old",))], k=10)
    (case,) = report.cases
    # No rules: every in-scope memory is accepted (kiwi-1, kiwi-old, mango-1, mango-draft, fig-1) + u2-kiwi.
    assert sorted(case.accepted_ids) == ["fig-1", "kiwi-1", "kiwi-old", "mango-1", "mango-draft", "u2-kiwi"]
    assert case.stale_ids == ("kiwi-old",)
    assert case.leaked_ids == ("u2-kiwi",)
    assert case.exposed_ids == ("kiwi-old",)
    m = report.metrics
    assert m["stale_rate"] == pytest.approx(1 / 6)
    assert m["leakage_rate"] == pytest.approx(1 / 6)
    assert m["sensitive_exposure_rate"] == pytest.approx(1 / 6)
    assert m["precision@10"] == pytest.approx(1 / 6)
    assert "LEAKED u2-kiwi" in report.format_table()


def test_deletion_that_did_not_propagate_is_reported() -> None:
    """A deleted id still present in the store scores deletion propagation below 1."""
    store = _tiny_store()
    report = evaluate_cases(store, [_case("fig jam", [], deleted_ids=("fig-1", "gone"))], k=5)
    assert report.metrics["deletion_propagation"] == 0.5
    assert report.deletion["fig-1"] == {"chroma": True, "bm25": True, "results": True}
    assert "fig-1 still present in: chroma, bm25, results" in report.format_table()


def test_out_of_date_oracle() -> None:
    """The stale oracle: age without exempt tag, supersede links, validity window, retention expiry."""
    cfg = GateConfig()
    now = FrozenClock(NOW)()
    assert not is_out_of_date(make_record(updated_at="2026-07-01T00:00:00Z"), now=now, config=cfg)
    assert is_out_of_date(make_record(updated_at="2026-01-01T00:00:00Z"), now=now, config=cfg)
    assert not is_out_of_date(
        make_record(updated_at="2020-01-01T00:00:00Z", tags=["legal_stopline"]), now=now, config=cfg
    )
    assert is_out_of_date(make_record(superseded_by="m2"), now=now, config=cfg)
    assert is_out_of_date(make_record("m1"), now=now, config=cfg, superseded_ids={"m1"})
    assert is_out_of_date(make_record(valid_to="2026-07-01T00:00:00Z"), now=now, config=cfg)
    assert is_out_of_date(make_record(valid_from="2026-08-01T00:00:00Z"), now=now, config=cfg)
    assert is_out_of_date(make_record(expires_at="2026-07-12T00:00:00Z"), now=now, config=cfg)


def test_scope_oracle() -> None:
    """The reference scope check: space, route, and owner unless shared."""
    assert visible_to(make_record(), SCOPE)
    assert not visible_to(make_record(user_id="u2"), SCOPE)
    assert visible_to(make_record(user_id="u2", visibility="shared"), SCOPE)
    assert not visible_to(make_record(route_id="web"), SCOPE)
    assert not visible_to(make_record(memory_space_id="s2", visibility="shared"), SCOPE)


def test_load_cases_validates(tmp_path: Path) -> None:
    """Case files are validated line by line; errors name the line and field, not memory text."""
    good = {
        "query": "q",
        "scope": {"user_id": "u", "agent_id": "a", "memory_space_id": "s"},
        "expected_memory_ids": ["m"],
    }
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "id": "named"}) + "\n", encoding="utf-8")
    cases = load_cases(path)
    assert [c.id for c in cases] == ["line-1", "named"]
    assert cases[0].must_not_return == () and cases[0].scope.route_id is None
    for bad, match in [
        ({**good, "expected": ["m"]}, "unknown field"),
        ({**good, "scope": {"user_id": "u"}}, "agent_id"),
        ({k: v for k, v in good.items() if k != "scope"}, "scope"),
        ({**good, "must_not_return": "m"}, "must_not_return"),
    ]:
        path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
        with pytest.raises(InputError, match=f"line 2: .*{match}"):
            load_cases(path)
    path.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 1"):
        load_cases(path)


def _beir_folder(root: Path, *, split_queries: bool = True) -> Path:
    docs = [
        ("d1", "Kiwi", "kiwi fruit is rich in vitamin c"),
        ("d2", "Mango", "mango trees grow in tropical climates"),
        ("d3", "Fig", "fig trees need little water"),
        ("d4", "", "citrus fruit and vitamin c"),
        ("d5", "Olive", "olive oil is pressed from olives"),
        ("d6", "Date", "date palms grow in deserts"),
    ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in docs), encoding="utf-8"
    )
    queries = [
        ("q1", "which fruit has vitamin c"),
        ("q2", "where do mango trees grow"),
        ("q3", "unjudged query"),
    ]
    name = "queries.test.jsonl" if split_queries else "queries.jsonl"
    (root / name).write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in queries), encoding="utf-8"
    )
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td4\t2\nq2\td2\t1\nq2\tmissing\t1\nq3\td5\t0\n",
        encoding="utf-8",
    )
    return root


def test_beir_loader_and_cached_store(tmp_path: Path) -> None:
    """A synthetic BEIR folder loads judged queries only, and the second store build reuses cached vectors."""
    folder = _beir_folder(tmp_path / "tiny")
    data = load_beir(folder, split="test")
    assert data.doc_ids == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert data.query_ids == ["q1", "q2"]
    assert data.qrels == {"q1": {"d1": 1, "d4": 2}, "q2": {"d2": 1}}
    assert load_beir(folder, split="test", limit=1).query_ids == ["q1"]
    assert load_beir(_beir_folder(tmp_path / "flat", split_queries=False), split="test").query_ids == [
        "q1",
        "q2",
    ]

    cases = beir_cases(data)
    assert cases[0].expected_memory_ids == ("d1", "d4") and dict(cases[0].relevance or {}) == {
        "d1": 1.0,
        "d4": 2.0,
    }

    cache = tmp_path / "cache"
    spy = SpyEmbedding()
    with beir_store(data, embedding=spy, cache_dir=cache, config=GateConfig(min_score=0.1)) as store:
        assert store.all_ids("beir") == set(data.doc_ids)
        report = evaluate_cases(store, cases, k=3)
    assert len(spy.seen) >= len(data.doc_ids)
    assert embedding_cache_path(spy, beir_texts(data), cache).exists()
    assert report.metrics["leakage_rate"] == 0.0 and report.counts["cases"] == 2
    assert report.metrics["retrieval_recall@3"] is not None

    again = SpyEmbedding()
    with beir_store(data, embedding=again, cache_dir=cache) as store:
        assert store.all_ids("beir") == set(data.doc_ids)
    assert again.seen == []  # every document vector came from the cache


def test_beir_loader_errors(tmp_path: Path) -> None:
    """Missing BEIR files are reported by path."""
    with pytest.raises(InputError, match="not found"):
        load_beir(tmp_path / "nope")
    folder = _beir_folder(tmp_path / "b")
    with pytest.raises(InputError, match="qrels"):
        load_beir(folder, split="dev")


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_cli_eval_beir_synthetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``recall-gate eval --beir`` runs on a BEIR folder and prints JSON with --json."""
    monkeypatch.setenv("RECALL_GATE_EVAL_CACHE", str(tmp_path / "cache"))
    folder = _beir_folder(tmp_path / "tiny")
    code, out = _run("eval", "--beir", str(folder), "--split", "test", "-k", "5", "--json", "--no-progress")
    assert code == 0
    data = json.loads(out)
    assert data["k"] == 5 and data["counts"]["cases"] == 2
    assert set(data["metrics"]) >= {"recall@5", "precision@5", "mrr", "ndcg@5", "leakage_rate", "stale_rate"}
    assert data["metrics"]["leakage_rate"] == 0.0


def test_cli_eval_needs_inputs() -> None:
    """The eval command refuses a cases file without --store, and no input at all."""
    assert _run("eval", "--no-progress")[0] == 2
    assert _run("eval", str(example_cases_path()), "--no-progress")[0] == 2


def test_cli_eval_shipped_cases(tmp_path: Path) -> None:
    """The shipped cases against the example store: zero leakage, exposure and stale, full deletion, high recall."""
    folder = tmp_path / "example"
    build_example_store(folder).close()
    code, out = _run("eval", str(example_cases_path()), "--store", str(folder), "--json", "--no-progress")
    assert code == 0
    data = json.loads(out)
    m = data["metrics"]
    assert data["counts"]["cases"] == len(load_cases(example_cases_path()))
    assert m["leakage_rate"] == 0.0
    assert m["sensitive_exposure_rate"] == 0.0
    assert m["stale_rate"] == 0.0
    assert m["deletion_propagation"] == 1.0
    assert m["recall@10"] >= 0.9 and m["precision@10"] >= 0.9 and m["mrr"] >= 0.9
    code, table = _run("eval", str(example_cases_path()), "--store", str(folder), "--no-progress")
    assert code == 0 and "cross-scope leakage" in table and "Recall@10" in table
    assert "Customers can request a refund" not in out + table  # ids and metrics only, no memory text


def test_scifact_train_sample(shared_data: Path, tmp_path: Path) -> None:
    """SciFact train, first 20 claims, with the default MiniLM (needs the cached corpus vectors)."""
    from shared_core.embedding import default_embedding

    folder = shared_data / "scifact"
    data = load_beir(folder, split="train", limit=20)
    if not embedding_cache_path(default_embedding(), beir_texts(data)).exists():
        pytest.skip(
            "SciFact corpus vectors are not cached yet (embedding 5,183 abstracts takes minutes): run "
            "`recall-gate eval --beir ../shared/data/scifact --split train --limit 100` once"
        )
    code, out = _run(
        "eval", "--beir", str(folder), "--split", "train", "--limit", "20", "--json", "--no-progress"
    )
    assert code == 0
    data_out = json.loads(out)
    assert data_out["counts"]["cases"] == 20
    assert data_out["metrics"]["leakage_rate"] == 0.0
    # Deterministic with the shipped model; the first 20 claims measure 0.65 / 0.41 (a floor, not a target).
    assert data_out["metrics"]["retrieval_recall@10"] >= 0.5
    assert data_out["metrics"]["retrieval_ndcg@10"] >= 0.3


def test_cached_embedder_answers_from_its_table_and_falls_back_to_the_model(tmp_path: Path) -> None:
    """CachedEmbedder returns the model's vectors: cached ones for known texts, fresh ones for others."""
    from shared_core.evaluation import CachedEmbedder, cached_vectors
    from shared_core.testing import HashEmbedding

    model = HashEmbedding()
    emb = CachedEmbedder(model)
    texts = ["posting policy", "refund rules"]
    vecs = cached_vectors(model, texts, cache_dir=tmp_path)
    assert list(tmp_path.glob("*.npy"))  # written once
    np.testing.assert_allclose(cached_vectors(model, texts, cache_dir=tmp_path), vecs)
    emb.remember(texts, vecs)
    np.testing.assert_allclose(emb.embed_documents(texts), model.embed_documents(texts), atol=1e-6)
    np.testing.assert_allclose(emb.embed_query("unseen text"), model.embed_query("unseen text"), atol=1e-6)
    assert (emb.name, emb.dimension) == (model.name, model.dimension)
    with pytest.raises(AttributeError):
        _ = emb.calibration  # HashEmbedding has none: not invented by the wrapper


def test_exported_store_reports_every_decision(tmp_path: Path) -> None:
    """exported_store loads records through the full write gate and returns one decision per record."""
    from shared_core.evaluation import exported_store
    from shared_core.testing import HashEmbedding

    scope = {"user_id": "u", "agent_id": "a", "memory_space_id": "s"}
    recs = [
        {"id": "m1", "title": "Posting", "body": "Posts go out at nine.", **scope, "status": "approved",
         "origin": "user_explicit", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"},
        {"id": "m2", "title": "Bad", "body": "x", **scope, "created_at": "not a date"},
    ]  # fmt: skip
    store, decisions = exported_store(recs, embedding=HashEmbedding(), cache_dir=tmp_path)
    with store:
        assert [d.action.value for d in decisions] == ["write", "reject"]
        assert any("created_at" in x for x in decisions[1].detail)
        assert store.all_ids("s") == {"m1"}
