"""Text analysis: normalisation, markers, CJK-aware tokens (R6, H4)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from shared_core.text import contains_marker, normalize, tokenize


def test_normalize_folds_width_case_invisibles_and_lookalikes() -> None:
    """Full-width, case, zero-width and Cyrillic look-alikes normalise to plain Latin."""
    assert normalize("ＡＢＣ") == "abc"
    assert normalize("Su\u200bper\u2060") == "super"
    assert normalize("ѕuреr") == "super"


def test_japanese_tokens_are_bigrams() -> None:
    """Japanese runs become overlapping bigrams so BM25 can match without a segmenter."""
    assert tokenize("支払い方針") == ["支払", "払い", "い方", "方針"]
    assert "方針" in tokenize("新しい方針です")


def test_identifiers_kept_whole_and_split() -> None:
    """An error code is a token of its own and also split into parts."""
    toks = tokenize("Error E-4012 in ERR_TIMEOUT")
    assert {"e-4012", "4012", "err_timeout", "timeout"} <= set(toks)


def test_marker_split_across_lines_is_found() -> None:
    """A marker broken by a newline still matches."""
    assert contains_marker("使用\n禁止の文書", ["使用禁止"]) == "使用禁止"
    assert contains_marker("current plan", ["superseded"]) is None


@given(st.text())
def test_text_functions_never_raise(text: str) -> None:
    """normalize and tokenize accept any string, including lone surrogates and NUL."""
    normalize(text + "\ud800\x00")
    tokenize(text + "\ud800\x00")
    contains_marker(text, ["superseded"])
