"""Personal-data screen (W4): Presidio's pattern recognizers plus Japanese and Korean patterns.

Presidio's default ``AnalyzerEngine()`` loads spaCy's ``en_core_web_lg`` for named-entity
recognition; that model is not on PyPI and is never loaded here. The engine is built with
Presidio's :class:`~presidio_analyzer.nlp_engine.NoOpNlpEngine`, an NLP engine that loads no
model and returns empty artifacts, so only *pattern* recognizers run: Presidio's e-mail, card
number (Luhn), IBAN, IP address, US SSN / ITIN / passport, UK NHS, crypto wallet and Korean RRN
recognizers; beside them the shared rule engine runs the patterns of the table
``shared_core/data/screening/pii.toml`` (plain ``re`` patterns with a validator per match):

========================  =====================================================================
``PHONE_NUMBER``          phone shapes: +46 (0)8 928 571 38, 905-674-3793, 0680 298 70 63,
                          (08) 8747 6301, and any number after "Phone:", "call me on", ...
``CREDIT_CARD``           12-19 digits that pass the Luhn check (Maestro, 19-digit Visa)
``JP_PHONE_NUMBER``       03-1234-5678, 090-1234-5678, 0120-123-456, +81 90 1234 5678
``JP_POSTAL_CODE``        〒123-4567 (only with 〒 or 郵便番号: a bare 123-4567 is too common)
``JP_MY_NUMBER``          12-digit Individual Number with a valid check digit
``KR_PHONE_NUMBER``       010-1234-5678, 02-123-4567, +82 10 1234 5678
========================  =====================================================================

The screen reads the text through the shared decoding step: full-width digits and letters
folded (``０９０－１２３４－５６７８`` is found), invisible characters removed, escapes decoded;
findings point into the original text.

A run of digits inside a hexadecimal identifier (the groups of a UUID ``645d3466-1130-4077-...``,
a hash) is not a number: about one random UUID in 150 holds a phone-shaped run, and node ids are
UUIDs.

Entities that need a language model (``PERSON``, ``LOCATION``, ``ORGANIZATION``, ``NRP``) are
*not* found: a write policy should rely on this screen for contact data and identifiers only.

Adjustments to Presidio, all for the offline, fast, write-path use:

* its e-mail recognizer validates domains with ``tldextract``'s default extractor, which
  downloads the public-suffix list on first use; an extractor that uses only the list bundled
  with ``tldextract`` replaces it;
* its phone recognizer (``phonenumbers``, eight regions) is off by default
  (``use_phonenumbers=True`` turns it on): it is three times slower than everything else together
  and found no more numbers than the phone shapes above on the evaluation data;
* entities that always hold seven digits close together are not asked for on texts without
  such digits (most text), nor the IP address on texts without an IP shape: Presidio runs only
  the recognizers of the entities it is asked for, so this needs no change to its recognizers;
* nor is an entity none of whose recognizers' patterns matches the text (a pattern recognizer
  reports only where a pattern matches, so this loses nothing): most texts need no Presidio
  call at all, 0.14 ms per 300-character memory instead of 0.7.
* its context enhancer, which raises scores near context words found by the NLP engine (there
  are none without a model) and deep-copies every result to do so, is replaced by one that
  changes nothing.

Building the engine takes tens of milliseconds (importing Presidio about a second); each
:class:`PiiScreen` builds its engine once, on first use, and screens without extra patterns
share a module-level engine.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from .decoding import decoded_views
from .engine import FEATURES, RuleSet, ScreeningEngine, default_engine
from .findings import (
    DEFAULT_MAX_CHARS,
    Finding,
    Severity,
    blocks,
    check_max_chars,
    check_text,
    resolve_overlaps,
)
from .validators import inside_hex_id, my_number_ok, phone_text_ok

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


def _recognizers(extra: Sequence[PiiPattern], *, use_phonenumbers: bool) -> list[Any]:
    """The recognizers added to Presidio's predefined ones (imports Presidio)."""
    from presidio_analyzer import Pattern, PatternRecognizer
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

    recognizers: list[Any] = [
        _OfflineEmailRecognizer(supported_language="en"),
        KrRrnRecognizer(supported_language="en"),
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


# Presidio entities that always hold seven digits close together (SSN, card, IBAN, ...): not
# asked for on texts without such digits, which is most text (Presidio runs every recognizer's
# patterns over the whole text otherwise, and that is most of its time).
_DIGIT_ENTITIES = frozenset(
    {"US_SSN", "US_ITIN", "US_PASSPORT", "US_BANK_NUMBER", "UK_NHS", "CREDIT_CARD", "IBAN_CODE", "KR_RRN"}
)


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
        engine: the rule tables (default: the shipped ones); its ``pii`` rules run beside
            Presidio.
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
        engine: ScreeningEngine | None = None,
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
        self._asked: tuple[str, ...] | None = None
        self._gate: dict[str, tuple[Any, ...] | None] | None = None
        self._lock = threading.Lock()
        rules = (engine if engine is not None else default_engine()).ruleset("pii").rules
        self._rules = RuleSet(r for r in rules if r.id in self.entities and r.score >= score_threshold)

    @property
    def presidio_built(self) -> bool:
        """Whether this screen's Presidio engine has been built yet (it is built on first use)."""
        return self._engine is not None

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
        views = [v for v in decoded_views(text) if v.how == "normalized"]
        target = views[0].text if views else text  # full-width folded, invisible removed, unescaped
        findings = [
            Finding(kind="pii", rule=r.id, start=st, end=en, severity=r.severity, score=r.score)
            for r, st, en in self._rules.matches(target)
        ]
        results = self._analyze(target)
        findings.extend(
            Finding(
                kind="pii",
                rule=r.entity_type,
                start=r.start,
                end=r.end,
                severity=self._severity.get(r.entity_type, Severity.MEDIUM),
                score=min(1.0, max(0.0, float(r.score))),
            )
            for r in results
            if 0 <= r.start < r.end <= len(target) and _result_ok(target, r.entity_type, r.start, r.end)
        )
        findings = [f for f in findings if not _in_hex_id(target, f.start, f.end)]
        if views:
            mapped = []
            for f in findings:
                st, en = views[0].original_span(f.start, f.end)
                mapped.append(f.model_copy(update={"start": st, "end": en}))
            findings = mapped
        return resolve_overlaps(findings)

    def _analyze(self, text: str) -> list[Any]:
        """Presidio's results for ``text``: its digit entities only in the blocks that need them.

        A block is a run of text between blank lines (``screen_fields`` joins a record's fields
        with one). None of Presidio's digit recognizers matches across a line break, so a block
        without seven digits close together cannot hold one of their matches: a long number in a
        record's id no longer runs them over the whole body.
        """
        wanted = self._entities_for(text)
        digit = [e for e in wanted if e in _DIGIT_ENTITIES]
        rest = [e for e in wanted if e not in _DIGIT_ENTITIES]
        results: list[Any] = []
        if rest:  # an empty list would ask Presidio for every entity it knows
            results.extend(self._run(text, rest))
        if digit:
            for m in blocks(text):
                block = m.group()
                if FEATURES["digits7"](block, block):
                    for r in self._run(block, digit):
                        r.start += m.start()
                        r.end += m.start()
                        results.append(r)
        return results

    def _run(self, text: str, entities: list[str]) -> list[Any]:
        gates = self._gates()
        asked = [e for e in entities if _gate_open(gates.get(e), text)]
        if not asked:  # an empty list would ask Presidio for every entity it knows
            return []
        return list(
            self.engine.analyze(
                text=text, language="en", entities=asked, score_threshold=self.score_threshold
            )
        )

    def _gates(self) -> dict[str, tuple[Any, ...] | None]:
        """Per entity, the compiled patterns of its recognizers, or None where one is not gated.

        A Presidio pattern recognizer returns results only where one of its patterns matches
        the text it is given, so an entity none of whose patterns matches needs no call:
        Presidio's own time is in what it does around the match (a call costs about 0.3 ms on a
        300-character text), a failed ``search`` of the same patterns takes microseconds. A
        recognizer that overrides ``analyze`` (other than Presidio's IBAN recognizer, which
        reports sub-spans of its pattern matches) may find things without a pattern match, so an
        entity with one is always asked for. Patterns compile with the recognizer's own flags
        and regex engine, as Presidio compiles them.
        """
        if self._gate is None:
            import regex  # type: ignore[import-untyped]  # Presidio's regex engine; no stubs installed
            from presidio_analyzer import PatternRecognizer

            gates: dict[str, tuple[Any, ...] | None] = {}
            for rec in self.engine.registry.recognizers:
                compiled: tuple[Any, ...] | None = None
                if isinstance(rec, PatternRecognizer) and (
                    type(rec).analyze is PatternRecognizer.analyze or type(rec).__name__ == "IbanRecognizer"
                ):
                    flags = rec.global_regex_flags
                    patterns: list[Any] = rec.patterns  # type: ignore[has-type]  # untyped in Presidio
                    compiled = tuple(regex.compile(p.regex, flags=flags) for p in patterns)
                for entity in rec.supported_entities:
                    before = gates.get(entity, ())
                    gates[entity] = None if compiled is None or before is None else (*before, *compiled)
            self._gate = gates
        return self._gate

    def _entities_for(self, text: str) -> list[str]:
        """The entities worth asking Presidio for in ``text``.

        Its digit entities need seven digits close together, the IP address an IP shape.
        """
        digits = FEATURES["digits7"](text, text)
        ip = FEATURES["ip_shape"](text, text)
        return [
            e
            for e in self._presidio_entities()
            if (digits or e not in _DIGIT_ENTITIES) and (ip or e != "IP_ADDRESS")
        ]

    def _presidio_entities(self) -> tuple[str, ...]:
        """The wanted entities Presidio has a recognizer for (the rest are the rule table's).

        Asking Presidio for an entity it has no recognizer for logs a warning on every call.
        """
        if self._asked is None:
            known = set(self.engine.get_supported_entities(language="en"))
            self._asked = tuple(e for e in self.entities if e in known)
        return self._asked


_REGEX_TIMEOUT = 1.0  # seconds for one gate search; on timeout Presidio (60 s) decides


def _gate_open(patterns: tuple[Any, ...] | None, text: str) -> bool:
    """Whether Presidio can find the entity gated by ``patterns`` in ``text`` (None: always)."""
    if patterns is None:
        return True
    try:
        return any(p.search(text, timeout=_REGEX_TIMEOUT) is not None for p in patterns)
    except TimeoutError:  # Presidio gives up on this pattern too; let it decide
        return True


def _result_ok(text: str, entity: str, start: int, end: int) -> bool:
    """Whether a Presidio result is kept.

    Numeric matches that are the tail of a decimal number (``0.0332991``) are dropped, and so are
    phone numbers that are not phone-shaped (Presidio's phone recognizer accepts ranges like
    ``0.89-1.26``).
    """
    span = text[start:end]
    if span[:1].isdigit() and start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
        return False
    return entity != "PHONE_NUMBER" or phone_text_ok(span)


def _in_hex_id(text: str, start: int, end: int) -> bool:
    """Whether a match of digits (no letters) is part of a UUID, a hash or another hex id."""
    return not any(c.isascii() and c.isalpha() for c in text[start:end]) and inside_hex_id(text, start, end)


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
