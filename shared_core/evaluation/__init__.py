"""Evaluation harness (E1)."""

from __future__ import annotations

from .harness import *  # noqa: F403  (temporary)
