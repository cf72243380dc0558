"""Jupyter displays: gate results, audit records, what-if diffs and the score plot."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from shared_core import GateConfig, RecallGate, Scope
from shared_core.display import (
    REASON_COLOURS,
    audit_html,
    config_diff_html,
    gate_result_html,
    plot_score_distribution,
    score_groups,
)
from shared_core.testing import make_hit

SCOPE = Scope(user_id="u1", agent_id="a1", memory_space_id="s1")
NOW = datetime(2026, 7, 13, tzinfo=timezone.utc)
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _result(**kw: object):  # type: ignore[no-untyped-def]
    hits = [
        make_hit("ok", title=f"Accepted {EVIL}", body="ACCEPTED-BODY posting time is 10:00", score=0.9),
        make_hit(
            "old", title=f"Stale {EVIL}", body="REJECTED-BODY-STALE 08:00", updated_at="2025-01-01T00:00:00Z"
        ),
        make_hit("draft", title="Draft", body="REJECTED-BODY-DRAFT memes", status="draft"),
        make_hit("low", title="Vague", body="REJECTED-BODY-LOW something", score=0.1),
        make_hit("other", title="Other user", body="REJECTED-BODY-SCOPE private", user_id="u2"),
    ]
    gate = RecallGate(GateConfig(min_score=0.5, **kw))  # type: ignore[arg-type]
    return gate.evaluate(hits, scope=SCOPE, now=NOW, query="when do we post?"), hits


def test_gate_html_escapes_titles_and_hides_rejected_bodies() -> None:
    """Titles are escaped, accepted bodies are previewed, and no rejected body ever appears."""
    result, _ = _result()
    assert result.accepted_ids == ["ok"]
    page = gate_result_html(result)
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;" in page
    assert "ACCEPTED-BODY" in page
    assert "REJECTED-BODY" not in page
    for rid in ("old", "draft", "low", "other"):
        assert rid in page


def test_gate_html_is_self_contained() -> None:
    """The HTML uses a few plain tags and inline CSS only: no scripts, links, images or external assets."""
    result, _ = _result()
    for page in (gate_result_html(result), audit_html(result.audit)):
        tags = set(re.findall(r"<\s*([a-zA-Z0-9]+)", page))
        assert tags <= {"style", "div", "span", "table", "tr", "th", "td", "h4", "b"}, tags
        attributes = set(re.findall(r"\s([a-z-]+)=\"", page))
        assert attributes <= {"class", "style", "title", "colspan"}, attributes
        lowered = page.lower()
        for needle in ("http://", "https://", "url(", "@import", "javascript:"):
            assert needle not in lowered


def test_gate_html_has_badges_and_scores() -> None:
    """Each reason gets its own badge colour, and channel scores are shown."""
    result, _ = _result()
    page = gate_result_html(result)
    for reason in ("stale", "not_approved", "low_score", "scope_mismatch"):
        assert reason in page and REASON_COLOURS[reason] in page
    assert len(set(REASON_COLOURS.values())) == len(REASON_COLOURS)
    assert "0.900" in page and "semantic" in page and "lexical" in page and "channels" in page


def test_repr_html_delegates() -> None:
    """GateResult and AuditRecord render through the display module in Jupyter."""
    result, _ = _result()
    assert result._repr_html_() == gate_result_html(result)
    assert result.audit._repr_html_() == audit_html(result.audit)


def test_audit_html_has_ids_and_reasons_only() -> None:
    """The audit display shows ids, reasons, scope and hashes, never titles or bodies."""
    result, hits = _result()
    page = audit_html(result.audit)
    assert "ok" in page and "stale" in page and "u1" in page and result.audit.config_hash in page
    for hit in hits:
        assert hit.record.body not in page
    assert "Accepted" not in page.replace("Accepted ids", "")
    assert "<script" not in page


def test_config_diff_html() -> None:
    """The what-if display lists newly accepted and newly rejected ids with escaped titles."""
    _, hits = _result()
    diff = RecallGate(GateConfig(min_score=0.5)).compare(
        hits, scope=SCOPE, new_config=GateConfig(min_score=0.5, allow_draft=True), now=NOW
    )
    assert diff.newly_accepted == ("draft",)
    page = config_diff_html(diff, label="allow_draft=true")
    assert "draft" in page and "allow_draft=true" in page and "REJECTED-BODY" not in page
    assert re.search(r"Newly rejected \(0\)", page)


def test_plot_score_distribution() -> None:
    """The score plot has one series per decision and the threshold line."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result, _ = _result()
    groups = score_groups([result])
    assert groups["accepted"] == [0.9] and groups["low_score"] == [0.1]
    ax = plot_score_distribution([result, result], threshold=0.5)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("accepted") for label in labels)
    assert any(label.startswith("low_score") for label in labels)
    assert any(label.startswith("min_score 0.50") for label in labels)
    _fig, own = plt.subplots()
    assert plot_score_distribution(result, own) is own
    plt.close("all")
