"""Text analysis shared by marker matching (R6), BM25 (H4) and the write-side screens.

Hand-written because no maintained library does exactly this combination offline and fast:

* :func:`normalize` — NFKC (full-width → ASCII, compatibility forms), case folding, removal of
  invisible characters (format characters such as zero-width spaces and joiners, bidi controls,
  soft hyphens, variation selectors and the Unicode tag block), and a small confusables map that
  folds common Cyrillic and Greek look-alikes to Latin (NFKC does neither of the last two).
* :func:`contains_marker` — marker matching that survives case, width, invisible characters,
  look-alike letters and markers split across lines (whitespace is ignored while matching).
* :func:`tokenize` — BM25 tokens: lower-cased word tokens for scripts that separate words with
  spaces, Snowball-stemmed (English) when they are written in Latin letters, and overlapping
  character bigrams for runs of Han, Hiragana, Katakana and Hangul, so that Japanese and Korean
  text is searchable without a morphological analyser.

Stemming uses PyStemmer (the Snowball stemmers in C; the same library LlamaIndex's and bm25s's
BM25 use). It is a real dependency, not an extra: it adds +0.027 nDCG@10 to BM25 alone on SciFact
TRAIN (benchmarks/README.md), it is one small wheel with no dependencies of its own, and ranking
must not change with what happens to be installed. Only words of Latin letters are stemmed
(``policies`` → ``polici``, ``posting`` → ``post``); identifiers keep their whole form (``E-4012``,
``err_timeout``) and their parts are stemmed like words; Cyrillic, Greek and other scripts are left
as they are; CJK bigrams are untouched.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

import Stemmer  # type: ignore[import-not-found]  # PyStemmer ships no type hints

__all__ = [
    "common_ends",
    "contains_marker",
    "marker_key",
    "normalize",
    "record_has_marker",
    "record_marker_key",
    "stem",
    "strip_invisible",
    "tokenize",
]

# Cyrillic and Greek letters that render like Latin ones (lower case, after casefold).
_CONFUSABLES = str.maketrans(
    {
        "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p",
        "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ɡ": "g",
        "α": "a", "ο": "o", "ρ": "p", "ν": "v", "τ": "t", "ι": "i", "κ": "k", "υ": "u", "χ": "x",
        "ε": "e", "ѵ": "v", "ԛ": "q", "ԝ": "w", "ս": "u", "օ": "o", "ո": "n", "հ": "h",
    }
)  # fmt: skip

_INVISIBLE_EXTRA = frozenset({"\u00ad", "\u034f", "\u115f", "\u1160", "\u3164", "\uffa0", "\u180e"})


def _is_invisible(ch: str) -> bool:
    cp = ord(ch)
    if ch in _INVISIBLE_EXTRA:
        return True
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:  # variation selectors
        return True
    if 0xE0000 <= cp <= 0xE007F:  # tag characters
        return True
    return unicodedata.category(ch) == "Cf"  # format: ZW*, bidi controls, BOM, ...


@lru_cache(maxsize=4096)
def _invisible_table_entry(ch: str) -> bool:
    return _is_invisible(ch)


def strip_invisible(text: str) -> str:
    """Remove invisible characters (zero-width, bidi controls, tags, variation selectors, ...)."""
    if text.isascii():
        return text
    return "".join(ch for ch in text if not _invisible_table_entry(ch))


def normalize(text: str) -> str:
    """NFKC, remove invisible characters, case-fold, and fold common look-alike letters to Latin.

    Lone surrogates are dropped rather than raising.
    """
    if not text:
        return ""
    if not text.isascii():
        text = text.encode("utf-8", "ignore").decode("utf-8")  # drops lone surrogates
        text = strip_invisible(unicodedata.normalize("NFKC", strip_invisible(text)))
    return text.casefold().translate(_CONFUSABLES)


_MARKER_VARIANTS = str.maketrans({"舊": "旧"})
"""Traditional / old forms of the characters in the default markers, folded to the common form."""


def marker_key(text: str) -> str:
    """The form markers are matched in: normalised, accents dropped, letters and digits only (R6).

    Beyond :func:`normalize` (case, width, invisible characters, look-alike letters), combining
    marks are dropped (``súperseded``), and so is everything that is not a letter or a digit:
    spaces, hyphens and dots (``super-seded``), the Japanese middle dot (``旧・方針``), the braille
    blank U+2800 that renders as a space. Old character forms of the default markers are folded
    (``舊方針``). Markers are keyed the same way, so a marker matches however it is spelled out.
    """
    decomposed = unicodedata.normalize("NFD", normalize(text))
    kept = "".join(ch for ch in decomposed if unicodedata.category(ch)[0] in "LN")
    return unicodedata.normalize("NFC", kept).translate(_MARKER_VARIANTS)


@lru_cache(maxsize=256)
def _marker_keys(markers: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(k for k in (marker_key(m) for m in markers) if k)


def contains_marker(text: str, markers: Iterable[str]) -> str | None:
    """Return the first marker found in ``text`` (robust to case, width and hidden characters).

    Returns:
        The configured marker that matched, or ``None``.
    """
    markers = tuple(markers)
    key = marker_key(text)
    for marker, mk in zip(markers, _marker_keys(markers), strict=True):
        if mk in key:
            return marker
    return None


@lru_cache(maxsize=8192)
def record_marker_key(title: str, body: str) -> str:
    """Marker key of a record's title and body (cached: the same memory is gated again and again).

    A NUL separator keeps a marker from straddling the title and the body.
    """
    return f"{marker_key(title)}\x00{marker_key(body)}"


def record_has_marker(title: str, body: str, markers: tuple[str, ...]) -> str | None:
    """The first marker found in a record's title or body, or ``None``."""
    key = record_marker_key(title, body)
    for marker, mk in zip(markers, _marker_keys(markers), strict=True):
        if mk in key:
            return marker
    return None


# Runs of CJK ideographs, kana and hangul become bigrams; everything else word tokens.
_CJK = r"\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+(?:[_\-.][^\W_{_CJK}]+)*)")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "which",
        "we",
        "our",
        "these",
        "those",
        "than",
        "then",
        "there",
    ]
)


# Words of Latin letters only (ASCII and Latin-1 / Extended-A/B letters): what the English
# Snowball stemmer is for. Digits, mixed identifiers and other scripts are not stemmed.
_LATIN_WORD = re.compile(r"[a-z\u00df-\u00f6\u00f8-\u024f]+")
_local = threading.local()  # a PyStemmer object is not thread-safe: one per thread


def _stemmer() -> Stemmer.Stemmer:
    st: Stemmer.Stemmer | None = getattr(_local, "stemmer", None)
    if st is None:
        st = _local.stemmer = Stemmer.Stemmer("english")
    return st


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Snowball (English) stem of a lower-case word of Latin letters; other tokens unchanged.

    Cached: words follow Zipf's law, so most calls on a write or a query are repeats (the
    cache is thread-safe; the stemmer behind it is one per thread).
    """
    if _LATIN_WORD.fullmatch(word):
        out: str = _stemmer().stemWord(word)
        return out
    return word


def tokenize(text: str) -> list[str]:
    """BM25 tokens of ``text``: stemmed word tokens plus CJK character bigrams (H4).

    Identifiers such as ``E-4012`` or ``ERR_TIMEOUT`` are kept whole *and* split into their
    parts, so that both the exact code and its pieces match. Stop words are dropped before
    stemming; words of Latin letters are stemmed (see the module docstring).
    """
    out: list[str] = []
    for cjk, word in _TOKEN.findall(normalize(text)):
        if cjk:
            if len(cjk) == 1:
                out.append(cjk)
            else:
                out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
        elif word:
            if word in _STOP:
                continue
            if word.isalnum():
                out.append(stem(word))
            else:
                out.append(word)
                out.extend(stem(p) for p in re.split(r"[_\-.]", word) if p and p not in _STOP)
    return out


def common_ends(a: Sequence[object], b: Sequence[object]) -> tuple[int, int]:
    """How many items two sequences share at the start, and then at the end of what is left.

    Strings or word lists; returns ``(head, tail)`` with ``head + tail <= min(len(a), len(b))``.
    """
    n = min(len(a), len(b))
    head = 0
    while head < n and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    return head, tail
