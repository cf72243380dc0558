"""Embeddings: the offline default (all-MiniLM-L6-v2 int8) and adapters for any embedding."""

from __future__ import annotations

from .minilm import *  # noqa: F403  (temporary; replaced below)
