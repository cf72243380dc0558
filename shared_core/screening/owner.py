"""The user's own standing request to their own assistant, told from a planted order (W5, W3).

A user writes "AIへ：家賃の前日にリマインドして" or "AI야, 링크는 누르지 말고 나한테 먼저 보여 줘" as a
memory: an order to the model, in the words a planted order uses. The screen sees text; the write
path knows who is writing. :func:`is_owner_request` answers the text's half of the question —
*does this read as the owner talking to their assistant, and nothing more?* — and the write gate
asks it only for a candidate whose origin, after the path's authority, is ``user_explicit``
(:mod:`shared_core.write.decide`): the caller vouches that the user said it.

The text's half, from ``shared_core/data/screening/owner_requests.toml``:

* it **opens by addressing the assistant** (AIへ：, アシスタントさん、, AI 비서에게:, 비서님,);
* its injection findings are **all order rules** (an order addressed to the assistant, found by
  the addressing rules, the cue scorer or the semantic screen) — an override, an exfiltration, a
  leak, a persona, persistence, hidden text or a split injection holds it whoever writes;
* nothing in it **works against the user**: the user in the third person or the text's reader
  named as its processor (ユーザー, 이 메일을 읽는), a link or an address, secrecy from the user, a
  skipped confirmation, bulk deletion or sending.

Why hand-written: no library tells a preference from an injection; the patterns are data a
deployment can read and the policy switch (``WritePolicy.owner_requests``) turns it off.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..text import normalize
from .registry import toml_loads

__all__ = ["ORDER_RULES", "is_owner_request"]

_FILE = "owner_requests.toml"


@dataclass(frozen=True)
class _Tables:
    order_rules: frozenset[str]
    opening: dict[str, re.Pattern[str]]
    third_party: dict[str, re.Pattern[str]]
    harm: dict[str, re.Pattern[str]]
    link: re.Pattern[str]


@lru_cache(maxsize=1)
def _tables() -> _Tables:
    text = (resources.files("shared_core") / "data" / "screening" / _FILE).read_text(encoding="utf-8")
    doc = toml_loads(text)
    against = doc["against_user"]
    return _Tables(
        order_rules=frozenset(doc["order_rules"]),
        opening={lang: re.compile(p) for lang, p in doc["opening"].items()},
        third_party={lang: re.compile(against[f"{lang}_third_party"]) for lang in ("ja", "ko")},
        harm={lang: re.compile(against[f"{lang}_harm"]) for lang in ("ja", "ko")},
        link=re.compile(against["link"]),
    )


ORDER_RULES: frozenset[str] = _tables().order_rules
"""Rule names an owner's request may carry (the others always hold)."""


def is_owner_request(text: str, rules: Collection[str]) -> bool:
    """Whether ``text``, with injection findings ``rules``, reads as the owner's request to their assistant.

    Only the text's half of the decision: the caller must also know that the user wrote it
    (origin ``user_explicit`` from the write path). ``rules`` empty is ``False`` (nothing to waive).
    """
    if not rules or not set(rules) <= ORDER_RULES:
        return False
    t = _tables()
    norm = normalize(text)
    langs = [lang for lang, pattern in t.opening.items() if pattern.match(norm)]
    if not langs or t.link.search(norm):
        return False
    return not any(t.third_party[lang].search(norm) or t.harm[lang].search(norm) for lang in langs)
