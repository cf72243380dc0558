"""Credential screen (W4): API keys, tokens, private keys, passwords, card numbers.

Two sources of rules, all run on the whole text (not line by line):

* the regex plugins of `detect-secrets <https://github.com/Yelp/detect-secrets>`_ (AWS, GitHub,
  GitLab, Slack, Stripe, JWT, private keys, basic auth, ...): their compiled ``denylist``
  patterns are matched directly so that every hit has a span. Its entropy plugins are not used
  (they flag ordinary prose), nor its keyword plugin (replaced by ``secret_assignment`` below,
  which understands placeholders), nor its public-IP plugin (an IP address is not a credential;
  the PII screen reports it).
* the rules below, for what detect-secrets misses: provider key formats (``sk-proj-``,
  ``sk-ant-``, ``github_pat_``, ``hf_``, ``AIza``, ...), secret-named assignments in code and
  config (``password = "..."``, ``"api_key": "..."``), passwords stated in prose (English,
  German, French, Spanish, Japanese, Korean, Chinese), connection strings and command lines
  with credentials, and card numbers that pass the Luhn check.

Values that are obviously not secrets (``$VAR``, ``${VAR}``, ``<your-key>``, ``XXXX``,
``os.environ[...]``, a function call) are skipped. Cloud resource identifiers (account ids,
ARNs, bucket URLs, OAuth client ids, usernames) are not credentials and are off by default;
``include_identifiers=True`` reports them with severity LOW.

Each rule carries *hints*: lower-case literals of which at least one must occur in the text
for the rule to run at all. That keeps the screen fast on ordinary text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from re import Match, Pattern

from .findings import (
    DEFAULT_MAX_CHARS,
    Finding,
    Severity,
    check_max_chars,
    check_text,
    resolve_overlaps,
)

__all__ = ["NOSEYPARKER_IDENTIFIER_RULES", "SecretRule", "SecretScreen", "luhn_ok"]


NOSEYPARKER_IDENTIFIER_RULES = frozenset(
    {
        "np.s3.1",
        "np.s3.2",
        "np.arn.1",
        "np.aws.3",
        "np.gcs.1",
        "np.gcs.2",
        "np.google.1",
        "np.shopify.1",
        "np.age.1",
        "np.reactapp.1",
        "np.linkedin.1",
        "np.twitter.1",
    }
)
"""Nosey Parker rule ids whose examples are identifiers, not credentials (bucket names, ARNs, account
ids, OAuth client ids, public keys, usernames): what ``include_identifiers=True`` is for. Used by the
screening benchmark and its test to report credential recall separately."""

Validator = Callable[[Match[str]], bool]

_HIGH, _MEDIUM, _LOW = Severity.HIGH, Severity.MEDIUM, Severity.LOW


@dataclass(frozen=True)
class SecretRule:
    """One credential pattern.

    Attributes:
        rule: stable rule id reported in findings.
        pattern: compiled regular expression.
        severity: severity of a match.
        score: confidence of a match in ``[0, 1]``.
        group: the group whose span is reported (0: the whole match); the whole match is
            reported when that group did not take part.
        validator: optional extra check on a match (placeholder filter, Luhn, ...).
        hints: lower-case literals; the rule only runs when one of them occurs in the
            lower-cased text (empty: always runs).
        needs: a cheap property the text must have for the rule to run: ``"token20"`` (a run
            of 20 token characters), ``"digits12"`` (twelve digits in groups) or ``"assign"``
            (a secret-sounding name followed by ``=`` or ``:``); empty: none.
    """

    rule: str
    pattern: Pattern[str]
    severity: Severity = Severity.HIGH
    score: float = 0.9
    group: int | str = 0
    validator: Validator | None = None
    hints: tuple[str, ...] = ()
    needs: str = ""


def _r(
    rule: str,
    regex: str,
    *,
    hints: str = "",
    severity: Severity = _HIGH,
    score: float = 0.9,
    group: int | str = 0,
    validator: Validator | None = None,
    flags: int = 0,
    needs: str = "",
) -> SecretRule:
    hint_tuple = tuple(hints.split(",")) if hints else ()  # comma-separated literals
    return SecretRule(rule, re.compile(regex, flags), severity, score, group, validator, hint_tuple, needs)


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
    r"|(?:none|null|nil|undefined|true|false|empty|required|optional|string|str|bytes|int|text"
    r"|value|redacted|hidden|masked|todo|tbd|n/?a|placeholder|changeme_?here)$"
    r")",
    re.IGNORECASE,
)
_CODE_VALUE = re.compile(r"^[A-Za-z_][\w.]*(?:\(|\[|\.[A-Za-z_]\w*$)")  # call, index, attribute
_ESCAPES = str.maketrans("", "", "\\")
# string concatenation ("..." + x + "..."), paths and URLs, or a form label ending in ":".
_NOT_A_VALUE = re.compile(r"^\s*\+|\+\s*$|^(?:/|\./|\.\./|[a-z][a-z0-9+.\-]*://)|^[A-Za-z ]{3,20}:$")


def _value_ok(value: str, *, quoted: bool) -> bool:
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
_KEY_QUALIFIERS = frozenset(
    [
        "api",
        "access",
        "secret",
        "private",
        "priv",
        "auth",
        "client",
        "license",
        "licence",
        "master",
        "account",
        "signing",
        "encryption",
        "session",
        "app",
        "service",
        "db",
        "database",
        "consumer",
        "shared",
        "storage",
        "subscription",
        "webhook",
        "deploy",
    ]
)
_DESCRIBING_SUFFIXES = frozenset(
    [
        "label",
        "text",
        "title",
        "message",
        "msg",
        "hint",
        "placeholder",
        "prompt",
        "field",
        "url",
        "uri",
        "path",
        "route",
        "selector",
        "name",
        "names",
        "id",
        "ids",
        "length",
        "len",
        "policy",
        "file",
        "filename",
        "env",
        "var",
        "type",
        "types",
        "header",
        "param",
        "format",
        "regex",
        "pattern",
        "count",
        "limit",
        "size",
        "expiry",
        "expires",
        "ttl",
    ]
)
_NOT_SECRET_NAMES = frozenset(
    [
        "tokenizer",
        "tokenizers",
        "tokenize",
        "tokenized",
        "tokenization",
        "tokens",
        "passage",
        "passages",
        "passenger",
        "passengers",
        "passive",
        "passed",
        "passes",
        "passing",
        "compass",
        "bypass",
    ]
)


def _name_strength(name: str) -> int:
    """2: the name says it holds a secret; 1: it holds a key or login; 0: neither."""
    parts = [p.casefold() for p in _NAME_PARTS.split(name) if p]
    if not parts or parts[-1] in _DESCRIBING_SUFFIXES:
        return 0  # passwordLabel, token_url, api_key_name: about a secret, not the secret
    if any(p in _NOT_SECRET_NAMES for p in parts):
        parts = [p for p in parts if p not in _NOT_SECRET_NAMES]
    if any(_STRONG_WORD.fullmatch(p) for p in parts):
        return 2
    if any(p in ("key", "keys") or p.endswith("key") for p in parts):
        if any(p in _KEY_QUALIFIERS for p in parts) or any(
            p.endswith("key") and p[:-3] in _KEY_QUALIFIERS for p in parts
        ):
            return 2
        return 1
    if any(p in ("login", "auth", "crumb", "signature", "sig") for p in parts):
        return 1
    return 0


def _assignment_ok(m: Match[str]) -> bool:
    name = m.group("name")
    strength = _name_strength(name)
    if strength == 0:
        return False
    value = m.group("value")
    squashed_name = _NON_ALNUM.sub("", name).casefold()
    if len(squashed_name) > 8 and squashed_name in _NON_ALNUM.sub("", value).casefold():
        return False  # IAMUserChangePassword = "arn:...:policy/IAMUserChangePassword"
    quoted = "q" in m.re.groupindex and bool(m.group("q"))
    if not _value_ok(value, quoted=quoted):
        return False
    return strength == 2 or _looks_random(value)


_PROSE_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "not",
        "too",
        "very",
        "so",
        "also",
        "still",
        "now",
        "then",
        "required",
        "needed",
        "needs",
        "mandatory",
        "optional",
        "correct",
        "incorrect",
        "wrong",
        "invalid",
        "valid",
        "strong",
        "weak",
        "secure",
        "insecure",
        "safe",
        "unsafe",
        "long",
        "short",
        "expired",
        "reset",
        "changed",
        "stored",
        "hashed",
        "encrypted",
        "salted",
        "sent",
        "shown",
        "hidden",
        "visible",
        "empty",
        "blank",
        "missing",
        "unknown",
        "same",
        "different",
        "case",
        "sensitive",
        "case-sensitive",
        "set",
        "unset",
        "managed",
        "rotated",
        "protected",
        "forgotten",
        "lost",
        "known",
        "listed",
        "written",
        "saved",
        "kept",
        "policy",
        "policies",
        "field",
        "fields",
        "manager",
        "managers",
        "rules",
        "rule",
        "requirements",
        "length",
        "strength",
        "complexity",
        "generated",
        "created",
        "updated",
        "provided",
        "given",
        "entered",
        "typed",
        "displayed",
        "masked",
        "only",
        "never",
        "always",
        "usually",
        "often",
        "something",
        "anything",
        "nothing",
    ]
)
_QUOTES = "'\"`“”‘’「」『』«»„"


def _prose_ok(m: Match[str]) -> bool:
    """A password stated in a sentence: quoted, or a token that is not an ordinary word."""
    v = m.group("value").strip(_QUOTES + ".,;:!?。、")
    quoted = bool(m.group("q"))
    if len(v) < 3 or len(v) > 128 or v.casefold() in _PROSE_STOP:
        return False
    if not _value_ok(v, quoted=quoted):
        return False
    return quoted or not (v.isalpha() and v.islower() and len(v) < 6)


def _prose_loose_ok(m: Match[str]) -> bool:
    """Looser context ("the following password ...:"), so the value must look like a secret."""
    v = m.group("value").strip(_QUOTES + ".,;:!?")
    if not _prose_ok(m):
        return False
    has_digit = any(c.isdigit() for c in v)
    has_alpha = any(c.isalpha() for c in v)
    has_other = any(not c.isalnum() for c in v)
    return len(v) >= 6 and ((has_digit and has_alpha) or (has_other and has_alpha) or v != v.lower())


_CARD_IIN = re.compile(
    r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35)"
)
_NON_DIGIT = re.compile(r"\D")


def _card_ok(m: Match[str]) -> bool:
    digits = _NON_DIGIT.sub("", m.group(0))
    if not 13 <= len(digits) <= 19 or len(set(digits)) < 2 or not digits.isascii():
        return False
    return bool(_CARD_IIN.match(digits)) and luhn_ok(digits)


def _has_digit(m: Match[str]) -> bool:
    return any(c.isdigit() for c in m.group(0))


def _has_digit_and_upper(m: Match[str]) -> bool:
    s = m.group(0).partition("-")[2]
    return any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)


def _group_random(name: str) -> Validator:
    def check(m: Match[str]) -> bool:
        v = m.group(name)
        return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)

    return check


def _group_value_ok(name: str, *, quoted: bool) -> Validator:
    def check(m: Match[str]) -> bool:
        return _value_ok(m.group(name), quoted=quoted)

    return check


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------

_I = re.IGNORECASE
_W = r"(?<![A-Za-z0-9_])"  # left boundary where "_" counts as a word character
_WE = r"(?![A-Za-z0-9_])"

_RULES: tuple[SecretRule, ...] = (
    # --- provider key formats -----------------------------------------------------------------
    _r("anthropic_api_key", r"\bsk-ant-[A-Za-z0-9_\-]{32,}", hints="sk-ant-", score=0.99),
    _r(
        "openai_api_key",
        r"\bsk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}",
        hints="sk-",
        score=0.95,
        validator=_has_digit,
    ),
    _r("stripe_api_key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", hints="_live_,_test_", score=0.95),
    _r(
        "github_token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}",
        hints="ghp_,gho_,ghu_,ghs_,ghr_",
        score=0.99,
    ),
    _r("github_fine_grained_pat", r"\bgithub_pat_[A-Za-z0-9_]{40,}", hints="github_pat_", score=0.99),
    _r(
        "gitlab_token",
        r"\b(?:glpat|gldt|glft|glsoat|glrt|glptt|glcbt|glimt|gloas)-[A-Za-z0-9_\-]{20,}",
        hints="gl",
        score=0.97,
    ),
    _r("slack_token", r"\bxox[abprseo]-[A-Za-z0-9\-]{10,}", hints="xox", score=0.97),
    _r("slack_app_token", r"\bxapp-[0-9A-Za-z\-/+]{16,}", hints="xapp-", score=0.95),
    _r(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
        hints="hooks.slack",
        score=0.97,
    ),
    _r(
        "msteams_webhook",
        r"https://[\w.\-]{0,100}(?:office(?:365)?\.com)/webhook[b2]?/[\w\-@/]{40,}",
        hints="webhook",
    ),
    _r(
        "aws_access_key_id",
        _W + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}" + _WE,
        hints="a3t,akia,asia,abia,acca,agpa,aida,aroa,aipa,anpa,anva,apka",
        score=0.95,
    ),
    _r(
        "aws_secret_access_key",
        r"(?i:[\w\-]{0,20}secret[\w\-]{0,20}?key\w*)[\"']?\s*(?:[:=]|=>|:=)\s*[\"']?(?P<value>[A-Za-z0-9/+]{40})"
        r"(?![A-Za-z0-9/+])",
        hints="secret",
        group="value",
        score=0.95,
        validator=_group_random("value"),
    ),
    _r(
        "aws_session_token",
        r"(?i:aws_?session_?token)[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9/+=._\-]{40,})",
        hints="session",
        group="value",
    ),
    _r("amazon_mws_token", r"\bamzn\.mws\.[a-f0-9\-]{36}\b", hints="amzn.mws", score=0.95),
    _r("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}", hints="aiza", score=0.97),
    _r("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}", hints="ya29.", score=0.95),
    _r("google_oauth_client_secret", r"\bGOCSPX-[0-9A-Za-z_\-]{20,}", hints="gocspx-", score=0.97),
    _r("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}", hints="hf_", score=0.95),
    _r("groq_api_key", r"\bgsk_[A-Za-z0-9]{40,}", hints="gsk_", score=0.95),
    _r("tavily_api_key", r"\btvly-[A-Za-z0-9]{20,}", hints="tvly-", score=0.95),
    _r("jina_api_key", r"\bjina_[a-f0-9]{32}[A-Za-z0-9_\-]{20,}", hints="jina_", score=0.95),
    _r("firecrawl_api_key", r"\bfc-[a-f0-9]{32}\b", hints="fc-"),
    _r("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b", hints="npm_", score=0.95),
    _r("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}", hints="pypi-", score=0.99),
    _r("nuget_api_key", r"\boy2[a-z0-9]{43}\b", hints="oy2"),
    _r("rubygems_api_key", r"\brubygems_[a-f0-9]{48}\b", hints="rubygems_", score=0.95),
    _r("crates_io_token", r"\bcio[A-Za-z0-9]{32}\b", hints="cio", score=0.85, validator=_has_digit),
    _r("dockerhub_token", r"\bdckr_pat_[A-Za-z0-9_\-]{20,}", hints="dckr_", score=0.97),
    _r("digitalocean_token", r"\bdo[opr]_v1_[a-f0-9]{64}\b", hints="_v1_", score=0.97),
    _r("shopify_token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", hints="shp", score=0.97),
    _r("databricks_token", r"\bdapi[a-f0-9]{32}(?:-\d)?\b", hints="dapi", score=0.95),
    _r(
        "doppler_token",
        r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,30}\.)?[A-Za-z0-9]{40,}",
        hints="dp.",
        score=0.95,
    ),
    _r("dropbox_token", r"\bsl\.[A-Za-z0-9_\-]{100,}", hints="sl."),
    _r("dynatrace_token", r"\bdt0[a-z]\d{2}\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b", hints="dt0", score=0.97),
    _r("atlassian_api_token", r"\bATATT3[A-Za-z0-9_\-=]{60,}", hints="atatt3", score=0.97),
    _r("azure_devops_pat", r"(?<![A-Za-z0-9])[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}(?![A-Za-z0-9])", hints="azdo"),
    _r(
        "azure_connection_key",
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature|(?<=;)Secret)\s*=\s*(?P<value>[A-Za-z0-9+/]{30,}={0,2})",
        hints="key,secret,signature",
        group="value",
        score=0.95,
    ),
    _r(
        "newrelic_key",
        r"\b(?:NRAK-[A-Z0-9]{27}|NR(?:II|IQ|RA|AA|JS)-[A-Za-z0-9_\-]{19,}|[a-z0-9]{36}NRAL|"
        r"px-(?:api|dep)-[a-f0-9]{8}-[a-f0-9\-]{27})\b",
        hints="nr,px-",
        score=0.95,
    ),
    _r("postman_api_key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", hints="pmak-", score=0.97),
    _r("sourcegraph_token", r"\bsgp_(?:[a-f0-9]{16}_|local_)?[a-f0-9]{40}\b", hints="sgp_", score=0.95),
    _r("segment_token", r"\bsgp_[A-Za-z0-9]{64}\b", hints="sgp_", score=0.95),
    _r("square_token", r"\b(?:sandbox-)?sq0(?:atp|csp|atb)-[A-Za-z0-9_\-]{22,}", hints="sq0", score=0.95),
    _r("sendgrid_api_key", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", hints="sg.", score=0.95),
    _r("mailgun_api_key", r"\bkey-[a-f0-9]{32}\b", hints="key-"),
    _r("mailchimp_api_key", r"\b[a-f0-9]{32}-us\d{1,2}\b", hints="-us"),
    _r("twilio_api_key", r"\bSK[a-f0-9]{32}\b", hints="sk"),
    _r("telegram_bot_token", r"\b\d{8,10}:AA[A-Za-z0-9_\-]{30,}", hints=":aa", score=0.95),
    _r("age_secret_key", r"\bAGE-SECRET-KEY-1[A-Z0-9]{58}\b", hints="age-secret-key", score=0.99),
    _r("hashicorp_vault_token", r"\bhv[sbr]\.[A-Za-z0-9_\-]{24,}", hints="hvs.,hvb.,hvr.", score=0.95),
    _r(
        "hashicorp_vault_token",
        r"(?<![\w.])[sbr]\.[A-Za-z0-9_\-]{24,}(?![\w.(])",
        hints="s.,b.,r.",
        severity=_MEDIUM,
        score=0.7,
        validator=_has_digit,
        needs="token20",
    ),
    _r(
        "vault_unseal_key",
        r"(?i:unseal)[\w ]{0,12}[:\s]\s*(?P<value>[A-Za-z0-9+/]{40,}={0,2})",
        hints="unseal",
        group="value",
    ),
    _r("mapbox_token", r"\b[st]k\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{10,}", hints="k.eyj", score=0.95),
    _r(
        "grafana_token",
        r"\b(?:glc_|glsa_)[A-Za-z0-9_\-+/=]{20,}|\beyJrIjoi[A-Za-z0-9_\-+/=]{40,}",
        hints="glc_,glsa_,eyjrijoi",
        score=0.95,
    ),
    _r("adafruit_io_key", r"\baio_[A-Za-z0-9]{28}\b", hints="aio_"),
    _r("dependency_track_key", r"\bodt_[A-Za-z0-9]{32,}\b", hints="odt_"),
    _r("stackhawk_api_key", r"\bhawk\.[A-Za-z0-9_\-]{20}\.[A-Za-z0-9_\-]{20}\b", hints="hawk.", score=0.95),
    _r("twitch_stream_key", r"\blive_\d{6,10}_[A-Za-z0-9]{30}\b", hints="live_"),
    _r("salesforce_token", r"\b00[A-Za-z0-9]{13}![A-Za-z0-9_.]{20,}", hints="!"),
    _r(
        "okta_token",
        r"(?i:okta|SSWS)[^\n]{0,24}\n?[^\n]{0,24}?(?P<value>00[A-Za-z0-9_\-]{40})(?![A-Za-z0-9_\-])",
        hints="okta,ssws",
        group="value",
    ),
    _r("artifactory_token", r"\bAKC[a-zA-Z0-9]{60,}", hints="akc"),
    _r("bitbucket_app_password", r"\bATBB[A-Za-z0-9_=.\-]{28,}", hints="atbb", score=0.95),
    _r("facebook_access_token", r"\bEAA[A-Za-z0-9]{30,}", hints="eaa", score=0.85, validator=_has_digit),
    _r(
        "kubernetes_bootstrap_token",
        r"(?i:bootstrap|token)[\w\-\"':= ]{0,24}?\b(?P<value>[a-z0-9]{6}\.[a-z0-9]{16})\b",
        hints="bootstrap,token",
        group="value",
    ),
    _r(
        "kagi_api_key",
        r"(?i:kagi)[\w\-\"':=/.?&]{0,40}?(?P<value>[A-Za-z0-9_\-]{11}\.[A-Za-z0-9_\-]{43})",
        hints="kagi",
        group="value",
    ),
    _r(
        "codeclimate_reporter_id",
        r"(?i:codeclimate\w*|cc_test_reporter_id)\s*[:=]\s*(?P<value>[a-f0-9]{64})\b",
        hints="codeclimate,cc_test_reporter_id",
        group="value",
    ),
    _r(
        "truenas_api_key",
        r"(?<![\w\-])\d{1,4}-[A-Za-z0-9]{64}(?![\w\-])",
        hints="-",
        validator=_has_digit_and_upper,
        needs="token20",
    ),
    _r(
        "thingsboard_token",
        r"thingsboard\.cloud/api/v1/(?P<value>[a-z0-9]{20})\b",
        hints="thingsboard",
        group="value",
    ),
    _r(
        "private_key",
        r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----",
        hints="private key",
        score=0.99,
    ),
    _r("private_key", r"\bPuTTY-User-Key-File-\d", hints="putty", score=0.99),
    _r(
        "private_key", r"\bLS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}", hints="ls0tls1crudjti", score=0.95
    ),  # base64 PEM
    _r(
        "wireguard_key",
        r"(?i:PrivateKey|PresharedKey)\s*=\s*(?P<value>[A-Za-z0-9+/]{42,43}=)",
        hints="key",
        group="value",
        score=0.95,
    ),
    _r("jwt", r"\beyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-+/=]{10,}", hints="eyj"),
    _r(
        "password_hash",
        r"\$(?:2[abxy]|1|5|6|8|9|krb5asrep)\$[^\s\"']{20,}",
        hints="$",
        severity=_MEDIUM,
        score=0.85,
    ),
    # --- authorization headers and URLs -------------------------------------------------------
    _r(
        "bearer_token",
        r"\b(?:Bearer|Token|SSWS):?\s+(?P<value>[A-Za-z0-9._~+/=\-]{8,})",
        hints="bearer,token,ssws",
        group="value",
        score=0.85,
        validator=_group_random("value"),
    ),
    _r(
        "basic_auth_header",
        r"(?i:authorization)\s*[:=]\s*[\"']?Basic\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})",
        hints="basic",
        group="value",
        score=0.95,
    ),
    _r(
        "http_auth_header",
        r"(?i:x-api-key|x-auth-token|x-access-token|api-key|x-[\w\-]{0,40}-token|private-token|jenkins-crumb|"
        r"authorization)[\"']?\s*[:,=]\s*[\"']?\s*(?P<value>[A-Za-z0-9._~+/=\-]{16,})",
        hints="api-key,token,crumb,authorization",
        group="value",
        score=0.85,
        validator=_group_random("value"),
    ),
    _r(
        "url_token_param",
        r"[?&](?:access_token|api_key|apikey|token|auth|key|secret|client_secret|password|sig)="
        r"(?P<value>[A-Za-z0-9._~+/%\-]{12,})",
        hints="=",
        group="value",
        score=0.85,
        validator=_group_random("value"),
    ),
    # --- connection strings and command lines -------------------------------------------------
    _r(
        "connection_string_credentials",
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{1,20}://(?P<user>[^\s:/@'\"<>{}]{1,64}):(?P<value>[^\s/'\"<>{}]{3,128})"
        r"@(?=[\w\[.\-])",
        hints="://",
        score=0.9,
        validator=_group_value_ok("value", quoted=True),
    ),
    _r(
        "connection_string_credentials",
        r"(?i:(?:^|[;\s\"'])(?:password|pwd)\s*=\s*)(?P<value>[^;\"'\s<>{}$][^;\"'<>\n]{2,})(?=\s*(?:;|\"|'|$))",
        hints="password,pwd",
        group="value",
        score=0.85,
        validator=_group_value_ok("value", quoted=False),
        flags=re.MULTILINE,
    ),
    _r(
        "netrc_credentials",
        r"(?i:\bmachine\s+\S{1,256}\s+login\s+\S{1,256}\s+password\s+)(?P<value>\S{3,256})",
        hints="machine",
        group="value",
        score=0.95,
    ),
    _r(
        "cli_password",
        r"(?i:\b(?:psexec(?:\.exe)?|docker\s+login|mysql(?:admin|dump)?|sshpass|connect-viserver|net\s+use|psql|"
        r"mongo(?:sh)?|redis-cli|smbclient|xfreerdp|sqlcmd)\b[^\n]{0,200}?\s(?:-p|--password|-password|/p:|-a)"
        r"[\s=:]*)(?P<value>[^\s$%\-][^\s]{2,})",
        hints=("psexec,docker,mysql,sshpass,viserver,net use,psql,mongo,redis-cli,smbclient,xfreerdp,sqlcmd"),
        group="value",
        score=0.85,
        validator=_group_value_ok("value", quoted=False),
    ),
    _r(
        "cli_basic_auth",
        r"(?:\s-u|--user)\s+[\"']?(?P<user>[^\s:\"']{1,64}):(?P<value>[^\s@\"']{4,})",
        hints="-u,--user",
        group="value",
        score=0.85,
        validator=_group_value_ok("value", quoted=True),
    ),
    _r(
        "credential_constructor",
        r"(?:NetworkCredential|DirectoryEntry|PasswordAuthentication|UsernamePasswordCredentials?|BasicAuth|"
        r"HTTPBasicAuth)\s*\((?:\s*[\"'][^\"'\n]*[\"']\s*,\s*){1,2}\s*(?P<q>[\"'])(?P<value>[^\"'\n]{3,})(?P=q)",
        hints="credential,directoryentry,auth",
        group="value",
        score=0.85,
        validator=_group_value_ok("value", quoted=True),
    ),
    # --- secret-named assignments in code and config ------------------------------------------
    _r(
        "secret_assignment",
        r"(?<![\w.])(?P<name>[A-Za-z_$@][\w.\-$>]{0,80}?)(?:[\"'\]]{0,2})\s*(?:=>|:=|===?|!==?|=|:)\s*"
        r"(?P<q>\\?[\"'`])(?P<value>(?:(?!(?P=q))[^\n]){4,256})(?P=q)",
        hints=("pass,pw,secret,token,key,credential,auth,login,pat,psk,pin,contrase,kennwort,crumb,sig"),
        group="value",
        score=0.8,
        validator=_assignment_ok,
        needs="assign",
    ),
    _r(
        "secret_assignment",
        r"(?<![\w.])(?P<name>[A-Za-z_$@][\w.\-$>]{0,80}?)\]?\s*(?:=>|:=|=|:)[ \t]*"
        r"(?P<value>[^\s\"'`,;)}\]\[(<{$%][^\s\"'`,;)}\]]{3,255})(?=[\s,;)}\]]|$)",
        hints=("pass,pw,secret,token,key,credential,auth,login,pat,psk,pin,contrase,kennwort,crumb,sig"),
        group="value",
        score=0.75,
        validator=_assignment_ok,
        flags=re.MULTILINE,
        needs="assign",
    ),
    _r(
        "secret_assignment",
        r"(?P<q>[\"'`])(?P<value>(?:(?!(?P=q))[^\n]){4,128})(?P=q)\s*(?:===?|!==?)\s*(?P<name>[A-Za-z_$][\w.]{0,60})",
        hints="pass,pw,secret,token,key,credential",
        group="value",
        score=0.8,
        validator=_assignment_ok,
    ),
    _r(
        "secret_assignment",
        r"(?i:key\s*=\s*\"(?P<name>[^\"]*)\"\s*value\s*=\s*)(?P<q>\")(?P<value>[^\"]{3,})\"",
        hints="key,value",
        group="value",
        score=0.8,
        validator=_assignment_ok,
    ),
    _r(
        "secret_assignment",
        r"(?im:^[^\S\n]{0,40}(?P<name>password|passwd|secret|token)[^\S\n]+)(?P<q>[\"'])(?P<value>[^\"'\n]{3,})(?P=q)",
        hints="pass,secret,token",
        group="value",
        score=0.8,
        validator=_assignment_ok,
    ),
    # --- passwords stated in prose --------------------------------------------------------------
    _r(
        "password_in_prose",
        r"(?i:\b(?:password|passcode|passphrase|pass\s?word|pin(?:\s+code)?)\b(?:\s+(?:for|of|to)\s+[^\n.;:]{1,40}?)?"
        r"\s+(?:is|was|will\s+be|has\s+been\s+(?:set|changed)\s+to|is\s+set\s+to|=|:)\s*)"
        r"(?P<q>[\"'“「`]?)(?P<value>[^\s\"'”」`,;:]{3,64})",
        hints="pass,pin",
        group="value",
        score=0.85,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?i:\b(?:password|passcode|passphrase)\b[^\n.;]{0,60}?:\s*)(?P<q>[\"'“「`]?)(?P<value>[^\s\"'”」`]{6,64})",
        hints="pass",
        group="value",
        score=0.75,
        validator=_prose_loose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?i:\b(?:pw|pwd|passwd)\s*[:=]\s*)(?P<q>[\"'`]?)(?P<value>[^\s\"'`]{3,64})",
        hints="pw",
        group="value",
        score=0.8,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?i:\b(?:passwort|kennwort)\b[^\n.]{0,30}?\s(?:ist|lautet|war|:)\s*)(?P<q>[\"'„“]?)(?P<value>[^\s\"'“”]{3,64})",
        hints="passwort,kennwort",
        group="value",
        score=0.85,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?i:\bmot\s+de\s+passe\b[^\n.]{0,30}?\s(?:est|était|:)\s*)(?P<q>[\"'«]?)\s*(?P<value>[^\s\"'»]{3,64})",
        hints="mot de passe",
        group="value",
        score=0.85,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?i:\bcontrase[ñn]a\b[^\n.]{0,30}?\s(?:es|era|:)\s*)(?P<q>[\"'«]?)(?P<value>[^\s\"'»]{3,64})",
        hints="contrase",
        group="value",
        score=0.85,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?:パスワード|暗証番号|パスコード|合言葉)(?:[^\n。、]{0,12}?)(?:は|：|:|＝|=)\s*"
        r"(?P<q>[「『\"'“]?)(?P<value>[!#-&(-~]{3,64})",
        hints="パスワード,暗証番号,パスコード,合言葉",
        group="value",
        score=0.9,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?:비밀번호|패스워드|암호|비번)(?:[^\n.]{0,12}?)(?:는|은|:|：|=)\s*"
        r"(?P<q>[\"'“「]?)(?P<value>[!#-&(-~]{3,64})",
        hints="비밀번호,패스워드,암호,비번",
        group="value",
        score=0.9,
        validator=_prose_ok,
    ),
    _r(
        "password_in_prose",
        r"(?:密码|密碼|口令)(?:[^\n。，]{0,12}?)(?:是|为|為|：|:|=)\s*(?P<q>[\"'“「]?)(?P<value>[!#-&(-~]{3,64})",
        hints="密码,密碼,口令",
        group="value",
        score=0.9,
        validator=_prose_ok,
    ),
    # --- card numbers ---------------------------------------------------------------------------
    _r(
        "card_number",
        r"(?<![\d\-])(?:\d{4}[ \-]?\d{4}[ \-]?\d{4}[ \-]?\d{1,7}|\d{4}[ \-]?\d{6}[ \-]?\d{4,5})(?![\d\-])",
        score=0.9,
        validator=_card_ok,
        needs="digits12",
    ),
)

_IDENTIFIER_RULES: tuple[SecretRule, ...] = (
    _r(
        "aws_account_id",
        r"(?i:account[_\s]?id)[\"']?\s*[:=]\s*[\"']?(?P<value>\d{12})\b",
        hints="account",
        severity=_LOW,
        score=0.6,
        group="value",
    ),
    _r(
        "aws_arn",
        r"\barn:aws[a-z\-]*:[a-z0-9\-]+:[a-z0-9\-]*:(?:\d{12})?:[^\s\"',]+",
        hints="arn:aws",
        severity=_LOW,
        score=0.6,
    ),
    _r(
        "storage_bucket_url",
        r"\b[a-z0-9][a-z0-9.\-]{0,62}\.s3[.\-](?:[a-z0-9\-]+\.)?amazonaws\.com\b|"
        r"\bs3[.\-](?:[a-z0-9\-]+\.)?amazonaws\.com/[a-z0-9][a-z0-9.\-_]{2,62}\b",
        hints="amazonaws",
        severity=_LOW,
        score=0.6,
    ),
    _r(
        "storage_bucket_url",
        r"\b[a-z0-9][a-z0-9.\-_]{0,62}\.storage\.googleapis\.com\b|\bstorage\.googleapis\.com/[a-z0-9][a-z0-9.\-_]{2,62}\b",
        hints="googleapis",
        severity=_LOW,
        score=0.6,
    ),
    _r(
        "oauth_client_id",
        r"\b\d{6,}-[a-z0-9]{32}\.apps\.googleusercontent\.com\b",
        hints="googleusercontent",
        severity=_LOW,
        score=0.6,
    ),
    _r(
        "oauth_client_id",
        r"(?i:client_?id|app_?id|consumer_?key|_KEY|_ID)[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9_\-]{14,64})[\"']?",
        hints="id,key",
        severity=_LOW,
        score=0.5,
        group="value",
        validator=_group_random("value"),
    ),
    _r(
        "shop_domain",
        r"\b[a-z0-9][a-z0-9\-]{0,62}\.myshopify\.com\b",
        hints="myshopify",
        severity=_LOW,
        score=0.5,
    ),
    _r("age_recipient", r"\bage1[a-z0-9]{58}\b", hints="age1", severity=_LOW, score=0.5),
    _r(
        "username_assignment",
        r"(?i:\b\w*(?:user(?:name)?|login|uid)\b)[\"']?\s*[:=]\s*[\"']?(?P<value>[A-Za-z0-9_.@\-]{3,64})",
        hints="user,login,uid",
        severity=_LOW,
        score=0.4,
        group="value",
        validator=_group_value_ok("value", quoted=False),
    ),
)


# detect-secrets plugins used (regex based; no entropy, keyword or IP plugins): rule id, hints.
_DETECT_SECRETS_PLUGINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "ArtifactoryDetector": ("artifactory_token", ("akc",)),
    "AWSKeyDetector": ("aws_access_key_id", ("a3t", "akia", "asia", "abia", "acca", "aws")),
    "AzureStorageKeyDetector": ("azure_connection_key", ("accountkey",)),
    "BasicAuthDetector": ("connection_string_credentials", ("://",)),
    "CloudantDetector": (
        "cloudant_credentials",
        ("cloudant", "clou", "cl_", "cl-", "clkey", "clpw", "clpass", "clapi"),
    ),
    "DiscordBotTokenDetector": ("discord_bot_token", ()),
    "GitHubTokenDetector": ("github_token", ("gh",)),
    "GitLabTokenDetector": ("gitlab_token", ("gl", "gr1348941")),
    "IbmCloudIamDetector": ("ibm_cloud_iam_key", ("iam", "ibm", "cloud")),
    "IbmCosHmacDetector": ("ibm_cos_hmac_credentials", ("cos", "hmac")),
    "JwtTokenDetector": ("jwt", ("eyj",)),
    "MailchimpDetector": ("mailchimp_api_key", ("-us",)),
    "NpmDetector": ("npm_token", ("_authtoken",)),
    "OpenAIDetector": ("openai_api_key", ("t3blbkfj",)),
    "PrivateKeyDetector": ("private_key", ("private key", "putty")),
    "PypiTokenDetector": ("pypi_token", ("pypi-",)),
    "SendGridDetector": ("sendgrid_api_key", ("sg.",)),
    "SlackDetector": ("slack_token", ("xox", "hooks.slack")),
    "SoftlayerDetector": (
        "softlayer_credentials",
        ("softlayer", "sl_", "sl-", "slkey", "slpass", "slpw", "slapi"),
    ),
    "SquareOAuthDetector": ("square_token", ("sq0csp",)),
    "StripeDetector": ("stripe_api_key", ("k_live_",)),
    "TelegramBotTokenDetector": ("telegram_bot_token", (":",)),
    "TwilioKeyDetector": ("twilio_api_key", ("ac", "sk")),
}
_DS_NEED_TOKEN = frozenset(
    {"DiscordBotTokenDetector", "TelegramBotTokenDetector", "TwilioKeyDetector", "MailchimpDetector"}
)
_MIN_JWT_LEN = 30  # detect-secrets' JWT pattern is loose; shorter matches are prose like "eyJ.x"


def _jwt_ok(m: Match[str]) -> bool:
    s = m.group(0)
    return len(s) >= _MIN_JWT_LEN and s.count(".") >= 2


def _basic_auth_ok(m: Match[str]) -> bool:
    return m.lastindex is not None and _value_ok(m.group(1), quoted=True)


def _ds_digit_and_letter(m: Match[str]) -> bool:
    s = m.group(0)
    return any(c.isdigit() for c in s) and sum(c.isalpha() for c in s) >= 4


_DS_VALIDATORS: dict[str, Validator] = {
    "JwtTokenDetector": _jwt_ok,
    "ArtifactoryDetector": _ds_digit_and_letter,
    "TwilioKeyDetector": _ds_digit_and_letter,
    "BasicAuthDetector": _basic_auth_ok,
    "DiscordBotTokenDetector": _ds_digit_and_letter,
    "TelegramBotTokenDetector": _ds_digit_and_letter,
}


@lru_cache(maxsize=1)
def _detect_secrets_rules() -> tuple[SecretRule, ...]:
    """The denylist regexes of detect-secrets' regex plugins, as rules (imported once)."""
    import importlib
    import inspect
    import pkgutil

    import detect_secrets.plugins as plugins_pkg
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[SecretRule] = []
    for info in sorted(pkgutil.iter_modules(plugins_pkg.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            entry = _DETECT_SECRETS_PLUGINS.get(cls_name)
            if entry is None or not issubclass(cls, RegexBasedDetector) or cls.__module__ != module.__name__:
                continue
            rule, hints = entry
            denylist: Iterable[Pattern[str]] = getattr(cls, "denylist", ())
            for rx in denylist:
                if cls_name == "ArtifactoryDetector" and "AKC" not in rx.pattern:
                    continue  # its "AP..." password pattern matches ordinary upper-case words
                needs = "token20" if cls_name in _DS_NEED_TOKEN else ""
                rules.append(SecretRule(rule, rx, _HIGH, 0.85, 0, _DS_VALIDATORS.get(cls_name), hints, needs))
    return tuple(rules)


_TOKEN20 = re.compile(r"[A-Za-z0-9_\-+/]{20}")
_DIGITS12 = re.compile(r"\d{4}[ \-]?\d{4,6}[ \-]?\d{4}")
_ASSIGN_KEYWORDS = (
    "pass", "pw", "secret", "token", "key", "credential", "auth", "login", "pat", "psk", "pin", "contrase",
    "kennwort", "crumb", "sig",
)  # fmt: skip
_ASSIGN_AFTER = re.compile(r"[\w.\-$>]{0,40}?[\"'\]]{0,2}\s{0,10}[=:!]")


def _has_assignment(lowered: str) -> bool:
    """Whether a secret-sounding word is followed, within its identifier, by ``=`` or ``:``."""
    for kw in _ASSIGN_KEYWORDS:
        i = lowered.find(kw)
        while i != -1:
            if _ASSIGN_AFTER.match(lowered, i + len(kw)):
                return True
            i = lowered.find(kw, i + 1)
    return False


_FEATURES: dict[str, Callable[[str, str], bool]] = {
    "token20": lambda text, lowered: _TOKEN20.search(text) is not None,
    "digits12": lambda text, lowered: _DIGITS12.search(text) is not None,
    "assign": lambda text, lowered: _has_assignment(lowered),
}


class SecretScreen:
    """Find credentials in text (W4).

    Example::

        screen = SecretScreen()
        findings = screen.scan('OPENAI_API_KEY="sk-proj-..."')
        # -> [Finding(kind="secret", rule="openai_api_key", start=..., end=..., ...)]

    Overlapping matches of several rules are reported once (the most severe, most confident).

    Args:
        use_detect_secrets: also run detect-secrets' regex plugins (default ``True``).
        include_identifiers: also report cloud resource identifiers that are not credentials
            (AWS account ids, ARNs, bucket URLs, OAuth client ids, usernames) with severity LOW.
        extra_rules: more :class:`SecretRule` s to run.
        max_chars: longest text accepted; longer raises :class:`~shared_core.errors.InputError`.
    """

    def __init__(
        self,
        *,
        use_detect_secrets: bool = True,
        include_identifiers: bool = False,
        extra_rules: Sequence[SecretRule] = (),
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.max_chars = check_max_chars(max_chars)
        rules: list[SecretRule] = list(_RULES)
        if use_detect_secrets:
            rules.extend(_detect_secrets_rules())
        if include_identifiers:
            rules.extend(_IDENTIFIER_RULES)
        rules.extend(extra_rules)
        self._rules = tuple(rules)
        # every distinct hint is looked up once per text, then rules are selected by set overlap
        self._hints = tuple(sorted({h for r in self._rules for h in r.hints}))
        self._hint_sets = tuple(frozenset(r.hints) for r in self._rules)

    def scan(self, text: str) -> list[Finding]:
        """Return the credentials found in ``text``.

        Raises:
            InputError: if ``text`` is not a str or is longer than ``max_chars``.
        """
        text = check_text(text, max_chars=self.max_chars)
        if len(text) < 4:
            return []
        lowered = text.lower()
        present = {h for h in self._hints if h in lowered}
        features: dict[str, bool] = {}
        found: list[Finding] = []
        for r, hints in zip(self._rules, self._hint_sets, strict=True):
            if hints and hints.isdisjoint(present):
                continue
            if r.needs:
                if r.needs not in features:
                    features[r.needs] = _FEATURES[r.needs](text, lowered)
                if not features[r.needs]:
                    continue
            for m in r.pattern.finditer(text):
                if r.validator is not None and not r.validator(m):
                    continue
                start, end = _span(m, r.group)
                if end > start:
                    found.append(
                        Finding(
                            kind="secret",
                            rule=r.rule,
                            start=start,
                            end=end,
                            severity=r.severity,
                            score=r.score,
                        )
                    )
        return resolve_overlaps(found)


def _span(m: Match[str], group: int | str) -> tuple[int, int]:
    if group:
        start, end = m.span(group)
        if start >= 0:
            return start, end
    return m.span()
