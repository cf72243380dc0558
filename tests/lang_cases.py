"""The injection cases of other languages (``injection_lang_cases.jsonl``), shared by the tests of their rules."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from shared_core.screening import InjectionScreen

_CASES = resources.files("shared_core") / "data" / "screening" / "injection_lang_cases.jsonl"
ROWS = [json.loads(line) for line in _CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
LANGS = frozenset(("fr", "es", "pt", "de", "it", "nl", "pl", "ru", "tr", "vi", "id", "ar", "hi", "th", "zh"))
"""The fifteen languages with exfiltration, persona and note-to-the-AI rules of their own."""
SCREEN = InjectionScreen()


def injection_rules(text: str) -> set[str]:
    """The rules of the injection findings the shipped screen has for ``text``."""
    return {f.rule for f in SCREEN.scan(text) if f.kind == "injection"}


def rows(split: str, expect: bool) -> list[dict[str, Any]]:
    """The cases of one split that are attacks (``expect``) or look-alikes."""
    return [r for r in ROWS if r["split"] == split and r["expect"] is expect]


def held(split: str) -> tuple[int, int]:
    """``(attacks with a finding, look-alikes with a finding)`` of one split."""
    return (
        sum(bool(injection_rules(r["text"])) for r in rows(split, True)),
        sum(bool(injection_rules(r["text"])) for r in rows(split, False)),
    )
