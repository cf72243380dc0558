"""The public surface is small and pinned (STYLE 1)."""

from __future__ import annotations

import shared_core

EXPECTED_CORE = {
    "DEFAULT_RULES", "SEED_MIN_SCORE", "AuditRecord", "AuditSink", "ConfigBook", "ConfigDiff", "ConfigError",
    "EmbeddingError", "GateConfig", "GateContext", "GateResult", "Hit", "HitParseError", "InputError", "JsonlSink",
    "LoggingSink", "MemoryRecord", "Origin", "Reason", "RecallGate", "RecallGateError", "Rejection", "Rule", "Scope",
    "ScopeError", "Status", "StoreError", "StoreInconsistentError", "StoreLockedError", "StoreUnavailableError",
    "Tier", "Visibility", "__version__", "capture_audit", "coerce_scope", "estimate_tokens", "load_config",
    # what every user of the store and the write side imports (issue "Layered core")
    "MemoryStore", "MemoryCandidate", "WriteAction", "WriteDecision", "WritePath", "WritePolicy", "WriteReason",
}  # fmt: skip


def test_shared_core_all_is_pinned() -> None:
    """shared_core.__all__ is exactly the documented public API and every name resolves."""
    assert set(shared_core.__all__) == EXPECTED_CORE
    for name in shared_core.__all__:
        assert getattr(shared_core, name) is not None


def test_core_imports_no_framework() -> None:
    """shared_core imports neither LangChain nor LlamaIndex (P1, DESIGN)."""
    import subprocess
    import sys

    code = "import sys, shared_core, shared_core.apps.cli, shared_core.store, shared_core.write; print(any(m.startswith(('langchain', 'llama_index')) for m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "False"
