"""Option checks and defaults shared by both adapters (the calibrated threshold of the embedding in use)."""

from __future__ import annotations

from typing import Any, Literal

from ..config import SEED_MIN_SCORE, GateConfig
from ..embedding import Embedder, as_embedder
from ..errors import ConfigError
from ..model import (
    Scope,
)
from ..recall.gate import RecallGate

__all__ = [
    "PLAIN_MODES",
    "PlainMode",
    "calibrated_min_score",
    "check_plain",
    "core_embedder",
    "default_gate",
    "positive_int",
]

PlainMode = Literal["reject", "owned"]
PLAIN_MODES: tuple[str, ...] = ("reject", "owned")


# -- options ----------------------------------------------------------------------------------


def positive_int(name: str, value: object, *, allow_none: bool = True) -> None:
    """Raise :class:`ConfigError` unless ``value`` is a positive integer (or ``None``)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer")


def check_plain(mode: object, default: Scope | None) -> None:
    """Validate a ``plain_documents`` option."""
    if mode not in PLAIN_MODES:
        raise ConfigError(f"plain_documents must be one of {list(PLAIN_MODES)}, not {mode!r}")
    if mode == "owned" and default is None:
        raise ConfigError("plain_documents='owned' needs scope=: plain documents belong to that scope")


def core_embedder(obj: Any) -> Embedder:
    """The core :class:`Embedder` of an embedding (the bundled model's wrappers unwrap to it)."""
    inner = getattr(obj, "core_embedder", None)
    if isinstance(inner, Embedder):
        return inner
    return as_embedder(obj)


def calibrated_min_score(*objs: Any) -> float:
    """The calibrated threshold of the first object that has one, else the seeds' 0.78."""
    for obj in objs:
        value = getattr(obj, "recommended_min_score", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return SEED_MIN_SCORE


def default_gate(gate: RecallGate | None, *embeddings: Any, **kwargs: Any) -> RecallGate:
    """``gate``, else a gate at the calibrated threshold of the embedding in use (``kwargs``: sinks, clock)."""
    if gate is not None:
        return gate
    return RecallGate(GateConfig(min_score=calibrated_min_score(*embeddings)), **kwargs)
