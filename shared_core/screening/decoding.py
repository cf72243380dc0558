r"""One decoding step shared by every screen (W4, W5): the text as a reader or a program sees it.

A key or an instruction hidden by an encoding is still a key or an instruction: the screens see
the decoded *views* of a text as well as the text itself, and a finding in a view is mapped back
to the span of the original text it came from. :func:`decoded_views` returns:

``normalized``
    full-width and other compatibility forms folded (NFKC: ``ＰＡＳＳＷＯＲＤ`` is
    ``PASSWORD``), invisible characters removed (zero-width spaces and joiners, bidi controls,
    soft hyphens, tag characters), JSON and backslash escapes decoded (``\u0073``, ``\x73``,
    ``\"``, ``\n``), URL percent-encoding decoded (``%73%6B``), HTML character references
    decoded (``&#115;``, ``&amp;``). Built only when one of these changes the text.
``despaced``
    keys spelled out with a separator between every character (``s k - p r o j - ...``,
    ``g.h.p._.x.x``) joined up.
``reversed``
    long token-like runs (20 characters or more) written backwards, turned round; the view
    holds those tokens only, one a line.
``base64`` / ``base32`` / ``hex``
    blobs that decode to printable UTF-8 text (at most 16 blobs of at most 4,096 characters),
    decoded and decoded again up to ``max_depth`` levels; a finding in a blob maps to the whole
    blob.

:func:`rot13_view` is the ROT13 view the injection screen adds (a key is not written in ROT13;
an instruction is).

Every step is one linear pass (regular expressions without nested repetition, bounded counts),
so the cost of the views is linear in the length of the text. Results are cached for the last
few texts, so the three default screens decode a text once.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from ..text import strip_invisible

__all__ = ["Span", "View", "decoded_views", "rot13_view"]

MAX_BLOBS = 16
"""Most encoded blobs decoded per text (and per decoded blob)."""
MAX_BLOB_CHARS = 4096
"""Longest blob decoded."""
MAX_DEPTH = 2
"""Levels of nested encodings decoded."""


class Span:
    """A map from offsets in a derived text to spans of the text it was derived from.

    The derived text is made of *segments*: copied runs (an offset maps to one offset) and
    replaced runs (every offset in it maps to the whole original run it replaced).
    """

    __slots__ = ("_copied", "_ends", "_orig", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []  # segment start in the derived text
        self._orig: list[tuple[int, int]] = []  # original (start, end) of the segment
        self._copied: list[bool] = []
        self._ends: list[int] = []

    def add(self, out_start: int, out_len: int, orig_start: int, orig_end: int, *, copied: bool) -> None:
        """Append a segment of ``out_len`` derived characters."""
        if out_len <= 0:
            return
        self._starts.append(out_start)
        self._ends.append(out_start + out_len)
        self._orig.append((orig_start, orig_end))
        self._copied.append(copied)

    def _point(self, pos: int, *, end: bool) -> int:
        k = bisect_right(self._starts, pos) - 1
        if k < 0:
            return 0
        o_start, o_end = self._orig[k]
        if self._copied[k]:
            off = min(pos, self._ends[k] - 1) - self._starts[k]
            return o_start + off + (1 if end else 0)
        return o_end if end else o_start

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of the derived span ``[start, end)``."""
        if not self._starts:
            return start, end
        s = self._point(start, end=False)
        e = self._point(max(start, end - 1), end=True)
        return s, max(e, s + 1)


@dataclass(frozen=True)
class View:
    """A decoded view of a text.

    Attributes:
        text: the decoded text.
        how: what was decoded (``normalized``, ``despaced``, ``reversed``, ``base64``,
            ``base32``, ``hex``, ``rot13``; nested blobs read ``base64>hex``).
        maps: the maps from this view back to the original text, innermost first.
        steps: for a ``normalized`` view, what it decoded (``nfkc``, ``escape``, ``url``,
            ``html``).
    """

    text: str
    how: str
    maps: tuple[Span, ...]
    steps: tuple[str, ...] = ()

    @property
    def is_blob(self) -> bool:
        """Whether the view is a decoded blob (findings in it map to the whole blob)."""
        return self.how.split(">")[0] in ("base64", "base32", "hex")

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """The span of the original text that ``[start, end)`` of this view came from."""
        for m in self.maps:
            start, end = m.span(start, end)
        return start, end


def _rewrite(
    text: str, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str | None]
) -> tuple[str, Span] | None:
    """Replace the matches of ``pattern`` (``replace`` returns ``None`` to keep one as it is).

    Returns the new text and its map, or ``None`` when nothing changed.
    """
    out: list[str] = []
    spans = Span()
    pos = 0
    length = 0
    changed = False
    for m in pattern.finditer(text):
        new = replace(m)
        if new is None or new == m.group(0):
            continue
        s, e = m.span()
        if s > pos:
            out.append(text[pos:s])
            spans.add(length, s - pos, pos, s, copied=True)
            length += s - pos
        out.append(new)
        spans.add(length, len(new), s, e, copied=False)
        length += len(new)
        pos = e
        changed = True
    if not changed:
        return None
    if pos < len(text):
        out.append(text[pos:])
        spans.add(length, len(text) - pos, pos, len(text), copied=True)
    return "".join(out), spans


# --- normalized -------------------------------------------------------------------------------


class _FoldTable(dict[int, str]):
    """``str.translate`` table: a non-ASCII character -> NFKC, invisible characters removed."""

    def __missing__(self, cp: int) -> str:
        ch = chr(cp)
        n = strip_invisible(unicodedata.normalize("NFKC", ch)) if not 0xD800 <= cp <= 0xDFFF else ch
        if len(self) < 65536:
            self[cp] = n
        return n


_FOLD = _FoldTable()
_NON_ASCII_RUN = re.compile(r"[^\x00-\x7f]+")


def _folded(text: str) -> tuple[str, Span] | None:
    """NFKC and invisible characters removed, character by character (so spans stay exact)."""
    out: list[str] = []
    spans = Span()
    pos = length = 0
    changed = False
    for m in _NON_ASCII_RUN.finditer(text):
        run = m.group(0)
        if run.translate(_FOLD) == run:
            continue
        for i, ch in enumerate(run, m.start()):
            new = _FOLD[ord(ch)]
            if new == ch:
                continue
            changed = True
            if i > pos:
                out.append(text[pos:i])
                spans.add(length, i - pos, pos, i, copied=True)
                length += i - pos
            out.append(new)
            spans.add(length, len(new), i, i + 1, copied=False)
            length += len(new)
            pos = i + 1
    if not changed:
        return None
    if pos < len(text):
        out.append(text[pos:])
        spans.add(length, len(text) - pos, pos, len(text), copied=True)
    return "".join(out), spans


_ESCAPE = re.compile(
    r"\\u\{[0-9A-Fa-f]{1,6}\}|\\u[0-9A-Fa-f]{4}|\\U[0-9A-Fa-f]{8}|\\x[0-9A-Fa-f]{2}|\\[0-7]{3}|\\[\\\"'/nrtbf]"
)
_SIMPLE_ESCAPES = {
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "b": "\b",
    "f": "\f",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "/": "/",
}


def _unescape(m: re.Match[str]) -> str | None:
    s = m.group(0)
    c = s[1]
    try:
        if c == "u" and s[2] == "{":
            cp = int(s[3:-1], 16)
        elif c in "uUx":
            cp = int(s[2:], 16)
        elif c.isdigit():
            cp = int(s[1:], 8)
        else:
            return _SIMPLE_ESCAPES[c]
    except (ValueError, KeyError):
        return None
    if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF or cp == 0:
        return None
    return chr(cp)


_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _unpercent(m: re.Match[str]) -> str | None:
    raw = bytes(int(m.group(0)[i + 1 : i + 3], 16) for i in range(0, len(m.group(0)), 3))
    text = raw.decode("utf-8", "replace")
    return text if "\x00" not in text else None


_ENTITY = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _unentity(m: re.Match[str]) -> str | None:
    s = html.unescape(m.group(0))
    return s if s != m.group(0) and "\x00" not in s else None


_STEPS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str | None], str, str], ...] = (
    (_ESCAPE, _unescape, "\\", "escape"),
    (_PERCENT_RUN, _unpercent, "%", "url"),
    (_ENTITY, _unentity, "&", "html"),
)


def _normalized(text: str) -> tuple[str, tuple[Span, ...], tuple[str, ...]] | None:
    maps: list[Span] = []
    steps: list[str] = []
    current = text
    if not text.isascii():
        done = _folded(current)
        if done is not None:
            current, m = done
            maps.append(m)
            steps.append("nfkc")
    for pattern, fn, cue, step in _STEPS:
        if cue not in current:
            continue
        done = _rewrite(current, pattern, fn)
        if done is not None:
            current, m = done
            maps.append(m)
            steps.append(step)
            if not current.isascii():  # an escape may decode to full-width or invisible text
                again = _folded(current)
                if again is not None:
                    current, m2 = again
                    maps.append(m2)
    if not maps:
        return None
    return current, tuple(reversed(maps)), tuple(steps)


# --- despaced, reversed -----------------------------------------------------------------------

_MIN_SPACED = 9


_SPACED = re.compile(
    r"(?<!\S)(?:"
    rf"(?P<run>\S(?!\S)(?: \S(?!\S)){{{_MIN_SPACED - 1},}})"  # s k - p r o j: one-character words
    rf"|(?P<tok>\S([.·•_])\S(?:\3\S){{{_MIN_SPACED - 2},}}(?!\S))"  # g.h.p._.a.b.c.d
    r")"
)


def _despaced(text: str) -> tuple[str, Span] | None:
    """Join keys spelled out with a space (or another spacer) between every character.

    Runs of at least nine one-character words separated by single spaces (``s k - p r o j``),
    and single words with one spacer between all their characters (``g.h.p._.a.b.c.d``),
    found by one regular expression (at C speed: a word-by-word loop in Python was a fifth of
    the injection screen's time; ``tests/test_screening_decoding.py`` checks that the two agree).
    """
    edits: list[tuple[int, int, str]] = []
    for m in _SPACED.finditer(text):
        found = m.group("run") if m.group("run") is not None else m.group("tok")
        edits.append((m.start(), m.end(), found[0::2]))
    if not edits:
        return None
    out: list[str] = []
    spans = Span()
    pos = length = 0
    for s, e, new in edits:
        out.append(text[pos:s])
        spans.add(length, s - pos, pos, s, copied=True)
        length += s - pos
        out.append(new)
        spans.add(length, len(new), s, e, copied=False)
        length += len(new)
        pos = e
    out.append(text[pos:])
    spans.add(length, len(text) - pos, pos, len(text), copied=True)
    return "".join(out), spans


_LONG_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.]{20,}")


def _reversed_tokens(text: str) -> tuple[str, Span] | None:
    spans = Span()
    parts: list[str] = []
    length = 0
    for m in _LONG_TOKEN.finditer(text):
        tok = m.group(0)[::-1]
        if parts:
            parts.append("\n")
            length += 1
        parts.append(tok)
        spans.add(length, len(tok), m.start(), m.end(), copied=False)
        length += len(tok)
    if not parts:
        return None
    return "".join(parts), spans


# --- blobs ------------------------------------------------------------------------------------

_B64 = re.compile(
    r"(?<![A-Za-z0-9+/=_\-])(?:[A-Za-z0-9+/]{4}){5,1024}(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?(?![A-Za-z0-9+/=])"
)
_B64URL = re.compile(r"(?<![A-Za-z0-9_\-])[A-Za-z0-9_\-]{24,4096}(?![A-Za-z0-9_\-])")
_B32 = re.compile(r"(?<![A-Za-z0-9=])[A-Z2-7]{24,4096}={0,6}(?![A-Za-z0-9=])")
_HEX = re.compile(r"(?<![0-9A-Fa-f])(?:(?:\\x|0x)?[0-9A-Fa-f]{2}[\s:]?){12,2048}(?![0-9A-Fa-f])")
_BLOB_HINT = re.compile(r"[A-Za-z0-9+/_\-]{20}|\\x[0-9a-fA-F]{2}|0x[0-9a-fA-F]{2}|(?:[0-9a-fA-F]{2}[\s:]){8}")
_HEX_SEP = re.compile(r"\\x|0x|[\s:]")
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")


def printable_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 and mostly printable letters, else ``None``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text or sum(ch.isprintable() or ch in "\n\r\t" for ch in text) < 0.9 * len(text):
        return None
    if len(text) >= 24 and all(ch in _HEXDIGITS for ch in text.strip()):
        return text  # hex inside base64: decoded again at the next level
    if sum(ch.isalpha() for ch in text) < 0.5 * len(text.replace(" ", "")):
        return None
    return text


def _decode_blob(blob: str, how: str) -> str | None:
    s = blob.strip()
    if len(s) > MAX_BLOB_CHARS:
        return None
    try:
        if how == "hex":
            return _decode_hex(s)
        if how == "base32":
            padded = s.rstrip("=")
            padded += "=" * (-len(padded) % 8)
            return printable_text(base64.b32decode(padded))
        padded = s + "=" * (-len(s) % 4)
        if "-" in s or "_" in s:
            return printable_text(base64.urlsafe_b64decode(padded))
        return printable_text(base64.b64decode(padded))
    except (binascii.Error, ValueError):
        return None


_HEX_RUN = re.compile(r"(?:\\x|0x)?[0-9A-Fa-f]{24,}")


def _decode_hex(blob: str) -> str | None:
    """A hex blob as text; else its longest unbroken run of hex digits as text.

    The blob pattern takes hex pairs separated by blanks or colons (``67 68 70``), so two digits
    of prose beside a hex token join it (``08 6768…5f 80``) and a stray byte spoils the UTF-8: the
    unbroken runs of 24 or more digits are tried then, longest first.
    """
    digits = _HEX_SEP.sub("", blob)
    if len(digits) < 24:
        return None
    decoded = printable_text(binascii.unhexlify(digits[: len(digits) // 2 * 2]))
    if decoded is not None:
        return decoded
    runs = sorted((_HEX_SEP.sub("", m.group()) for m in _HEX_RUN.finditer(blob)), key=len, reverse=True)
    for run in runs:
        if run != digits:
            decoded = printable_text(binascii.unhexlify(run[: len(run) // 2 * 2]))
            if decoded is not None:
                return decoded
    return None


def _blobs(text: str) -> list[tuple[int, int, str, str]]:
    """``(start, end, how, decoded)`` of the encoded blobs in ``text`` (bounded)."""
    if not _BLOB_HINT.search(text):
        return []
    seen: list[tuple[int, int, str, str]] = []
    tries = 0
    for rx, how in ((_HEX, "hex"), (_B32, "base32"), (_B64, "base64"), (_B64URL, "base64")):
        for m in rx.finditer(text):
            if len(seen) >= MAX_BLOBS or tries >= 4 * MAX_BLOBS:
                return seen
            s, e = m.span()
            if any(a <= s < b or s <= a < e for a, b, _, _ in seen):
                continue
            tries += 1
            decoded = _decode_blob(m.group(), how)
            if decoded:
                seen.append((s, e, how, decoded))
    return seen


def _blob_map(start: int, end: int, length: int) -> Span:
    m = Span()
    m.add(0, length, start, end, copied=False)
    return m


def _views(text: str, depth: int, max_depth: int, outer: tuple[Span, ...], prefix: str) -> list[View]:
    views: list[View] = []
    normalized = _normalized(text)
    base_text, base_maps = text, outer
    if normalized is not None:
        base_text, maps, steps = normalized
        base_maps = (*maps, *outer)
        views.append(View(base_text, prefix + "normalized", base_maps, steps))
    despaced = _despaced(base_text)
    if despaced is not None:
        views.append(View(despaced[0], prefix + "despaced", (despaced[1], *base_maps)))
    rev = _reversed_tokens(base_text)
    if rev is not None:
        views.append(View(rev[0], prefix + "reversed", (rev[1], *base_maps)))
    if depth < max_depth:
        for s, e, how, decoded in _blobs(base_text):
            maps = (_blob_map(s, e, len(decoded)), *base_maps)
            name = f"{prefix}{how}"
            views.append(View(decoded, name, maps))
            views.extend(_views(decoded, depth + 1, max_depth, maps, name + ">"))
    return views


@lru_cache(maxsize=8)
def _cached(text: str, max_depth: int) -> tuple[View, ...]:
    return tuple(_views(text, 0, max_depth, (), ""))


def decoded_views(text: str, *, max_depth: int = MAX_DEPTH) -> tuple[View, ...]:
    """The decoded views of ``text`` (the text itself is not among them).

    Args:
        text: the text as it will be stored.
        max_depth: how many levels of nested encodings are decoded (0: no blobs).

    Returns:
        The views that differ from the text, each with its map back to the text's offsets.
    """
    return _cached(text, max_depth)


_ROT13_HINT = re.compile(r"[A-Za-z]{4}")


def rot13_view(text: str) -> View | None:
    """The ROT13 view of ``text`` (same length, offsets unchanged), or ``None`` without letters."""
    if not _ROT13_HINT.search(text):
        return None
    return View(codecs.encode(text, "rot13"), "rot13", ())
