"""The LangChain adapter's public surface is small and pinned (STYLE 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import langchain_recall_gate

EXPECTED = {
    "AUDIT_EVENT",
    "PROVENANCE_KEY",
    "AuditCallbackHandler",
    "GatedRetriever",
    "GatedVectorStore",
    "GatedVectorStoreRetriever",
    "MiniLMEmbeddings",
    "RecallGateCompressor",
}


def test_all_is_pinned() -> None:
    """langchain_recall_gate.__all__ is exactly the documented API and every name resolves."""
    assert set(langchain_recall_gate.__all__) == EXPECTED
    for name in langchain_recall_gate.__all__:
        assert getattr(langchain_recall_gate, name) is not None


def test_constants() -> None:
    """The audit event name and the provenance key are the documented strings."""
    assert langchain_recall_gate.AUDIT_EVENT == "recall_gate.audit"
    assert langchain_recall_gate.PROVENANCE_KEY == "recall_gate"


def test_typed_and_imports_no_llamaindex() -> None:
    """The package ships py.typed and importing it pulls in no LlamaIndex module."""
    assert (Path(langchain_recall_gate.__file__).parent / "py.typed").is_file()
    code = "import sys, langchain_recall_gate; print(any(m.startswith('llama_index') for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"
