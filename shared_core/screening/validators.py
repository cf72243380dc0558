"""The named validators and text features the rule tables refer to (W4, W5).

A rule in ``shared_core/data/screening/*.toml`` names its validator (``validator = "card"``)
and the feature the text must have (``needs = "token20"``); both are registered here, by name,
in :data:`~shared_core.screening.engine.VALIDATORS` and
:data:`~shared_core.screening.engine.FEATURES`. A validator takes the match and the group it
is to look at and says whether the match is kept.

The secret validators tell a real value from code and placeholders: ``$VAR``, ``${VAR}``,
``<your-key>``, ``XXXX``, ``os.environ[...]``, a function call, a path, a form label. Their word
lists (what a secret's name is made of, which words follow "password is" without being a
password) are in ``words.toml`` beside the rule tables.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from importlib import resources
from re import Match

from .orders import ORDER_VALIDATORS
from .orders_en import EN_AI_MENTION, EN_ORDER_VALIDATORS
from .registry import FEATURES, VALIDATORS, toml_loads
from .speech import has_cjk

__all__ = ["card_digits_ok", "inside_hex_id", "looks_made_up", "luhn_ok", "my_number_ok", "value_ok"]


@lru_cache(maxsize=1)
def _words() -> dict[str, frozenset[str]]:
    path = resources.files("shared_core") / "data" / "screening" / "words.toml"
    doc = toml_loads(path.read_text(encoding="utf-8"))
    return {k: frozenset(v) for k, v in doc.items()}


def luhn_ok(digits: str) -> bool:
    """Whether a string of ASCII digits passes the Luhn (mod 10) check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_HEX_ID_CHARS = frozenset("0123456789abcdefABCDEF-")
_HEX_LETTERS = frozenset("abcdefABCDEF")
HEX_ID_MIN = 16
"""Hex digits an identifier around a digit match needs before the match counts as part of it."""


def inside_hex_id(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies inside a hexadecimal identifier (a UUID, a hash, a hex id).

    The run of hex digits and dashes around the span must hold at least :data:`HEX_ID_MIN` hex
    digits, at least one of them a letter: the digit groups of ``645d3466-1130-4077-8c7a-...``
    or ``d556060750834fdc...`` are not a card or a phone number (about one random UUID in 150
    holds a phone-shaped run, one in 3,000 a Luhn-valid grouped one). A number written on its
    own (``4111 1111 1111 1111``, ``TEL0312345678``) has no hex letters around it and is kept. A
    card deliberately run into hex digits (``...1111-abcdef0123``) reads as an id too: UUID groups
    can align with a card's (``34329882-4138-4153-ac02-...``), so the two cannot be told apart.
    """
    lo, hi = start, end
    while lo > 0 and text[lo - 1] in _HEX_ID_CHARS:
        lo -= 1
    while hi < len(text) and text[hi] in _HEX_ID_CHARS:
        hi += 1
    run = text[lo:hi]
    if any(c not in _HEX_ID_CHARS for c in run) or not any(c in _HEX_LETTERS for c in run):
        return False
    return sum(c != "-" for c in run) >= HEX_ID_MIN


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


# ---------------------------------------------------------------------------------------------
# Value filters
# ---------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"^(?:"
    r"[$%@&]"  # $VAR, ${VAR}, %VAR%, @var
    r"|[{<\[(]"  # {{x}}, <your-key>, [value], (x)
    r"|.*\b(?:process\.env|os\.environ|getenv|env\(|ENV\[|secrets\.|vault\()"
    r"|(?:x+|\*+|\.+|\#+|-+|_+|0+|1234|12345|123456|abc123)$"  # XXXX, ****, ####
    r"|(?:your|insert|enter|put|replace|example|sample|dummy)[-_\s]"
    r"|.*(?:[-_.]your[-_]|[-_](?:here|goes[-_]here)$|x{5}|X{5}|\*{4})"  # xkeysib-your-key-here, sk-xxxxx
    r"|(?:none|null|nil|undefined|true|false|empty|required|optional|string|str|bytes|int|text|number|boolean|bool"
    r"|float|double|any|object|unknown|void|date|uuid"
    r"|value|redacted|hidden|masked|todo|tbd|n/?a|placeholder|changeme_?here)$"
    r")",
    re.IGNORECASE,
)
_CODE_VALUE = re.compile(r"^[A-Za-z_][\w.]*(?:\(|\[|\.[A-Za-z_]\w*$)")  # call, index, attribute
_ESCAPES = str.maketrans("", "", "\\")
# string concatenation ("..." + x + "..."), paths and URLs, or a form label ending in ":".
_NOT_A_VALUE = re.compile(r"^\s*\+|\+\s*$|^(?:/|\./|\.\./|[a-z][a-z0-9+.\-]*://)|^[A-Za-z ]{3,20}:$")


def value_ok(value: str, *, quoted: bool) -> bool:
    """Whether an assigned value looks like a real secret rather than code or a placeholder."""
    v = value.strip().translate(_ESCAPES).strip("'\"`")
    if len(v) < 4 or len(v) > 512 or len(set(v)) <= 2:
        return False
    if v.isdigit() and len(v) < 8:
        return False  # max_tokens = 4096, port = 5432
    if _PLACEHOLDER.match(v) or _NOT_A_VALUE.search(v):
        return False
    return quoted or not _CODE_VALUE.match(v)


def _looks_random(v: str) -> bool:
    """A value that looks machine-generated: long, with letters and digits."""
    return len(v) >= 16 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


_NON_ALNUM = re.compile(r"[\W_]+")
_NAME_PARTS = re.compile(r"[_.\-\s$@>:\[\]'\"]+|(?<=[a-z0-9])(?=[A-Z])")
_STRONG_WORD = re.compile(
    r"[a-z]*(?:password|passwd|passwort|kennwort|contrase[ñn]a|passphrase|passcode|secret|"
    r"token|apikey|credentials?|pwd)|pw|pass|pat|psk|pin",
)


def _name_strength(name: str) -> int:
    """2: the name says it holds a secret; 1: it holds a key or login; 0: neither."""
    words = _words()
    parts = [p.casefold() for p in _NAME_PARTS.split(name) if p]
    if not parts or parts[-1] in words["describing_suffixes"]:
        return 0  # passwordLabel, token_url, api_key_name: about a secret, not the secret
    parts = [p for p in parts if p not in words["not_secret_names"]]
    if any(_STRONG_WORD.fullmatch(p) for p in parts):
        return 2
    qualifiers = words["key_qualifiers"]
    if any(p in ("key", "keys") or p.endswith("key") for p in parts):
        if any(p in qualifiers for p in parts) or any(
            p.endswith("key") and p[:-3] in qualifiers for p in parts
        ):
            return 2
        return 1
    if any(p in ("login", "auth", "crumb", "signature", "sig") for p in parts):
        return 1
    return 0


def _assignment(m: Match[str], g: int | str) -> bool:
    name = m.group("name")
    strength = _name_strength(name)
    if strength == 0:
        return False
    value = m.group("value")
    squashed_name = _NON_ALNUM.sub("", name).casefold()
    if len(squashed_name) > 8 and squashed_name in _NON_ALNUM.sub("", value).casefold():
        return False  # IAMUserChangePassword = "arn:...:policy/IAMUserChangePassword"
    quoted = "q" in m.re.groupindex and bool(m.group("q"))
    if not value_ok(value, quoted=quoted):
        return False
    if not quoted and _IDENTIFIER.fullmatch(value):
        return False  # PASSWORD :new_password (a bind parameter or a name in code)
    if not quoted and _NON_ALNUM.sub("", value).casefold() == squashed_name:
        return False  # send_email(..., token=token): a variable passed on under its own name
    return strength == 2 or _looks_random(value)


_QUOTES = "'\"`“”‘’「」『』«»„"
_IDENTIFIER = re.compile(r"[a-z]+(?:_[a-z]+)+")


_QUANTITY = re.compile(r"\d{1,3}(?:\s*[~〜\-–]\s*\d{1,3})?\s*[%+]?")
_UNIT = re.compile(r"\s*(?:文字|桁|字|자리|자|글자|characters?|chars?|digits?)")
_LATER_MADE_UP = re.compile(r"(?<![!-~])[!-~]{6,64}(?![!-~])")


def _is_quantity(m: Match[str], v: str) -> bool:
    """A share (100%) or a length (4~10자리, 8-16文字), never a password.

    A range with a hyphen counts only before a unit (12-34 alone may be a locker code).
    """
    if not _QUANTITY.fullmatch(v):
        return False
    if v.endswith(("%", "+")) or "~" in v or "〜" in v:
        return True
    return _UNIT.match(m.string, m.end()) is not None


_PARTICIPLES = frozenset(
    {
        "printed", "shown", "written", "stored", "attached", "included", "listed", "displayed", "provided",
        "enclosed", "saved", "sent", "emailed", "texted", "encrypted", "hashed", "hidden", "masked", "required",
        "needed", "expired", "changed", "updated", "located", "kept", "posted", "taped", "stuck", "noted", "given",
        "mailed", "delivered",
    }
)  # where or how a password is, said after "is" ("the temporary PIN is printed on the receipt")
_WHERE_NEXT = re.compile(
    r"[.,;:!?]*(?:\s+(?:on|in|at|by|to|below|above|under|with|from|for|into|onto|inside|here|there|separately)\b|\s*$|[.!?])"
)


def _prose(m: Match[str], g: int | str) -> bool:
    """A password stated in a sentence: quoted, or a token that is not an ordinary word."""
    v = m.group("value").strip(_QUOTES + ".,;:!?。、")
    quoted = "q" in m.re.groupindex and bool(m.group("q"))
    if len(v) < 3 or len(v) > 128:
        return False
    if v.casefold() in _words()["prose_stop"] or _is_quantity(m, v):
        # 비밀번호는 4~10자리, パスワードは8-16文字, 100%, パスワードはbcryptで: not the value; but a
        # made-up token further on in a Japanese/Korean sentence is (パスワードは1Passwordにも
        # 入れたけど、メモ：Kx7#pL2qVz): the label was this match's, so no other match reads it
        later = _LATER_MADE_UP.finditer(m.string, m.end(), m.end() + 60)
        return has_cjk(m.group(0)) and any(_generated(t.group(0).strip(_QUOTES + ".,;:!?")) for t in later)
    if not value_ok(v, quoted=quoted):
        return False
    if not quoted and _IDENTIFIER.fullmatch(v):
        return False  # PASSWORD :new_password, password: db_pass (a name in code, not a value)
    if not quoted and v in _PARTICIPLES and _WHERE_NEXT.match(m.string, m.end()):
        return False  # "the temporary PIN is printed on the receipt": a participle, where it is
    return quoted or not (v.isalpha() and v.islower() and len(v) < 6)


def _prose_loose(m: Match[str], g: int | str) -> bool:
    """Looser context ("the following password ...:"), so the value must look like a secret."""
    v = m.group("value").strip(_QUOTES + ".,;:!?")
    if not _prose(m, g):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    has_other = any(not c.isalnum() for c in v)
    return len(v) >= 6 and ((has_digit and has_alpha) or (has_other and has_alpha) or v != v.lower())


def _generated(v: str) -> bool:
    """A value that looks made up as a password: letters and digits, and mixed case or a symbol."""
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isascii() and c.isalpha() for c in v)
    has_upper = any(c.isupper() for c in v)
    has_lower = any(c.islower() for c in v)
    has_symbol = any(not c.isalnum() and c not in "-._/" for c in v)
    return has_alpha and has_digit and ((has_upper and has_lower) or has_symbol)


looks_made_up = _generated
"""A value that looks made up as a password (the write gate keeps such a value in an id field)."""


def _prose_bare(m: Match[str], g: int | str) -> bool:
    """A password after its label with no verb or particle (``パスワード Tr0ub4dor&3x``).

    With no verb to say that a value follows, the value must look made up: letters with digits,
    and mixed case or a symbol (``Sakura2024!``, not ``SHA256`` or ``reset``).
    """
    v = m.group("value").strip(_QUOTES + ".,;:!?。、")
    if not _prose(m, g) or len(v) < 6:
        return False
    return _generated(v)


def _cli_secret(m: Match[str], g: int | str) -> bool:
    """The value of a ``--password`` style option: quoted, or made up (not a word or a flag)."""
    v = m.group("value")
    if v.startswith("-") or not value_ok(v, quoted=True):
        return False
    quoted = "q" in m.re.groupindex and bool(m.group("q"))
    if quoted:
        return True
    return _generated(v) or _looks_random(v)


def _env_fallback(m: Match[str], g: int | str) -> bool:
    """A literal default after an environment lookup: a secret-named variable, or a made-up value."""
    v = m.group(g) or ""
    if not value_ok(v, quoted=True):
        return False
    names = [m.group(n) for n in ("name", "name2") if n in m.re.groupindex and m.group(n)]
    if any(_name_strength(n) == 2 for n in names):
        return True
    return _looks_random(v) and (_generated(v) or len(v) >= 24)


_CARD_IIN = re.compile(
    r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35)"
)
_NON_DIGIT = re.compile(r"\D")
_CARD_WORDS = re.compile(
    r"(?i:card|visa|master|amex|discover|jcb|diners|credit|debit|cc\b|cc[-_ ]?num|pan\b|"
    r"カード|クレジット|카드|신용|卡号|卡號|信用卡|karte|tarjeta|carte)"
)


def card_digits_ok(digits: str) -> bool:
    """Whether 13-19 ASCII digits have a card issuer prefix and pass the Luhn check."""
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2 or not digits.isascii():
        return False
    return bool(_CARD_IIN.match(digits)) and luhn_ok(digits)


def _card(m: Match[str], g: int | str) -> bool:
    """A card number: Luhn-valid digits in a card-like context.

    Part of a decimal number (``0.6511772622175621``) or of a hex identifier (a UUID) is never a
    card; digits written in groups (``4111 1111 1111 1111``, ``4111.1111.1111.1111``) are; an
    ungrouped run of digits counts only with a card word (card, visa, カード, 카드, ...) shortly
    before it.
    """
    text, (start, end) = m.string, m.span()
    if start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
        return False
    if inside_hex_id(text, start, end):  # the digit groups of a UUID or a hash
        return False
    if end + 1 < len(text) and text[end] in ".," and text[end + 1].isdigit():
        return False
    s = m.group(0)
    if not card_digits_ok(_NON_DIGIT.sub("", s)):
        return False
    if any(c in " -." for c in s):
        seps = {c for c in s if not c.isdigit()}
        return len(seps) == 1
    return _CARD_WORDS.search(text, max(0, start - 40), start) is not None


def _has_digit(m: Match[str], g: int | str) -> bool:
    return any(c.isdigit() for c in m.group(0))


def _has_digit_and_upper(m: Match[str], g: int | str) -> bool:
    s = m.group(0).partition("-")[2]
    return any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)


def _random_group(m: Match[str], g: int | str) -> bool:
    v = m.group(g) or ""
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _value_quoted(m: Match[str], g: int | str) -> bool:
    return value_ok(m.group(g) or "", quoted=True)


def _value_unquoted(m: Match[str], g: int | str) -> bool:
    return value_ok(m.group(g) or "", quoted=False)


def _jwt(m: Match[str], g: int | str) -> bool:
    s = m.group(0)
    return len(s) >= 30 and s.count(".") >= 2  # detect-secrets' JWT pattern is loose


def _basic_auth(m: Match[str], g: int | str) -> bool:
    return m.lastindex is not None and value_ok(m.group(1), quoted=True)


def _absent(m: Match[str], g: int | str) -> bool:
    """The group took no part in the match.

    For an optional part that, when present, makes the match no finding: a prohibition before a verb
    ("never send passwords to ...") is a rule the writer states, not a request.
    """
    return m.group(g) is None


def _digit_and_letters(m: Match[str], g: int | str) -> bool:
    s = m.group(0)
    return any(c.isdigit() for c in s) and sum(c.isalpha() for c in s) >= 4


def _long_key(m: Match[str], g: int | str) -> bool:
    """An Artifactory API key: ``AKC`` and 70 more characters (60 at least), digits among them.

    detect-secrets' pattern takes ``AKC`` and ten characters: a ULID such as
    ``AKCTBJZTQSGDH7A94BB4BAFEWD`` (26 characters) is an id, not a key.
    """
    return len(m.group(0).strip(" \t\r\n=:\"")) >= 63 and _digit_and_letters(m, g)


_UPPER_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _standalone_key_id(m: Match[str], g: int | str) -> bool:
    """An AWS access key id stands alone: 20 characters not glued to more letters or digits.

    detect-secrets' pattern has no boundaries, so it finds ``A3TP86HXGHK4Z09Y8H7D`` inside the
    ULID ``310JR4A3TP86HXGHK4Z09Y8H7D``. Its other pattern (``aws ... key ... '<40 chars>'``) is
    kept as it is.
    """
    s, (start, end) = m.group(0), m.span()
    if len(s) != 20 or not set(s) <= _UPPER_ALNUM:
        return True
    text = m.string
    glued = (start > 0 and text[start - 1].isascii() and text[start - 1].isalnum()) or (
        end < len(text) and text[end].isascii() and text[end].isalnum()
    )
    return not glued


def _private_key_body(m: Match[str], g: int | str) -> bool:
    """A base64 body of a private key without its header: long, mixed case, digits."""
    s = "".join(m.group(0).split())
    return (
        len(s) >= (200 if s.startswith("MII") else 60)
        and any(c.isdigit() for c in s)
        and any(c.isupper() for c in s)
        and any(c.islower() for c in s)
    )


# --- PII --------------------------------------------------------------------------------------


def _digits(text: str) -> str:
    """ASCII digits of ``text`` (full-width and other decimal digits converted)."""
    d = _NON_DIGIT.sub("", text)
    return d if d.isascii() else "".join(str(unicodedata.digit(c, 0)) for c in d)


_DATE_LIKE = re.compile(r"^(?:\d{4}[./\-]\d{1,2}[./\-]\d{1,2}|\d{1,2}[./\-]\d{1,2}[./\-]\d{2,4})$")
_DECIMAL = re.compile(r"^\d{1,3}\.\d+(?:\s*[\-–]\s*\d{1,3}\.\d+)?$")


def phone_text_ok(s: str) -> bool:
    """Whether a phone-number candidate has 7-15 digits and is not a date or decimal range."""
    s = s.strip()
    n = len(_digits(s))
    if s.isdigit() and n < 9:
        return False  # a bare 7-8 digit run is more often a code ("PD 0332991") than a phone
    return 7 <= n <= 15 and not _DATE_LIKE.match(s) and not _DECIMAL.match(s)


def _phone(m: Match[str], g: int | str) -> bool:
    return phone_text_ok(m.group(g) or m.group(0))


def _jp_phone(m: Match[str], g: int | str) -> bool:
    d = _digits(m.group(g) or m.group(0))
    if d.startswith("81"):
        d = "0" + d[2:]
    return d.startswith("0") and len(d) in (10, 11)


def _kr_phone(m: Match[str], g: int | str) -> bool:
    d = _digits(m.group(g) or m.group(0))
    if d.startswith("82"):
        d = "0" + d[2:]
    return d.startswith("0") and 9 <= len(d) <= 11


def _pii_card(m: Match[str], g: int | str) -> bool:
    d = _digits(m.group(g) or m.group(0))
    return 12 <= len(d) <= 19 and d[0] in "23456" and len(set(d)) > 1 and luhn_ok(d)


def _my_number(m: Match[str], g: int | str) -> bool:
    return my_number_ok(_digits(m.group(g) or m.group(0)))


# ---------------------------------------------------------------------------------------------
# Features
# ---------------------------------------------------------------------------------------------

_TOKEN20 = re.compile(r"[A-Za-z0-9_\-+/]{20}")
_DIGITS12 = re.compile(r"\d{4}[ \-.]?\d{4,6}[ \-.]?\d{4}")
_SEVEN_DIGITS = re.compile(r"\d(?:[^\d\n]{0,3}\d){6}")
_IP_SHAPE = re.compile(r"\d\.\d{1,3}\.\d|[0-9A-Fa-f]:[0-9A-Fa-f]{0,4}:")
_ASSIGN_KEYWORDS = (
    "pass", "pw", "secret", "token", "key", "credential", "auth", "login", "pat", "psk", "pin", "contrase",
    "kennwort", "crumb", "sig",
)  # fmt: skip
_ASSIGN_AFTER = re.compile(r"[\w.\-$>]{0,40}?[\"'\]]{0,2}\s{0,10}[=:!]")


def _has_assignment(text: str, lowered: str) -> bool:
    """Whether a secret-sounding word is followed, within its identifier, by ``=`` or ``:``."""
    for kw in _ASSIGN_KEYWORDS:
        i = lowered.find(kw)
        while i != -1:
            if _ASSIGN_AFTER.match(lowered, i + len(kw)):
                return True
            i = lowered.find(kw, i + 1)
    return False


VALIDATORS.update(ORDER_VALIDATORS)
VALIDATORS.update(EN_ORDER_VALIDATORS)
VALIDATORS.update(
    {
        "assignment": _assignment,
        "prose": _prose,
        "prose_loose": _prose_loose,
        "prose_bare": _prose_bare,
        "card": _card,
        "has_digit": _has_digit,
        "has_digit_and_upper": _has_digit_and_upper,
        "random_group": _random_group,
        "value_quoted": _value_quoted,
        "value_unquoted": _value_unquoted,
        "jwt": _jwt,
        "basic_auth": _basic_auth,
        "digit_and_letters": _digit_and_letters,
        "absent": _absent,
        "long_key": _long_key,
        "standalone_key_id": _standalone_key_id,
        "private_key_body": _private_key_body,
        "env_fallback": _env_fallback,
        "cli_secret": _cli_secret,
        "phone": _phone,
        "jp_phone": _jp_phone,
        "kr_phone": _kr_phone,
        "pii_card": _pii_card,
        "my_number": _my_number,
    }
)
# a text that names an AI, a bot or an automated agent, word for word (the English rules that need one
# to be addressed run only then: "ai" as a hint is a substring of "said" and "again")
_NAMES_AI = re.compile(r"\b(?:" + EN_AI_MENTION + r"|agents?|whatever)\b")
# a text that names an AI in French, Spanish, Portuguese, German, Italian, Dutch, Polish, Russian, Turkish,
# Vietnamese or Indonesian, word for word (their rules for notes to the AI run only then: "ia", "ai", "ki",
# "si" are also pieces of "via", "said", "skin", "basis", so a hint or an "also" literal cannot say it)
_NAMES_AI_MORE = re.compile(
    r"\bi\.a\.|\b(?:ia|ai|ki|si|ии|llm|gpts?|chatgpt|copilot|(?:chat)?bots?\w*|assistent\w*|assistant\w*|asisten\w*|"
    r"asystent\w*|ассистент\w*|asistan\w*|agent\w*|agen|ajan\w*|агент\w*|бот\w*|model\w*|mod[èe]le\w*|"
    r"sprachmodell\w*|taalmodel\w*|модел\w*|нейросет\w*|sztuczn\w*|искусствен\w*|yapay\s+zek\w*|trợ\s+lý|tác\s+nhân|"
    r"mô\s+hình|trí\s+tuệ|hệ\s+thống|kecerdasan|sistem\w*|sistema\w*|system\w*|systeem)\b"
)
"""Every name of an AI the rules that need it accept (FR_AI ... ID_AI, FR_AIS ... ID_AIS in
``injection_more.toml``), as a whole word: a name missing here silently turns those rules off for it
(``tests/test_screening_persona_langs.py`` checks each language's names)."""
FEATURES.update(
    {
        "token20": lambda text, lowered: _TOKEN20.search(text) is not None,
        "digits12": lambda text, lowered: _DIGITS12.search(text) is not None,
        "digits7": lambda text, lowered: _SEVEN_DIGITS.search(text) is not None,
        "ip_shape": lambda text, lowered: _IP_SHAPE.search(text) is not None,
        "assign": _has_assignment,
        "names_ai": lambda text, lowered: _NAMES_AI.search(lowered) is not None,
        "names_ai_more": lambda text, lowered: _NAMES_AI_MORE.search(lowered) is not None,
    }
)
