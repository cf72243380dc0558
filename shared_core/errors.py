"""The one exception tree of recall-gate.

Decisions are data: a memory that may not be recalled or written is a *value* (a
:class:`~shared_core.models.Rejection` or a write decision) carrying a reason code.
An exception means the caller did something wrong or the infrastructure failed::

    RecallGateError                   base of everything raised on purpose
    ├── ConfigError                   a configuration value or file is invalid
    ├── ScopeError                    a query or write has no scope, or an incomplete one
    ├── InputError                    a whole input (file, line, argument) cannot be used
    │   └── HitParseError             one line of an exported-hits file cannot be parsed
    ├── EmbeddingError                the embedding is missing, corrupt, or disagrees with a collection
    └── StoreError                    the memory store could not do what was asked
        ├── StoreLockedError          another process holds the writer lock of a persistent path
        ├── StoreUnavailableError     the Chroma server cannot be reached (retryable)
        └── StoreInconsistentError    the two indexes disagree and could not be repaired

Every message names ids, field names, line numbers or paths, never the text of a memory: error
messages end up in logs, and memory bodies can hold personal data.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "EmbeddingError",
    "HitParseError",
    "InputError",
    "RecallGateError",
    "ScopeError",
    "StoreError",
    "StoreInconsistentError",
    "StoreLockedError",
    "StoreUnavailableError",
]


class RecallGateError(Exception):
    """Base class of every exception recall-gate raises on purpose."""


class ConfigError(RecallGateError, ValueError):
    """Raised when a configuration value, override or TOML file is invalid."""


class ScopeError(RecallGateError, ValueError):
    """Raised when a query or write has no scope or one with empty fields (R1).

    A query without a scope is never run as an unscoped search.
    """


class InputError(RecallGateError, ValueError):
    """Raised when a whole input (a file, an argument) cannot be used."""


class HitParseError(InputError):
    """Raised when a line of an exported-hits file cannot be parsed.

    Attributes:
        line: 1-based line number of the offending line.
    """

    def __init__(self, message: str, *, line: int) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class EmbeddingError(RecallGateError):
    """Raised when the embedding model is missing, corrupt, or does not match a collection."""


class StoreError(RecallGateError):
    """Raised when the memory store cannot do what was asked."""


class StoreLockedError(StoreError):
    """Raised when another process holds the writer lock of a persistent store path."""


class StoreUnavailableError(StoreError):
    """Raised when the Chroma server cannot be reached; retrying later may succeed."""

    retryable = True


class StoreInconsistentError(StoreError):
    """Raised when Chroma and the BM25 index disagree and could not be reconciled."""
