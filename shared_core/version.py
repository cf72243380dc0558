"""The package version (one place; ``shared_core.__version__`` re-exports it)."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.2.0"
