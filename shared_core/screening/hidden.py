"""Hidden text (W5): characters and markup that hide what a model will read from a person.

* Unicode tag characters (invisible ASCII: decoded and screened again), runs of variation
  selectors, bidi controls, zero-width characters inside words, words mixing Latin and Cyrillic
  letters: findings of kind ``hidden_text``;
* the contents of HTML comments (``<!-- ... -->``), markdown comments (``[//]: # (...)``) and
  elements hidden by style (``display:none``, ``visibility:hidden``, ``font-size:0``, the
  ``hidden`` attribute): returned as spans for the injection screen, which screens them with a
  lower bar (an imperative addressed to a reader in text nobody is meant to see).

Every scan is one pass with bounded patterns or ``str.find`` loops: linear in the text.
"""

from __future__ import annotations

import re

from .findings import Finding, Severity

__all__ = ["concealed_spans", "hidden_findings"]

_HIGH, _MEDIUM, _LOW = Severity.HIGH, Severity.MEDIUM, Severity.LOW

_TAG_RUN = re.compile("[\U000e0000-\U000e007f]+")
_VS_RUN = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]{4,}")
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]+")
# zero-width characters between two Latin letters: a word split to dodge keyword filters (between
# letters of other scripts, ZWJ and ZWNJ are ordinary: Persian, Indic scripts, emoji sequences)
_ZW_IN_WORD = re.compile(
    "(?<=[A-Za-z])[\u200b\u200c\u200d\u2060\u2061-\u2064\ufeff\u180e\u034f]+(?=[A-Za-z])"
)
_RTL = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefc]")
_MIXED_WORD = re.compile(r"\b(?=\w*[a-zA-Z])(?=\w*[\u0400-\u04ff])\w+\b")


def _f(rule: str, start: int, end: int, severity: Severity, score: float) -> Finding:
    return Finding(kind="hidden_text", rule=rule, start=start, end=end, severity=severity, score=score)


def hidden_findings(raw: str) -> tuple[list[Finding], list[tuple[int, int, str]]]:
    """Hidden-text findings, and the decoded tag-character runs ``(start, end, text)`` to screen."""
    findings: list[Finding] = []
    decoded: list[tuple[int, int, str]] = []
    if raw.isascii():
        return findings, decoded
    for m in _TAG_RUN.finditer(raw):
        s, e = m.span()
        # an emoji subdivision flag (black flag + tag letters + cancel tag) is legitimate
        if s > 0 and raw[s - 1] == "\U0001f3f4" and raw[e - 1] == "\U000e007f" and e - s <= 8:
            continue
        findings.append(_f("unicode_tag_characters", s, e, _HIGH, 0.95))
        text = "".join(chr(ord(c) - 0xE0000) for c in m.group() if 0xE0020 <= ord(c) <= 0xE007E)
        if text.strip():
            decoded.append((s, e, text))
    for m in _VS_RUN.finditer(raw):
        findings.append(_f("variation_selector_run", m.start(), m.end(), _HIGH, 0.85))
    has_rtl = bool(_RTL.search(raw))
    for m in _BIDI.finditer(raw):
        findings.append(
            _f("bidi_control", m.start(), m.end(), _LOW if has_rtl else _MEDIUM, 0.5 if has_rtl else 0.7)
        )
    zw = list(_ZW_IN_WORD.finditer(raw))
    if zw:
        sev = _MEDIUM if len(zw) >= 2 or any(len(m.group()) > 1 for m in zw) else _LOW
        findings.extend(_f("zero_width_in_word", m.start(), m.end(), sev, 0.6) for m in zw)
    findings.extend(_f("mixed_script_word", m.start(), m.end(), _LOW, 0.5) for m in _MIXED_WORD.finditer(raw))
    return findings, decoded


_MAX_CONCEALED = 64
_HIDDEN_OPEN = re.compile(
    r"<(?P<tag>[a-z][a-z0-9]{0,10})\b[^<>]{0,300}?(?:\bhidden\b|display\s{0,3}:\s{0,3}none|visibility\s{0,3}:"
    r"\s{0,3}hidden|font-size\s{0,3}:\s{0,3}0(?![.\d])|opacity\s{0,3}:\s{0,3}0(?![.\d]))[^<>]{0,300}>",
    re.IGNORECASE,
)
_MD_COMMENT = re.compile(r"^\[(?://|comment|_)\]:\s{0,4}#\s{0,4}[(\"'](?P<body>[^\n]{1,2000})$", re.MULTILINE)


def concealed_spans(raw: str) -> list[tuple[int, int]]:
    """Spans of text a renderer does not show: comment bodies and hidden elements (bounded)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while len(spans) < _MAX_CONCEALED:
        i = raw.find("<!--", pos)
        if i < 0:
            break
        j = raw.find("-->", i + 4)
        end = len(raw) if j < 0 else j
        if end > i + 4:
            spans.append((i + 4, end))
        pos = end + 3
    if "[" in raw and "]:" in raw:
        for m in _MD_COMMENT.finditer(raw):
            if len(spans) >= _MAX_CONCEALED:
                break
            spans.append(m.span("body"))
    if "<" in raw:
        lowered = raw.lower()
        for m in _HIDDEN_OPEN.finditer(raw):
            if len(spans) >= _MAX_CONCEALED:
                break
            close = lowered.find(f"</{m.group('tag').lower()}", m.end())
            end = close if close >= 0 else min(len(raw), m.end() + 2000)
            if end > m.end():
                spans.append((m.end(), end))
    return spans
