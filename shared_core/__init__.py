"""recall-gate core: the rules every adapter shares (P1).

This package imports neither LangChain nor LlamaIndex. It holds the models, the configuration,
the recall gate and its rules, audit records and sinks, and (in submodules) retrieval, the
memory store and the write gate. The public surface is pinned by ``tests/test_public_api.py``.
"""

from __future__ import annotations

from .audit import AuditRecord, AuditSink, JsonlSink, LoggingSink, capture_audit
from .config import SEED_MIN_SCORE, ConfigBook, GateConfig, load_config
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

__version__ = "0.1.0"

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
    "MemoryRecord",
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
    "__version__",
    "capture_audit",
    "coerce_scope",
    "estimate_tokens",
    "load_config",
]
