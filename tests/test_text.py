"""Text analysis: normalisation, markers, CJK-aware tokens (R6, H4)."""

from __future__ import annotations

import pytest
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


def test_latin_words_are_stemmed() -> None:
    """Inflections of one English word give one token (Snowball), so they match in BM25."""
    assert tokenize("posting policies") == tokenize("posted policy")
    assert tokenize("Running runs") == ["run", "run"]
    assert tokenize("The refunds") == tokenize("refund")


def test_stemming_leaves_identifiers_scripts_and_bigrams_alone() -> None:
    """Identifiers keep their exact form, CJK stays bigrams, Korean too, digits unchanged."""
    toks = tokenize("ERR_TIMEOUTS E-4012 2024")
    assert "err_timeouts" in toks and "timeout" in toks and "e-4012" in toks and "2024" in toks
    assert tokenize("서울시청") == ["서울", "울시", "시청"]
    assert tokenize("投稿方針") == ["投稿", "稿方", "方針"]


def test_stemming_is_thread_safe() -> None:
    """Several threads tokenizing at once get the same tokens as one thread (one stemmer per thread)."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"running policies {i} postings refunded" for i in range(400)]
    expected = [tokenize(t) for t in texts]
    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(tokenize, texts)) == expected


@pytest.mark.parametrize(
    "text",
    [
        "this policy is super\u2800seded",  # braille blank, renders as a space
        "su\u0301perseded policy",  # a combining accent
        "super-seded by the 2026 rule",
        "SUPER.SEDED",
        "旧・方針：公式投稿は9時",  # the Japanese middle dot
        "舊方針",  # the old character form
        "使用\u3000禁止",  # an ideographic space
    ],
)
def test_marker_spellings_from_the_red_team_are_matched(text: str) -> None:
    """Markers match however they are spelled out (issue 13 item 7, R6)."""
    from shared_core.text import record_has_marker

    assert record_has_marker("", text, ("superseded", "旧方針", "使用禁止")) is not None


def test_marker_matching_does_not_fire_on_ordinary_text() -> None:
    """Words near a marker are not the marker."""
    from shared_core.text import record_has_marker

    for text in ("supersede the old one tomorrow", "the new policy", "方針は新しい", "使用してください"):
        assert record_has_marker("", text, ("superseded", "旧方針", "使用禁止")) is None
