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

from .registry import FEATURES, VALIDATORS, toml_loads
from .speech import addressed_to_person, in_mention, reported_unquoted

__all__ = ["card_digits_ok", "luhn_ok", "my_number_ok", "value_ok"]


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
    return strength == 2 or _looks_random(value)


_QUOTES = "'\"`“”‘’「」『』«»„"
_IDENTIFIER = re.compile(r"[a-z]+(?:_[a-z]+)+")


def _prose(m: Match[str], g: int | str) -> bool:
    """A password stated in a sentence: quoted, or a token that is not an ordinary word."""
    v = m.group("value").strip(_QUOTES + ".,;:!?。、")
    quoted = "q" in m.re.groupindex and bool(m.group("q"))
    if len(v) < 3 or len(v) > 128 or v.casefold() in _words()["prose_stop"]:
        return False
    if not value_ok(v, quoted=quoted):
        return False
    if not quoted and _IDENTIFIER.fullmatch(v):
        return False  # PASSWORD :new_password, password: db_pass (a name in code, not a value)
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

    Part of a decimal number (``0.6511772622175621``) is never a card; digits written in groups
    (``4111 1111 1111 1111``, ``4111.1111.1111.1111``) are; an ungrouped run of digits counts
    only with a card word (card, visa, カード, 카드, ...) shortly before it.
    """
    text, (start, end) = m.string, m.span()
    if start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit():
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


def _digit_and_letters(m: Match[str], g: int | str) -> bool:
    s = m.group(0)
    return any(c.isdigit() for c in s) and sum(c.isalpha() for c in s) >= 4


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


# --- Japanese and Korean: is it an order? ---------------------------------------------------------

_JA_SENTENCE_END = re.compile(r"[。!?\n]")
_KO_SENTENCE_END = re.compile(r"[.!?\n]")
# what follows a dismissing verb when the sentence reports a change rather than giving an order
_JA_REPORT = re.compile(
    r"(?:し|して|と|に)?(?:た(?!ら|め)|ました|となり|となっ|になり|になっ|ません|ない(?!で|よう)|ず(?!に(?:答|回答|実行|処理|進め|言))"
    r"|させていただ|されて|される|された|られ|ており|ています|ていた(?!だ)|てしまっ|致しました|いたしました|とのこと|ボタン"
    r"|する(?!こと|な|ように|べき|[。!]|$))"
)
_JA_ORDER = re.compile(
    r"てください|て下さい|ください|下さい|てくれ|ちょうだい|なさい|しろ|せよ|すること|しないこと|ること|ように|ましょう"
    r"|しよう|ていい|てもいい|でいい|でok|て(?:も)?構わない|ていただ|てね|てよ|いいから|いいよ|願い|お示し|ろ(?:[。!?]|$)"
    r"|てもらえ(?:ます|る)?か|ていただけ(?:ます|る)?か|てくれ(?:ます|る)?か|てもらえる\?|こと(?:[。!?]|$)|て(?:[。!?]|$)|ね(?:[。!?]|$)|よ(?:[。!?]|$)|だ(?:[。!?]|$)|キャンセル(?:[。!]|$)|\A\s*(?:[。!]|$)",
    re.MULTILINE,
)
_KO_REPORT = re.compile(
    r"\s*(?:되었|됐|되어|된\s|된다|됩니다|되며|되고|되는|될|당했|했다|했습니다|했고|했던|했어요|하였|하지\s*않|하지않|한\s|한다"
    r"|합니다|하겠|할게|하는\s|는\s|던\s|된\s|(?:하)?지\s*(?:말|마|않)|\s*버튼)"
)
_KO_ORDER = re.compile(
    r"세요|십시오|주세요|주십시오|해라|하라|할\s*것|말\s*것|하시오|합시다|하자|바랍니다|해도\s*(?:돼|된다|괜찮)|어도\s*(?:돼|된다|괜찮)"
    r"|아도\s*(?:돼|괜찮)|면\s*돼|마세요|마시고|마십시오|말고|지\s*마|주실\s*수\s*있|줄\s*수\s*있|주시겠|주겠|줄래|것\s*(?:[.!?]|$)|(?:해|줘|봐|둬|놔|라|마|어|아|자|해요|줘요|거라)\s*(?:[.!?]|$)"
    r"|\A\s*(?:[.!?]|$)",
    re.MULTILINE,
)
_QUOTE_OPEN = "「『\"'“‘"
_QUOTE_CLOSE = "」』\"'”’"
_JA_REPORTED = re.compile(r"\s*(?:と|という|との|って|などと)")
_KO_REPORTED = re.compile(r"\s*(?:라고|라는|라며|란|이라고|이라는|고\s*하|하고\s*외)")


def _reported(text: str, start: int, end: int, after: re.Pattern[str]) -> bool:
    """Whether ``[start, end)`` sits inside quotes followed by a reporting particle (と, 라고)."""
    opened = max(text.rfind(q, max(0, start - 80), start) for q in _QUOTE_OPEN)
    if opened < 0:
        return False
    closes = [i for i in (text.find(q, end, end + 120) for q in _QUOTE_CLOSE) if i >= 0]
    if not closes:
        return False
    close = min(closes)
    return after.match(text, close + 1) is not None


# after a Korean verb stem: negated (알려 주지 않도록), a modifier, or the writer's own humble act
# (알려 드리겠습니다, 보내 드릴게요), or a causative described (보내게 만든다)
_KO_NOT_ORDER = re.compile(
    r"\s*(?:(?:주|드리)?\s*지\s*(?:않|마|말)|않|하는\s|는\s|던\s|한\s|드리겠|드릴|드립|드렸|게\s*만[들든])"
)


# "cancel what I said" (さっき頼んだことは取り消しで, 아까 말한 거 취소): a change of plan between
# people; with a noun of instructions (指示, 규칙, プロンプト) it counts
_STRONG_NOUN = re.compile(
    r"指示|命令|指令|ルール|規則|設定|プロンプト|制約|制限|ガイドライン|方針|ポリシー|前提"
    r"|지시|명령|규칙|프롬프트|설정|제약|지침|가이드라인|방침|정책|전제"
)
_CANCEL = re.compile(r"(?:取り消|取消|キャンセル|撤回|취소|철회)$")


def _generic_cancel(m: Match[str]) -> bool:
    return _CANCEL.search(m.group(0)) is not None and _STRONG_NOUN.search(m.group(0)) is None


def _not_for_model(m: Match[str], lang: str) -> bool:
    """Words mentioned or reported (quoted, after 例：, ..., と言われた), or an order to a person."""
    text, start = m.string, m.start()
    return (
        in_mention(text, start, m.end())
        or reported_unquoted(text, start, lang)
        or addressed_to_person(text, start)
    )


def _two_sentences(text: str, end: int, ends: re.Pattern[str]) -> str:
    first = ends.search(text, end)
    if first is None:
        return text[end:]
    second = ends.search(text, first.end())
    return text[end : second.end() if second else len(text)]


def _ja_directive(m: Match[str], g: int | str) -> bool:
    """A Japanese dismissal that is an order.

    Not a report (取り消しとなりました), not reported speech (「無視しろ」と叫ぶ), and an imperative
    or request in this sentence or the next.
    """
    text, end = m.string, m.end()
    if (
        _JA_REPORT.match(text, end)
        or _reported(text, m.start(), end, _JA_REPORTED)
        or _not_for_model(m, "ja")
    ):
        return False
    if _generic_cancel(m):
        return False
    return _JA_ORDER.search(_two_sentences(text, end, _JA_SENTENCE_END)) is not None


def _ja_directive_loose(m: Match[str], g: int | str) -> bool:
    """A Japanese cue that is not reported speech and not negated right after it."""
    return not _not_for_model(m, "ja") and _ja_request(m, g)


def _ja_request(m: Match[str], g: int | str) -> bool:
    """A Japanese request not reported as past speech and not negated, wherever it is quoted.

    For requests to leak the prompt or credentials: a model that reads the context sees the
    request itself, whoever a quote says is speaking it (a quote is an easy wrapper for an attack).
    """
    text, end = m.string, m.end()
    if _reported(text, m.start(), end, _JA_REPORTED):
        return False
    return re.match(r"(?:し|して)?(?:ない|ません|ず(?!に))", text[end : end + 6]) is None


def _ko_directive(m: Match[str], g: int | str) -> bool:
    """A Korean dismissal that is an order.

    Not a report (취소되었습니다), not reported speech ('무시해'라고), and an imperative or
    request in this sentence or the next.
    """
    text, end = m.string, m.end()
    if (
        _KO_REPORT.match(text, end)
        or _reported(text, m.start(), end, _KO_REPORTED)
        or _not_for_model(m, "ko")
    ):
        return False
    if _generic_cancel(m):
        return False
    return _KO_ORDER.search(_two_sentences(text, end, _KO_SENTENCE_END)) is not None


def _ja_order_here(m: Match[str], g: int | str) -> bool:
    """A Japanese cue with an imperative or request in the rest of its own sentence."""
    if not _ja_directive_loose(m, g):
        return False
    text, end = m.string, m.end()
    stop = _JA_SENTENCE_END.search(text, end)
    return _JA_ORDER.search(text[end : stop.end() if stop else len(text)]) is not None


def _ko_order_here(m: Match[str], g: int | str) -> bool:
    """A Korean cue with an imperative or request in the rest of its own sentence."""
    if not _ko_directive_loose(m, g):
        return False
    text, end = m.string, m.end()
    stop = _KO_SENTENCE_END.search(text, end)
    return _KO_ORDER.search(text[end : stop.end() if stop else len(text)]) is not None


def _ko_directive_loose(m: Match[str], g: int | str) -> bool:
    """A Korean cue that is not reported speech and not negated right after it."""
    return not _not_for_model(m, "ko") and _ko_request(m, g)


def _ko_request(m: Match[str], g: int | str) -> bool:
    """A Korean request not reported as past speech and not negated, wherever it is quoted (as :func:`_ja_request`)."""
    text, end = m.string, m.end()
    if _reported(text, m.start(), end, _KO_REPORTED):
        return False
    return _KO_NOT_ORDER.match(text, end) is None


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
        "private_key_body": _private_key_body,
        "env_fallback": _env_fallback,
        "cli_secret": _cli_secret,
        "ja_directive": _ja_directive,
        "ja_directive_loose": _ja_directive_loose,
        "ja_request": _ja_request,
        "ko_directive": _ko_directive,
        "ko_directive_loose": _ko_directive_loose,
        "ko_request": _ko_request,
        "ja_order_here": _ja_order_here,
        "ko_order_here": _ko_order_here,
        "phone": _phone,
        "jp_phone": _jp_phone,
        "kr_phone": _kr_phone,
        "pii_card": _pii_card,
        "my_number": _my_number,
    }
)
FEATURES.update(
    {
        "token20": lambda text, lowered: _TOKEN20.search(text) is not None,
        "digits12": lambda text, lowered: _DIGITS12.search(text) is not None,
        "digits7": lambda text, lowered: _SEVEN_DIGITS.search(text) is not None,
        "ip_shape": lambda text, lowered: _IP_SHAPE.search(text) is not None,
        "assign": _has_assignment,
    }
)
