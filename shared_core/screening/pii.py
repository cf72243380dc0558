"""Personal-data screen (W4): Presidio's pattern recognizers plus Japanese and Korean patterns.

Presidio's default ``AnalyzerEngine()`` loads spaCy's ``en_core_web_lg`` for named-entity
recognition; that model is not on PyPI and is never loaded here. The engine is built with
Presidio's :class:`~presidio_analyzer.nlp_engine.NoOpNlpEngine`, an NLP engine that loads no
model and returns empty artifacts, so only *pattern* recognizers run: Presidio's e-mail, card
number (Luhn), IBAN, IP address, US SSN / ITIN / passport, UK NHS, crypto wallet and Korean RRN
recognizers, and the recognizers added here (plain ``re`` patterns with a check per match):

========================  =====================================================================
``PHONE_NUMBER``          phone shapes: +46 (0)8 928 571 38, 905-674-3793, 0680 298 70 63,
                          (08) 8747 6301, and any number after "Phone:", "call me on", ...
``CREDIT_CARD``           12-19 digits that pass the Luhn check (Maestro, 19-digit Visa)
``JP_PHONE_NUMBER``       03-1234-5678, 090-1234-5678, 0120-123-456, +81 90 1234 5678
``JP_POSTAL_CODE``        〒123-4567 (only with 〒 or 郵便番号: a bare 123-4567 is too common)
``JP_MY_NUMBER``          12-digit Individual Number with a valid check digit
``KR_PHONE_NUMBER``       010-1234-5678, 02-123-4567, +82 10 1234 5678
========================  =====================================================================

Full-width digits and letters are folded to ASCII first, one character for one, so
``０９０－１２３４－５６７８`` is found and offsets stay those of the original text.

Entities that need a language model (``PERSON``, ``LOCATION``, ``ORGANIZATION``, ``NRP``) are
*not* found: a write policy should rely on this screen for contact data and identifiers only.

Adjustments to Presidio, all for the offline, fast, write-path use:

* its e-mail recognizer validates domains with ``tldextract``'s default extractor, which
  downloads the public-suffix list on first use; an extractor that uses only the list bundled
  with ``tldextract`` replaces it;
* its phone recognizer (``phonenumbers``, eight regions) is off by default
  (``use_phonenumbers=True`` turns it on): it is three times slower than everything else together
  and found no more numbers than the phone shapes above on the evaluation data;
* recognizers of entities that always hold seven digits close together are skipped at once on
  texts without such digits (most text), and the IP recognizer on texts without an IP shape.
* its context enhancer, which raises scores near context words found by the NLP engine (there
  are none without a model) and deep-copies every result to do so, is replaced by one that
  changes nothing.

Building the engine takes tens of milliseconds (importing Presidio about a second); each
:class:`PiiScreen` builds its engine once, on first use, and screens without extra patterns
share a module-level engine.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .findings import (
    DEFAULT_MAX_CHARS,
    Finding,
    Severity,
    check_max_chars,
    check_text,
    resolve_overlaps,
)
from .secrets import luhn_ok

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

__all__ = [
    "DEFAULT_PII_ENTITIES",
    "PII_SEVERITY",
    "PiiPattern",
    "PiiScreen",
    "mask_pii",
    "my_number_ok",
]

DEFAULT_PII_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "IP_ADDRESS",
    "US_SSN",
    "US_ITIN",
    "US_PASSPORT",
    "UK_NHS",
    "CRYPTO",
    "KR_RRN",
    "JP_PHONE_NUMBER",
    "JP_POSTAL_CODE",
    "JP_MY_NUMBER",
    "KR_PHONE_NUMBER",
)
"""Entities reported by default. Left out on purpose: ``DATE_TIME`` (a date alone identifies
nobody and is in most memories), ``URL``, ``UUID``, ``MAC_ADDRESS`` (not personal data),
``US_DRIVER_LICENSE``, ``US_BANK_NUMBER`` and ``MEDICAL_LICENSE`` (patterns so weak that they
match ordinary words, numbers and gene variant ids such as ``rs2060793``). Pass ``entities=`` to choose others; any entity Presidio has a pattern
recognizer for can be named."""

PII_SEVERITY: dict[str, Severity] = {
    "US_SSN": Severity.HIGH,
    "US_ITIN": Severity.HIGH,
    "US_PASSPORT": Severity.HIGH,
    "US_BANK_NUMBER": Severity.HIGH,
    "US_DRIVER_LICENSE": Severity.HIGH,
    "UK_NHS": Severity.HIGH,
    "KR_RRN": Severity.HIGH,
    "JP_MY_NUMBER": Severity.HIGH,
    "CREDIT_CARD": Severity.HIGH,
    "IBAN_CODE": Severity.HIGH,
    "MEDICAL_LICENSE": Severity.HIGH,
    "EMAIL_ADDRESS": Severity.MEDIUM,
    "PHONE_NUMBER": Severity.MEDIUM,
    "JP_PHONE_NUMBER": Severity.MEDIUM,
    "KR_PHONE_NUMBER": Severity.MEDIUM,
    "CRYPTO": Severity.MEDIUM,
    "IP_ADDRESS": Severity.LOW,
    "JP_POSTAL_CODE": Severity.LOW,
    "DATE_TIME": Severity.LOW,
    "URL": Severity.LOW,
}
"""Severity of each entity: government and financial identifiers HIGH, contact data MEDIUM,
quasi-identifiers LOW. Entities not listed are MEDIUM."""


@dataclass(frozen=True)
class PiiPattern:
    """A pattern for personal data Presidio has no recognizer for.

    Attributes:
        entity: entity type reported (``EMPLOYEE_ID``); also the ``<EMPLOYEE_ID>`` mask.
        regex: regular expression (Python ``regex`` syntax; matched case-insensitively).
        score: confidence of a match in ``[0, 1]``.
        severity: severity of a match.
    """

    entity: str
    regex: str
    score: float = 0.6
    severity: Severity = Severity.MEDIUM


def my_number_ok(digits: str) -> bool:
    """Whether 12 digits form a Japanese Individual Number (My Number) with a valid check digit."""
    if len(digits) != 12 or not digits.isdigit():
        return False
    body = [int(c) for c in digits[:11]]
    total = 0
    for n in range(1, 12):  # n-th digit from the right of the first eleven
        q = n + 1 if n <= 6 else n - 5
        total += body[11 - n] * q
    rem = total % 11
    check = 0 if rem <= 1 else 11 - rem
    return check == int(digits[11])


_DATE_LIKE = re.compile(r"^(?:\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4})$")
_DECIMAL = re.compile(r"^\d{1,3}\.\d+(?:\s*[\-–]\s*\d{1,3}\.\d+)?$")


def _phone_text_ok(s: str) -> bool:
    """Whether a phone-number candidate has 7-15 digits and is not a date or decimal range."""
    s = s.strip()
    n = len(_digits(s))
    if s.isdigit() and n < 9:
        return False  # a bare 7-8 digit run is more often a code ("PD 0332991") than a phone
    return 7 <= n <= 15 and not _DATE_LIKE.match(s) and not _DECIMAL.match(s)


_NON_DIGIT = re.compile(r"\D+")


def _digits(text: str) -> str:
    """ASCII digits of ``text`` (full-width and other decimal digits converted)."""
    d = _NON_DIGIT.sub("", text)
    return d if d.isascii() else "".join(str(unicodedata.digit(c, 0)) for c in d)


_FULLWIDTH = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


@dataclass(frozen=True)
class _Rx:
    """One pattern of the regex recognizers added to Presidio.

    The span of ``group`` is reported with ``score`` when ``check`` (if any) accepts its text.
    The pattern only runs when ``gate`` (if any), a cheap pattern, occurs in the lower-cased text.
    """

    name: str
    pattern: re.Pattern[str]
    score: float
    group: int | str = 0
    check: Callable[[str], bool] | None = None
    gate: re.Pattern[str] | None = None


def _rx(
    name: str,
    regex: str,
    score: float,
    *,
    group: int | str = 0,
    check: Callable[[str], bool] | None = None,
    gate: str | None = None,
) -> _Rx:
    return _Rx(name, re.compile(regex), score, group, check, re.compile(gate) if gate else None)


def _jp_phone_ok(s: str) -> bool:
    d = _digits(s)
    if d.startswith("81"):
        d = "0" + d[2:]
    return d.startswith("0") and len(d) in (10, 11)


def _kr_phone_ok(s: str) -> bool:
    d = _digits(s)
    if d.startswith("82"):
        d = "0" + d[2:]
    return d.startswith("0") and 9 <= len(d) <= 11


def _card_number_ok(s: str) -> bool:
    d = _digits(s)
    return 12 <= len(d) <= 19 and d[0] in "23456" and len(set(d)) > 1 and luhn_ok(d)


def _my_number_text_ok(s: str) -> bool:
    return my_number_ok(_digits(s))


_H = "\\-‐‑–—−－ー"  # hyphens: ASCII, Unicode dashes, full-width hyphen, katakana long mark
_PHONE_WORDS = (
    r"(?:phone|tel|telephone|mobile|cell|fax|desk|office|(?:call|reach|text|ring|answer|dial)\w*(?:\s+me)?"
    r"(?:\s+(?:at|on))|whats\s?app|sms|messages\s+to|電話|携帯|連絡先|전화|연락처|휴대폰|telefon|téléphone|teléfono|"
    r"handy)"
)
_SEVEN_DIGITS = re.compile(r"\d(?:[^\d\n]{0,3}\d){6}")


@lru_cache(maxsize=4)
def _has_number_window(text: str) -> bool:
    """Whether seven digits occur with at most three other characters between neighbours."""
    return _SEVEN_DIGITS.search(text) is not None


# A phone word right before something that can start a number: a cheap test before the full
# pattern (which is case-insensitive and slow to search for).
_PHONE_WORD_GATE = (
    r"(?:phone|tel|mobile|cell|fax|desk|office|call|reach|text|ring|answer|dial|app|sms|messages\s+to|電話|携帯|"
    r"連絡先|전화|연락처|휴대폰|telefon|téléphone|teléfono|handy)\w*(?:\s+me)?(?:\s+(?:at|on))?\s?[:：.]?\s{0,4}[\d(+]"
)
_NUMBER = r"\(?\+?\d{1,5}\)?(?:[ .\-]?\(?\d{1,5}\)?){1,5}(?: ?(?:x|ext\.?) ?\d{1,5})?"

# Patterns Presidio has no recognizer for, as (entity, recognizer name, patterns).
_OWN_PATTERNS: tuple[tuple[str, str, tuple[_Rx, ...]], ...] = (
    (
        "JP_PHONE_NUMBER",
        "JpPhoneRecognizer",
        (
            # mobile / IP phone: 090-1234-5678, 050 1234 5678
            _rx(
                "jp_mobile",
                rf"(?<![\d\-])0[5789]0[\s{_H}]?\d{{4}}[\s{_H}]?\d{{4}}(?![\d\-])",
                0.6,
                check=_jp_phone_ok,
            ),
            _rx(
                "jp_tollfree",
                rf"(?<![\d\-])0(?:120|800)[{_H}]?\d{{3}}[{_H}]?\d{{3}}(?![\d\-])",
                0.6,
                check=_jp_phone_ok,
            ),
            # landline: area code of 1-4 digits, then 1-4, then 4; 10 digits in all
            _rx(
                "jp_landline",
                rf"(?<![\d\-])0\d{{1,4}}(?:[{_H}]|\)|）)\d{{1,4}}[{_H}]\d{{4}}(?![\d\-])",
                0.5,
                check=_jp_phone_ok,
            ),
            _rx(
                "jp_landline_paren",
                r"(?<![\d\-])[(（]0\d{1,4}[)）]\s?\d{1,4}[\-－]\d{4}(?![\d\-])",
                0.5,
                check=_jp_phone_ok,
            ),
            _rx(
                "jp_international",
                rf"\+81[\s{_H}]?\(?0?\)?\d{{1,4}}[\s{_H}]?\d{{1,4}}[\s{_H}]?\d{{4}}(?!\d)",
                0.7,
                check=_jp_phone_ok,
            ),
        ),
    ),
    (
        "JP_POSTAL_CODE",
        "JpPostalCodeRecognizer",
        (_rx("jp_postal", rf"(?:〒|郵便番号[:：]?)\s?(?P<n>\d{{3}}[{_H}]?\d{{4}})(?!\d)", 0.85, group="n"),),
    ),
    (
        "JP_MY_NUMBER",
        "JpMyNumberRecognizer",
        (
            _rx(
                "jp_my_number_context",
                r"(?i:マイナンバー|個人番号|my\s?number)[^\d\n]{0,12}(?P<n>\d{4}[\s\-]?\d{4}[\s\-]?\d{4})(?![\d\-])",
                0.9,
                group="n",
                check=_my_number_text_ok,
            ),
            _rx(
                "jp_my_number",
                r"(?<![\d\-])\d{4}[\s\-]?\d{4}[\s\-]?\d{4}(?![\d\-])",
                0.5,
                check=_my_number_text_ok,
            ),
        ),
    ),
    (
        "KR_PHONE_NUMBER",
        "KrPhoneRecognizer",
        (
            _rx(
                "kr_mobile",
                r"(?<![\d\-])01[016789][\s\-.]?\d{3,4}[\s\-.]?\d{4}(?![\d\-])",
                0.6,
                check=_kr_phone_ok,
            ),
            _rx(
                "kr_mobile_intl",
                r"\+82[\s\-]?\(?0?\)?1[016789][\s\-.]?\d{3,4}[\s\-.]?\d{4}(?!\d)",
                0.7,
                check=_kr_phone_ok,
            ),
            _rx(
                "kr_landline",
                r"(?<![\d\-])0(?:2|[3-6][1-5])[\-)]\s?\d{3,4}\-\d{4}(?![\d\-])",
                0.5,
                check=_kr_phone_ok,
            ),
            _rx(
                "kr_landline_intl",
                r"\+82[\s\-]?\(?0?\)?(?:2|[3-6][1-5])[\s\-]\d{3,4}[\s\-]\d{4}(?!\d)",
                0.7,
                check=_kr_phone_ok,
            ),
        ),
    ),
    (
        "PHONE_NUMBER",
        "PhoneShapeRecognizer",
        (
            # international: +46 (0)8 928 571 38, +1-903-140-4508x769, +447700677662
            _rx(
                "phone_intl",
                r"(?<![\w+])\+\d{1,3}[ .\-]?(?:\(0\) ?)?\(?\d{1,4}\)?(?:[ .\-]?\d{2,4}){1,5}(?: ?(?:x|ext\.?) ?\d{1,5})?(?!\d)",
                0.6,
                check=_phone_text_ok,
            ),
            # North American: 905-674-3793, (579)888-3058
            _rx(
                "phone_nanp",
                r"(?<![\d\-.])(?:1[ .\-])?\(?[2-9]\d{2}\)?[ .\-]?\d{3}[ .\-]\d{4}(?: ?x\d{1,5})?(?![\d\-])",
                0.5,
                check=_phone_text_ok,
            ),
            # national format with trunk prefix 0: 0680 298 70 63, 079 2718 1155, 0961-7596216
            _rx(
                "phone_trunk",
                r"(?<![\d\-.,])0[1-9]\d{0,3}(?:[ \-]\d{2,7}){1,4}(?![\d\-])",
                0.4,
                check=_phone_text_ok,
            ),
            # area code in parentheses: (08) 8747 6301
            _rx(
                "phone_paren",
                r"(?<![\w)])\(\d{2,4}\) ?\d{3,4}[ .\-]?\d{3,4}(?: ?x\d{1,5})?(?!\d)",
                0.5,
                check=_phone_text_ok,
            ),
            # any number shape after a phone word: "Phone: 451 5986", "call me on 9472 7916"
            _rx(
                "phone_context",
                rf"(?i:{_PHONE_WORDS})\s?[:：.]?[^\S\n]{{0,3}}\n?[^\S\n]{{0,3}}(?P<n>{_NUMBER})(?!\d)",
                0.5,
                group="n",
                check=_phone_text_ok,
                gate=_PHONE_WORD_GATE,
            ),
            # a number shape followed by a phone word: "781 1704 office", "3660170548-Fax"
            _rx(
                "phone_suffix",
                rf"(?<![\w.])(?P<n>{_NUMBER})(?=[^\S\n]?-?[^\S\n]?(?i:office|fax|mobile|cell|desk|home|work)\b)",
                0.5,
                group="n",
                check=_phone_text_ok,
                gate=r"\d[^\S\n]?-?[^\S\n]?(?:office|fax|mobile|cell|desk|home|work)",
            ),
        ),
    ),
    (
        "CREDIT_CARD",
        "CardNumberRecognizer",
        (
            _rx(
                "card_grouped",
                r"(?<![\d\-])\d{4}(?:[ \-]\d{4}){2}[ \-]\d{1,7}(?![\d\-])",
                0.8,
                check=_card_number_ok,
            ),
            _rx("card_plain", r"(?<![\d\-.,])\d{12,19}(?![\d\-])", 0.6, check=_card_number_ok),
        ),
    ),
)


def _recognizers(extra: Sequence[PiiPattern], *, use_phonenumbers: bool) -> list[Any]:
    """The recognizers added to Presidio's predefined ones (imports Presidio)."""
    from presidio_analyzer import (
        EntityRecognizer,
        LocalRecognizer,
        Pattern,
        PatternRecognizer,
        RecognizerResult,
    )
    from presidio_analyzer.predefined_recognizers import EmailRecognizer, KrRrnRecognizer, PhoneRecognizer

    class _OfflineEmailRecognizer(EmailRecognizer):  # type: ignore[misc]
        """Presidio's e-mail recognizer with a domain check that never downloads anything."""

        def validate_result(self, pattern_text: str) -> bool:
            return bool(_tld_extractor()(pattern_text).fqdn)

    class _GatedPhoneRecognizer(PhoneRecognizer):  # type: ignore[misc]
        """Presidio's phone recognizer, skipped on texts that cannot hold a phone number."""

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            if sum(c.isdigit() for c in text) < 7:
                return []
            return list(super().analyze(text, entities, nlp_artifacts))

    class _RegexRecognizer(LocalRecognizer):  # type: ignore[misc]
        """A recognizer of :class:`_Rx` patterns: Python ``re``, group spans, a check per match."""

        def __init__(self, entity: str, name: str, patterns: Sequence[_Rx]) -> None:
            self._patterns = tuple(patterns)
            self._name = name
            super().__init__(supported_entities=[entity], name=name, supported_language="en")

        def load(self) -> None:
            """Nothing to load."""

        def analyze(self, text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
            if not _has_number_window(text):
                return []  # every pattern here needs seven digits close together
            out = []
            lowered = ""
            for p in self._patterns:
                if p.gate is not None:
                    lowered = lowered or text.lower()
                    if not p.gate.search(lowered):
                        continue
                for m in p.pattern.finditer(text):
                    start, end = m.span(p.group)
                    if start < 0 or end <= start or (p.check is not None and not p.check(text[start:end])):
                        continue
                    out.append(
                        RecognizerResult(
                            entity_type=self.supported_entities[0],
                            start=start,
                            end=end,
                            score=p.score,
                            recognition_metadata={
                                RecognizerResult.RECOGNIZER_NAME_KEY: self._name,
                                RecognizerResult.RECOGNIZER_IDENTIFIER_KEY: getattr(self, "id", self._name),
                            },
                        )
                    )
            return list(EntityRecognizer.remove_duplicates(out))

    recognizers: list[Any] = [
        _OfflineEmailRecognizer(supported_language="en"),
        KrRrnRecognizer(supported_language="en"),
        *(_RegexRecognizer(entity, name, patterns) for entity, name, patterns in _OWN_PATTERNS),
    ]
    if use_phonenumbers:
        recognizers.append(_GatedPhoneRecognizer(supported_language="en"))
    for i, p in enumerate(extra):
        recognizers.append(
            PatternRecognizer(
                supported_entity=p.entity,
                name=f"ExtraPattern{i}_{p.entity}",
                supported_language="en",
                patterns=[Pattern(f"extra_{i}", p.regex, p.score)],
            )
        )
    return recognizers


@lru_cache(maxsize=1)
def _tld_extractor() -> Any:
    """A tldextract extractor that uses only its bundled public-suffix snapshot (no network)."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


_REPLACED = ("EmailRecognizer", "PhoneRecognizer", "KrRrnRecognizer")


# Presidio recognizers whose entities always hold seven digits close together (SSN, card, IBAN,
# ...). They are skipped on texts without such digits, which is most text; Presidio runs every
# recognizer's patterns over the whole text otherwise, and that is most of its time.
_DIGIT_ENTITIES = frozenset(
    {"US_SSN", "US_ITIN", "US_PASSPORT", "US_BANK_NUMBER", "UK_NHS", "CREDIT_CARD", "IBAN_CODE", "KR_RRN"}
)
_IP_SHAPE = re.compile(r"\d\.\d{1,3}\.\d|[0-9A-Fa-f]:[0-9A-Fa-f]{0,4}:")


@lru_cache(maxsize=4)
def _has_ip_shape(text: str) -> bool:
    return _IP_SHAPE.search(text) is not None


def _gate(recognizer: Any, test: Callable[[str], bool]) -> None:
    """Make a Presidio recognizer return nothing at once on texts that fail a cheap ``test``."""
    inner = recognizer.analyze

    def analyze(text: str, entities: list[str], nlp_artifacts: Any = None) -> list[Any]:
        return list(inner(text, entities, nlp_artifacts)) if test(text) else []

    recognizer.analyze = analyze


def _build_engine(extra: Sequence[PiiPattern], *, use_phonenumbers: bool) -> AnalyzerEngine:
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine

    nlp_engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    nlp_engine.load()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.load_predefined_recognizers(languages=["en"], nlp_engine=nlp_engine)
    for name in _REPLACED:
        if any(getattr(r, "name", None) == name for r in registry.recognizers):
            registry.remove_recognizer(name, language="en")
    for recognizer in registry.recognizers:
        entity = recognizer.supported_entities[0] if recognizer.supported_entities else ""
        if entity in _DIGIT_ENTITIES:
            _gate(recognizer, _has_number_window)
        elif entity == "IP_ADDRESS":
            _gate(recognizer, _has_ip_shape)
    for recognizer in _recognizers(extra, use_phonenumbers=use_phonenumbers):
        registry.add_recognizer(recognizer)
    return AnalyzerEngine(
        registry=registry,
        nlp_engine=nlp_engine,
        supported_languages=["en"],
        context_aware_enhancer=_no_context_enhancer(),
    )


def _no_context_enhancer() -> Any:
    """A context enhancer that changes nothing.

    Presidio's default (lemma) enhancer raises scores when context words surround a match, using
    the tokens of the NLP engine; with no NLP model there are no tokens, so it can change nothing,
    but it deep-copies every result first, which is most of Presidio's own time on dense text.
    """
    from presidio_analyzer.context_aware_enhancers import ContextAwareEnhancer

    class _NoContextEnhancer(ContextAwareEnhancer):  # type: ignore[misc]
        def enhance_using_context(
            self,
            text: str,
            raw_results: list[Any],
            nlp_artifacts: Any,
            recognizers: list[Any],
            context: list[str] | None = None,
        ) -> list[Any]:
            return raw_results

    return _NoContextEnhancer(
        context_similarity_factor=0.0,
        min_score_with_context_similarity=0.0,
        context_prefix_count=0,
        context_suffix_count=0,
    )


@lru_cache(maxsize=2)
def _default_engine(use_phonenumbers: bool) -> AnalyzerEngine:
    """The engines shared by every screen without extra patterns (built on first use)."""
    return _build_engine((), use_phonenumbers=use_phonenumbers)


class PiiScreen:
    """Find personal data in text with Presidio pattern recognizers (W4).

    Example::

        screen = PiiScreen()
        findings = screen.scan("call me at 090-1234-5678 or mail taro@example.jp")
        masked = mask_pii(text, findings)  # "call me at <JP_PHONE_NUMBER> or mail <EMAIL_ADDRESS>"

    Args:
        entities: entity types to report (default :data:`DEFAULT_PII_ENTITIES`); extra pattern
            entities are always reported.
        extra_patterns: patterns for entities Presidio does not know.
        score_threshold: findings with a lower confidence are dropped.
        use_phonenumbers: also run Presidio's phone recognizer, which validates numbers of
            eight regions with ``phonenumbers``: a few more phone numbers found, about three
            times slower (see the module docstring).
        max_chars: longest text accepted; longer raises :class:`~shared_core.errors.InputError`.

    Raises:
        InputError: if an option is invalid (an empty entity list, a bad threshold or regex).
    """

    def __init__(
        self,
        *,
        entities: Iterable[str] | None = None,
        extra_patterns: Sequence[PiiPattern] = (),
        score_threshold: float = 0.4,
        use_phonenumbers: bool = False,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.max_chars = check_max_chars(max_chars)
        self.use_phonenumbers = bool(use_phonenumbers)
        if not 0.0 <= score_threshold <= 1.0:
            raise InputError("score_threshold must be in [0, 1]")
        names = tuple(DEFAULT_PII_ENTITIES if entities is None else entities)
        if not names and not extra_patterns:
            raise InputError("PiiScreen needs at least one entity or extra pattern")
        for p in extra_patterns:
            if not isinstance(p, PiiPattern):
                raise InputError("extra_patterns must be PiiPattern instances")
            _check_regex(p.regex)
        self.entities = tuple(dict.fromkeys([*names, *(p.entity for p in extra_patterns)]))
        self.score_threshold = score_threshold
        self._extra = tuple(extra_patterns)
        self._severity = {**PII_SEVERITY, **{p.entity: p.severity for p in self._extra}}
        self._engine: AnalyzerEngine | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> AnalyzerEngine:
        """The Presidio engine of this screen (built on first use, then reused)."""
        if self._engine is None:
            with self._lock:
                if self._engine is None:
                    if self._extra:
                        self._engine = _build_engine(self._extra, use_phonenumbers=self.use_phonenumbers)
                    else:
                        self._engine = _default_engine(self.use_phonenumbers)
        return self._engine

    def scan(self, text: str) -> list[Finding]:
        """Return the personal data found in ``text``.

        Raises:
            InputError: if ``text`` is not a str or is longer than ``max_chars``.
        """
        text = check_text(text, max_chars=self.max_chars)
        if len(text.strip()) < 3:
            return []
        # full-width ASCII (０９０－１２３４, ｔａｒｏ＠ｅｘａｍｐｌｅ．ｊｐ) folded one character for one,
        # so that offsets into the folded text are offsets into the original
        folded = text.translate(_FULLWIDTH) if not text.isascii() else text
        results = self.engine.analyze(
            text=folded, language="en", entities=list(self.entities), score_threshold=self.score_threshold
        )
        findings = [
            Finding(
                kind="pii",
                rule=r.entity_type,
                start=r.start,
                end=r.end,
                severity=self._severity.get(r.entity_type, Severity.MEDIUM),
                score=min(1.0, max(0.0, float(r.score))),
            )
            for r in results
            if 0 <= r.start < r.end <= len(text) and _result_ok(folded, r.entity_type, r.start, r.end)
        ]
        return resolve_overlaps(findings)


def _result_ok(text: str, entity: str, start: int, end: int) -> bool:
    """Whether a Presidio result is kept.

    Numeric matches that are the tail of a decimal number (``0.0332991``) are dropped, and so are
    phone numbers that are not phone-shaped (Presidio's phone recognizer accepts ranges like
    ``0.89-1.26``).
    """
    span = text[start:end]
    if span[:1].isdigit() and start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
        return False
    return entity != "PHONE_NUMBER" or _phone_text_ok(span)


def _check_regex(pattern: str) -> None:
    import regex  # type: ignore[import-untyped]  # Presidio's regex engine; no stubs installed

    try:
        regex.compile(pattern)
    except (regex.error, TypeError) as exc:
        raise InputError(f"extra PII pattern does not compile: {exc}") from None


def mask_pii(text: str, findings: Sequence[Finding]) -> str:
    """Replace every PII span in ``text`` with ``<ENTITY_TYPE>``.

    Only findings of kind ``pii`` are used; overlapping spans are merged and take the entity
    of the most confident finding among them. Our own span replacement rather than
    presidio-anonymizer: the findings are already resolved (no second conflict resolution
    needed), they include entities from our own patterns, and the function stays a pure,
    dependency-free string operation that works with findings from any PII screen.

    Raises:
        InputError: if a finding points outside ``text`` (findings of another text).
    """
    spans = sorted(
        (f for f in findings if f.kind == "pii" and f.end > f.start), key=lambda f: (f.start, -f.end)
    )
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(spans):
        first = spans[i]
        if first.end > len(text):
            raise InputError(
                f"finding {first.rule} [{first.start}:{first.end}] is outside a text of {len(text)}"
            )
        start, end, best = first.start, first.end, first
        i += 1
        while i < len(spans) and spans[i].start < end:
            f = spans[i]
            if f.end > len(text):
                raise InputError(f"finding {f.rule} [{f.start}:{f.end}] is outside a text of {len(text)}")
            end = max(end, f.end)
            if f.score > best.score:
                best = f
            i += 1
        out.append(text[pos:start])
        out.append(f"<{best.rule}>")
        pos = end
    out.append(text[pos:])
    return "".join(out)
