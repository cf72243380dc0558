"""The LlamaIndex adapter's public surface is small and pinned, and it holds no rules (STYLE 1, 12; DESIGN)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import llamaindex_recall_gate

PACKAGE = Path(llamaindex_recall_gate.__file__).parent
LANGCHAIN = PACKAGE.parent / "langchain_recall_gate"


def test_all_is_pinned() -> None:
    """llamaindex_recall_gate.__all__ is exactly the documented API and every name resolves."""
    assert llamaindex_recall_gate.__all__ == [
        "GatedRetriever",
        "GatedVectorStore",
        "MiniLMEmbedding",
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


def test_imports_no_langchain() -> None:
    """Importing the package pulls in no LangChain module."""
    code = "import sys, llamaindex_recall_gate; print(any(m.startswith('langchain') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def _code_lines(path: Path) -> list[str]:
    return [
        ln
        for ln in path.read_text(encoding="utf-8").splitlines()
        if not ln.strip().startswith((">>>", "...")) and "# WriteTarget order" not in ln
    ]


def test_adapters_contain_no_gate_rules() -> None:
    """No module of either adapter reads approval, freshness, scope or reason fields: the core decides.

    The one exemption is marked ``# WriteTarget order``: the write target returns memories newest
    first, as the WriteTarget protocol asks.
    """
    forbidden = re.compile(
        r"\b(Status\.|Reason\.|Tier\.|rule_\w+|in_scope|max_age_days|allow_draft|\.status\b|\.updated_at\b)"
    )
    for path in [*PACKAGE.glob("*.py"), *LANGCHAIN.glob("*.py")]:
        hits = [line for line in _code_lines(path) if forbidden.search(line)]
        assert hits == [], f"{path.name}: {hits}"


def test_adapters_hold_no_lifecycle_logic() -> None:
    """Quarantine, tombstones, lineage and deletion audit are the core's: no adapter keeps or writes them.

    The check behind the issue's "adapters hold no lifecycle logic": no adapter module calls a
    ledger's quarantine/tombstone/journal methods or keeps such state of its own, none builds an
    audit record or imports the store-independent decision (``decide_writes``) to run a write path
    of its own, and every write and lifecycle operation goes through ``WriteGate`` and
    ``shared_core.write.lifecycle``. The only ledger call is ``link`` (source lineage, the write
    target's glue for stores that cannot be filtered by metadata).
    """
    forbidden = re.compile(
        r"\.(tombstone|hold|release|journal_begin|journal_end|journal_pending|is_tombstoned)\("
        r"|\b_(held|tombstones|lineage|quarantine)\b|decide_writes|write_audit_record|AuditRecord\(|deletion_record"
    )
    for path in [*PACKAGE.glob("*.py"), *LANGCHAIN.glob("*.py")]:
        hits = [line for line in _code_lines(path) if forbidden.search(line)]
        assert hits == [], f"{path.name}: {hits}"
    calls = [
        ln
        for path in [*PACKAGE.glob("*.py"), *LANGCHAIN.glob("*.py")]
        for ln in _code_lines(path)
        if re.search(r"ledger\.[a-z_]+\(", ln)
    ]
    assert all(re.search(r"ledger\.(link|linked)\(", ln) for ln in calls), calls
    assert "WriteGate(" in (PACKAGE / "vector_store.py").read_text()
    assert "WriteGate(" in (LANGCHAIN / "vectorstore.py").read_text()
    assert "lifecycle." in (PACKAGE / "vector_store.py").read_text()
    assert "lifecycle." in (LANGCHAIN / "vectorstore.py").read_text()


def test_the_framework_neutral_glue_lives_in_the_core_once() -> None:
    """Neither adapter keeps a private copy of the glue: both import shared_core.interop (P1)."""
    assert not (PACKAGE / "_common.py").exists() and not (LANGCHAIN / "_common.py").exists()
    for pkg in (PACKAGE, LANGCHAIN):
        assert any("from shared_core.interop import" in f.read_text() for f in pkg.glob("*.py")), pkg
