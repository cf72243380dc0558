"""The LlamaIndex adapter's public surface is small and pinned, and it holds no rules (STYLE 1, 12; DESIGN)."""

from __future__ import annotations

import re
from pathlib import Path

import llamaindex_recall_gate

PACKAGE = Path(llamaindex_recall_gate.__file__).parent


def test_all_is_pinned() -> None:
    """llamaindex_recall_gate.__all__ is exactly the documented API and every name resolves."""
    assert llamaindex_recall_gate.__all__ == [
        "GatedRetriever",
        "GatedVectorStore",
        "RecallGateAuditEvent",
        "RecallGatePostprocessor",
        "recall_scope",
    ]
    for name in llamaindex_recall_gate.__all__:
        assert getattr(llamaindex_recall_gate, name) is not None


def test_init_re_exports_from_base() -> None:
    """__init__.py is a few lines re-exporting from base.py, as LlamaIndex integrations do."""
    from llamaindex_recall_gate import base

    init = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    assert "from llamaindex_recall_gate.base import" in init and "def " not in init and "class " not in init
    assert base.__all__ == llamaindex_recall_gate.__all__
    assert (PACKAGE / "py.typed").exists()


def test_adapter_contains_no_gate_rules() -> None:
    """No module of the adapter reads approval, freshness, scope or reason fields: the core decides."""
    forbidden = re.compile(
        r"\b(Status\.|Reason\.|Tier\.|rule_\w+|in_scope|max_age_days|allow_draft|\.status\b|\.updated_at\b)"
    )
    for path in PACKAGE.glob("*.py"):
        code = [
            ln
            for ln in path.read_text(encoding="utf-8").splitlines()
            if not ln.strip().startswith((">>>", "..."))
        ]
        hits = [line for line in code if forbidden.search(line)]
        assert hits == [], f"{path.name}: {hits}"
