"""Whether one changed value names another record or corrects the old one (W2, L1).

"Order 1041 shipped." and "Order 1042 shipped." are one statement with one value changed, and so
are "My office is room 214." and "My office is room 318."; the first pair is two records, both
true, the second a correction. Dedup supersedes a correction (the old value is hidden from
recall) and writes another record beside the first (``changed_fact``): superseding a record that
was not corrected loses it, keeping a corrected value current lets the model read the old one.

What tells them apart is the role of the value in the statement: the id of the thing the note is
about (its subject, the object of an event: "Leo joined the chess club") or the value of a slot
that holds one value at a time (what comes after "is", a label's colon, "now", "current"). A
hand-written rule over word lists got about four in five pairs right on pairs written after it;
so the decision is a logistic regression over the MiniLM embedding of the statement with the value
masked ("Order X shipped.") and eleven surface features of where the value sits (:func:`features`),
trained by ``benchmarks/train_record_change.py`` on labelled pairs (``benchmarks/data/
dedup_change_pairs.jsonl``). MiniLM is the package's own offline embedding; an NLI or a parser
model would need a download. English only: another language keeps the correction it had before.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import pairwise
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError, EmbeddingError
from ..text import common_ends

__all__ = [
    "FEATURES",
    "UNDER_BAR_MARGIN",
    "RecordChangeModel",
    "another_record",
    "change_split",
    "features",
    "many_valued",
    "record_margin",
    "template",
]

_log = logging.getLogger(__name__)

MODEL_FILE = "record_change.json"
"""The shipped weights (``shared_core/data/record_change.json``)."""

_TOKEN = re.compile(r"\S+")
_EDGE = ".,;!?()[]\"'\u201c\u201d\u2018\u2019"
_MAX_WORDS = 200  # longer notes are not one templated statement; the old decision (a correction) stands
_MAX_CHARS = 2_000  # nor are 200 words of 5,000 characters (tokenising them took 0.7 s)

_UNIQUE = frozenset(
    ["current", "currently", "now", "latest", "default", "minimum", "maximum", "required", "recommended", "stable", "primary", "main", "preferred", "usual", "new", "newest", "moved", "rebooked", "rescheduled", "changed", "updated", "instead", "anymore", "progress", "status", "one"]
)
"""Words of a slot that holds one value at a time ("the current release", "the one to pay into")."""
_AUX = frozenset(
    ["is", "was", "are", "were", "be", "been", "being", "has", "have", "had", "will", "would", "can", "could", "should", "shall", "may", "might", "must", "do", "does", "did", "needs", "need", "gets", "got", "isn't", "wasn't", "hasn't", "won't", "can't", "didn't", "doesn't", "aren't", "weren't", "haven't"]
)
_IRREGULAR = frozenset(
    ["paid", "sent", "built", "made", "done", "won", "lost", "left", "bought", "sold", "told", "held", "put", "read", "run", "ran", "begun", "began", "gone", "went", "came", "come", "took", "taken", "gave", "given", "found", "kept", "met", "brought", "caught", "spent", "shut", "quit", "hit", "cut", "let", "said", "broke", "broken", "fell", "fallen", "grew", "drove", "flew", "flown", "wrote", "written", "shipped", "arrived"]
)
_NOT_VERB_ED = frozenset(
    ["red", "bed", "need", "shed", "feed", "seed", "speed", "hundred", "bred", "led", "fed", "wed", "sled", "shred", "weed", "reed", "breed", "deed", "greed", "tweed", "bleed", "united", "limited", "based", "related", "detailed", "advanced", "automated", "dedicated", "scheduled", "required", "supported", "recommended", "preferred", "used", "fixed", "shared"]
)
_RECORD = frozenset(
    ["order", "orders", "invoice", "invoices", "ticket", "tickets", "incident", "issue", "bug", "pr", "commit", "transaction", "payment", "cheque", "check", "shipment", "package", "parcel", "container", "sku", "deal", "story", "task", "pallet", "specimen", "sample", "experiment", "lecture", "homework", "assignment", "exercise", "student", "candidate", "employee", "customer", "client", "patient", "request", "loan", "policy", "subscription", "claim", "refund", "return", "job", "batch"]
)
"""Nouns of records that come many at a time (an order number names one order among many)."""
_ADDITIVE = frozenset(
    ["also", "another", "too", "include", "includes", "including", "included", "among", "several", "some", "both", "other", "others", "additionally", "additional", "second", "third", "list", "each", "every"]
)
"""Words of a relation that holds many values at once ("the team also includes", "another office in")."""
_MANY_KIN = frozenset(
    ["allergy", "allergies", "allergic", "intolerant", "intolerance", "medication", "medications", "medicine", "medicines", "meds", "prescription", "prescriptions", "prescribed", "drug", "drugs", "vaccine", "vaccinated", "diagnosis", "diagnosed", "condition", "conditions", "symptom", "symptoms", "child", "children", "kid", "kids", "son", "sons", "daughter", "daughters", "stepson", "stepdaughter", "stepchild", "stepchildren", "grandchild", "grandchildren", "grandson", "granddaughter", "nephew", "niece", "cousin", "cousins", "sibling", "siblings", "brother", "brothers", "sister", "sisters", "friend", "friends", "pet", "pets", "babysitter", "caregiver", "card", "cards", "subscription", "subscriptions"]
)
"""Words of a person's health, family, pets, cards and subscriptions: relations that often hold several
values at once, where superseding a true one hides an allergy or a child (read under the dedup cosine
only). Not "contact" or "account": in the labelled pairs those were mostly one-value slots ("the client's
main contact", "pay the rent into account ...")."""
_CHANGE_VERBS = frozenset(
    ["moved", "rebooked", "rescheduled", "changed", "updated", "switched", "went", "raised", "lowered", "increased", "decreased", "reduced", "replaced"]
)

FEATURES = (
    "unique",
    "label",
    "subject",
    "record",
    "start",
    "speaker",
    "slot_label",
    "past",
    "change_verb",
    "name",
    "digit",
    "additive",
    "indefinite",
)
"""The surface features of :func:`features`, in the order of the model's ``hand_weights``."""


@dataclass(frozen=True)
class Split:
    """Two texts split into the words they share at each end and the one run that differs."""

    head: tuple[str, ...]
    old: tuple[str, ...]
    new: tuple[str, ...]
    tail: tuple[str, ...]


def _norm(word: str) -> str:
    return word.strip(_EDGE).lower()


def change_split(old: str, new: str) -> Split | None:
    """The common head and tail words of two texts and what lies between (``None``: too long)."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > _MAX_WORDS or len(b) > _MAX_WORDS:
        return None
    h, t = common_ends([_norm(w) for w in a], [_norm(w) for w in b])
    return Split(tuple(a[:h]), tuple(a[h : len(a) - t]), tuple(b[h : len(b) - t]), tuple(a[len(a) - t :]))


def _is_verb(word: str) -> bool:
    n = _norm(word)
    if n in _AUX or n in _IRREGULAR:
        return True
    return len(n) > 4 and n.endswith("ed") and n not in _NOT_VERB_ED


def features(split: Split) -> list[float]:
    """Where the changed value sits, as 0/1 features named by :data:`FEATURES`.

    ``unique``: a word of a one-value slot; ``label`` / ``slot_label``: a colon before the value
    (any, or a label of two words or more, or right before it); ``speaker``: the note opens with a
    speaker's name and a colon; ``subject``: no verb before the value and one after it; ``record``:
    the word before the value is a record noun; ``start``: the value opens the note; ``past``: a
    past-tense or participle verb; ``change_verb``: "moved", "rebooked", ...; ``name`` / ``digit``:
    the old value is capitalised / has a digit; ``additive``: a word of a relation that holds many
    ("also", "another", "includes", "one of"); ``indefinite``: "a" / "an" among the shared words before
    the value ("We have an office in ...").
    """
    head, tail = split.head, split.tail
    hn, tn = [_norm(w) for w in head], [_norm(w) for w in tail]
    words = set(hn) | set(tn)
    colons = [i for i, w in enumerate(head) if w.endswith(":")]
    f = {
        "unique": bool(words & _UNIQUE),
        "label": bool(colons),
        "subject": not any(_is_verb(w) for w in head) and any(_is_verb(w) for w in tail),
        "record": bool(hn) and hn[-1] in _RECORD,
        "start": not head or (len(head) == 1 and head[0].endswith(":")),
        "speaker": bool(head) and head[0].endswith(":") and head[0][:1].isupper() and len(head[0]) > 2,
        "slot_label": bool(colons) and (colons[-1] == len(head) - 1 or colons[-1] >= 1),
        "past": any(_is_verb(w) and _norm(w) not in _AUX for w in (*head, *tail)),
        "change_verb": bool(words & _CHANGE_VERBS),
        "name": bool(split.old) and split.old[0][:1].isupper(),
        "digit": any(ch.isdigit() for w in split.old for ch in w),
        "additive": bool(words & _ADDITIVE) or any(a == "one" and b in ("of", "more") for a, b in pairwise(hn)),
        "indefinite": bool(set(hn) & {"a", "an"}),
    }
    return [float(f[name]) for name in FEATURES]


def template(split: Split) -> str:
    """The statement with its changed value masked: ``"Order X shipped."``."""
    return " ".join((*split.head, "X", *split.tail))


class _Encoder(Protocol):
    name: str

    def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]: ...


@dataclass(frozen=True)
class RecordChangeModel:
    """The weights of :func:`another_record` (``record_change.json``).

    The margin is ``template_embedding @ emb_weights + features @ hand_weights + bias``; above 0
    the changed value names another record.
    """

    encoder: str
    emb_weights: NDArray[np.float64]
    hand_weights: NDArray[np.float64]
    bias: float
    meta: dict[str, Any]

    def margin(self, emb: NDArray[np.floating[Any]], hand: Sequence[float]) -> float:
        """The model's margin for one embedded template and its features."""
        v = float(np.asarray(emb, dtype=np.float64) @ self.emb_weights)
        return v + float(np.asarray(hand, dtype=np.float64) @ self.hand_weights) + self.bias

    def to_json(self) -> str:
        """The model as the JSON of its file (numbers rounded to 6 significant digits)."""

        def r(x: float) -> float:
            return float(f"{x:.6g}")

        doc = {
            "format": 1,
            "encoder": self.encoder,
            "features": list(FEATURES),
            "bias": r(self.bias),
            "hand_weights": [r(v) for v in self.hand_weights],
            "emb_weights": [r(v) for v in self.emb_weights],
            "meta": self.meta,
        }
        return json.dumps(doc, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, *, name: str = "<record-change model>") -> RecordChangeModel:
        """Parse a model file.

        Raises:
            ConfigError: if it is not a model file of this format, its features are not
                :data:`FEATURES`, or a weight is missing or not finite.
        """
        try:
            doc = json.loads(text)
            if doc["format"] != 1 or list(doc["features"]) != list(FEATURES):
                raise ConfigError(f"{name}: unsupported record-change model format")
            emb = np.asarray(doc["emb_weights"], dtype=np.float64)
            hand = np.asarray(doc["hand_weights"], dtype=np.float64)
            bias = float(doc["bias"])
            model = cls(str(doc["encoder"]), emb, hand, bias, dict(doc.get("meta") or {}))
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"{name}: not a record-change model file ({type(exc).__name__})") from None
        if emb.ndim != 1 or hand.shape != (len(FEATURES),):
            raise ConfigError(f"{name}: record-change model weights have the wrong shape")
        if not (np.isfinite(emb).all() and np.isfinite(hand).all() and math.isfinite(bias)):
            raise ConfigError(f"{name}: record-change model weights are not finite")
        return model


@lru_cache(maxsize=1)
def default_model() -> RecordChangeModel:
    """The shipped model (read once)."""
    text = (resources.files("shared_core") / "data" / MODEL_FILE).read_text(encoding="utf-8")
    return RecordChangeModel.from_json(text, name=MODEL_FILE)


def _english(text: str) -> bool:
    """Whether a text is English for the model.

    No letter of another script (emoji, arrows and other symbols are no letters), and not one of
    the twelve Latin and other languages the injection screen's gate reads (a French note is not
    read by an English model).
    """
    from ..screening.semantic_more import other_language

    nfc = unicodedata.normalize("NFC", text)
    return all(ord(ch) <= 0x24F for ch in nfc if ch.isalpha()) and other_language(text) is None


def _identified(head: Sequence[str]) -> bool:
    """Whether the shared words name one record by its number before the value.

    "Invoice 4471 was paid on March 3." / "... March 5.": the same invoice, its date corrected.
    """
    return any(
        _norm(w) in _RECORD and any(ch.isdigit() for ch in head[i + 1])
        for i, w in enumerate(head[:-1])
    )


UNDER_BAR_MARGIN = 2.0
"""How sure the model must be that a value corrects the old one when the two notes are under the
dedup cosine (``WritePolicy.correction_threshold``): margin ``<= -UNDER_BAR_MARGIN``. Chosen on
leave-one-split-out of the five training splits (470 corrections, 469 distinct) at bar 0.6, before
the ``blind2`` split was read (``python benchmarks/train_record_change.py --margins``, with
:func:`many_valued`): corrections / distinct pairs superseded at margin 0: 400 / 57; 1: 381 / 42; 2:
347 / 30; 3: 322 / 23; 4: 296 / 21 (the dedup bar alone: 254 / 18). Margin 1 on ``blind2``: 84 of 98
corrections and 12 of 99 distinct superseded, against 80 and 4 at 2."""


def many_valued(old: str, new: str) -> bool:
    """Whether the words two notes share name a relation of health, family, pets, cards or subscriptions.

    :data:`_MANY_KIN`: "Allergy: Penicillin." / "Allergy: Codeine.", "My son is 7." / "My son is 4.".
    Dedup does not supersede these under its cosine: both values may be true, and hiding one hides
    an allergy or a child.
    """
    split = change_split(old, new)
    if split is None:
        return False
    return bool({_norm(w).strip(":").removesuffix("'s") for w in (*split.head, *split.tail)} & _MANY_KIN)


_VECTORS: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
"""Embedded templates of the default encoder, most recent last: notes of one template ("I met X at the
conference.") share one embedding, so a batch of them costs one MiniLM call, not one per neighbour."""
_VECTORS_MAX = 2048
_VECTORS_LOCK = threading.Lock()  # stores in several threads share the cache


def _template_vector(encoder: _Encoder, text: str, *, cache: bool) -> NDArray[np.float32]:
    if not cache:
        return np.asarray(encoder.embed_documents([text])[0], dtype=np.float32)
    with _VECTORS_LOCK:
        vec = _VECTORS.get(text)
        if vec is not None:
            _VECTORS.move_to_end(text)
            return vec
    vec = np.asarray(encoder.embed_documents([text])[0], dtype=np.float32)
    with _VECTORS_LOCK:
        _VECTORS[text] = vec
        while len(_VECTORS) > _VECTORS_MAX:
            _VECTORS.popitem(last=False)
    return vec


def record_margin(
    old: str, new: str, *, model: RecordChangeModel | None = None, encoder: _Encoder | None = None
) -> float | None:
    """The model's margin that ``new`` names another record than ``old`` (above 0: another record).

    For two texts that are one statement with one value changed (dedup's ``correction``).
    ``None`` when the model does not read the pair: text in another language than English, a
    statement over 200 words or 2,000 characters, a failing embedding (logged without the text).
    ``-inf`` when the shared words name the record by its number ("Invoice 4471 was paid on March
    3." / "... March 5.": the same invoice).

    Raises:
        ConfigError: if the encoder is not the one the model was trained with.
    """
    if len(old) > _MAX_CHARS or len(new) > _MAX_CHARS or not (_english(old) and _english(new)):
        return None
    split = change_split(old, new)
    if split is None or not (split.old or split.new):
        return None
    if _identified(split.head):
        return -math.inf
    chosen = model if model is not None else default_model()
    cache = encoder is None
    if encoder is None:
        from ..embedding.minilm import default_embedding

        encoder = default_embedding()
    if encoder.name != chosen.encoder:
        raise ConfigError(f"the record-change model was trained with {chosen.encoder}, not {encoder.name}")
    try:
        emb = _template_vector(encoder, template(split), cache=cache)
    except EmbeddingError as exc:
        _log.warning("record-change model skipped: %s", exc)
        return None
    if emb.shape != chosen.emb_weights.shape:
        raise ConfigError(
            f"the record-change model has {chosen.emb_weights.shape[0]} embedding weights, "
            f"{encoder.name} makes vectors of {emb.shape[0]}"
        )
    return chosen.margin(emb, features(split))


def another_record(
    old: str, new: str, *, model: RecordChangeModel | None = None, encoder: _Encoder | None = None
) -> bool:
    """Whether ``new`` names another record than ``old`` rather than correcting it.

    :func:`record_margin` above 0. False when the model does not read the pair (another language
    than English, a statement over 200 words or 2,000 characters, a failing embedding) and when the
    shared words name the record by its number: the old value is then superseded, as before.

    Raises:
        ConfigError: if the encoder is not the one the model was trained with.
    """
    margin = record_margin(old, new, model=model, encoder=encoder)
    return margin is not None and margin > 0.0
