"""recall-gate core: the rules every adapter shares (P1).

This package imports neither LangChain nor LlamaIndex. The names users import are here: the
models, the configuration, the recall gate and its rules, audit records and sinks, the memory
store and the write side (candidates, decisions, paths, policy). The layers behind them, lowest
first: ``model`` -> ``config`` / ``audit`` -> ``retrieval`` / ``recall`` / ``screening`` /
``embedding`` -> ``write`` -> ``store`` -> ``evaluation`` -> ``apps`` (checked by
``tests/test_architecture.py``). The public surface is pinned by ``tests/test_public_api.py``.
"""

from __future__ import annotations

from .audit import AuditRecord, AuditSink, JsonlSink, LoggingSink, capture_audit
from .config import SEED_MIN_SCORE, ConfigBook, GateConfig, WritePolicy, load_config
from .errors import (
    ConfigError,
    EmbeddingError,
    HitParseError,
    InputError,
    RecallGateError,
    ScopeError,
    StoreError,
    StoreInconsistentError,
    StoreLockedError,
    StoreUnavailableError,
)
from .model import (
    Hit,
    MemoryRecord,
    Origin,
    Reason,
    Rejection,
    Scope,
    Status,
    Tier,
    Visibility,
    coerce_scope,
)
from .recall.gate import ConfigDiff, GateResult, RecallGate, estimate_tokens
from .recall.rules import DEFAULT_RULES, GateContext, Rule
from .store import MemoryStore
from .version import __version__
from .write import MemoryCandidate, WriteAction, WriteDecision, WriteReason
from .write.authority import WritePath

__all__ = [
    "DEFAULT_RULES",
    "SEED_MIN_SCORE",
    "AuditRecord",
    "AuditSink",
    "ConfigBook",
    "ConfigDiff",
    "ConfigError",
    "EmbeddingError",
    "GateConfig",
    "GateContext",
    "GateResult",
    "Hit",
    "HitParseError",
    "InputError",
    "JsonlSink",
    "LoggingSink",
    "MemoryCandidate",
    "MemoryRecord",
    "MemoryStore",
    "Origin",
    "Reason",
    "RecallGate",
    "RecallGateError",
    "Rejection",
    "Rule",
    "Scope",
    "ScopeError",
    "Status",
    "StoreError",
    "StoreInconsistentError",
    "StoreLockedError",
    "StoreUnavailableError",
    "Tier",
    "Visibility",
    "WriteAction",
    "WriteDecision",
    "WritePath",
    "WritePolicy",
    "WriteReason",
    "__version__",
    "capture_audit",
    "coerce_scope",
    "estimate_tokens",
    "load_config",
]
