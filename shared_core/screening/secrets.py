"""Credential screen (W4): API keys, tokens, private keys, passwords, card numbers.

Rules come from two places, all run on the whole text (not line by line):

* the rule table ``shared_core/data/screening/secrets.toml`` (run by the shared
  :mod:`~shared_core.screening.engine`): provider key formats (``sk-proj-``, ``sk-ant-``,
  ``github_pat_``, ``cfat_``, ``xkeysib-``, ...), authorization headers and tokens in URLs,
  connection strings, command lines and SQL with passwords, secret-named assignments in code and
  config (``password = "..."``, ``"api_key": "..."``, a literal fallback after an environment
  lookup), passwords stated in prose (English, German, French, Spanish, Japanese, Korean,
  Chinese), private keys with or without their header, card numbers that pass the Luhn check in a
  card-like context;
* the regex plugins of `detect-secrets <https://github.com/Yelp/detect-secrets>`_ (AWS, GitHub,
  Slack, Stripe, JWT, private keys, basic auth, ...), through its public plugin registry: their
  ``denylist`` patterns are matched directly so that every hit has a span. Which plugins, with
  which hints and validators, is the table ``detect_secrets.toml``.

The screen looks at the text and at its decoded views (:mod:`~shared_core.screening.decoding`:
full-width, invisible characters, JSON / backslash / URL / HTML escapes, spaced-out and reversed
keys, base64 / base32 / hex blobs); a finding in a view is reported at the span of the original
text it came from.

Values that are obviously not secrets (``$VAR``, ``${VAR}``, ``<your-key>``, ``XXXX``,
``os.environ[...]``, a function call) are skipped. Cloud resource identifiers (account ids,
ARNs, bucket URLs, OAuth client ids, usernames) are not credentials and are off by default;
``include_identifiers=True`` reports them with severity LOW.

Why rules and not CredSweeper's model: see ``shared_core/data/screening/README.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from re import Match, Pattern
from typing import Any

from .decoding import decoded_views
from .engine import Rule, RuleSet, ScreeningEngine, default_engine, toml_loads
from .findings import (
    DEFAULT_MAX_CHARS,
    Finding,
    Severity,
    check_max_chars,
    check_text,
    resolve_overlaps,
)
from .validators import luhn_ok  # also registers the validators the tables name

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


@dataclass(frozen=True)
class SecretRule:
    """One credential pattern written in Python (rule files are the usual way: see the engine).

    Attributes:
        rule: stable rule id reported in findings.
        pattern: compiled regular expression.
        severity: severity of a match.
        score: confidence of a match in ``[0, 1]``.
        group: the group whose span is reported (0: the whole match).
        validator: optional extra check on a match.
        hints: lower-case literals; the rule only runs when one of them occurs in the
            lower-cased text (empty: always runs).
        needs: a feature the text must have (``token20``, ``digits12``, ``assign``), or empty.
    """

    rule: str
    pattern: Pattern[str]
    severity: Severity = Severity.HIGH
    score: float = 0.9
    group: int | str = 0
    validator: Callable[[Match[str]], bool] | None = None
    hints: tuple[str, ...] = ()
    needs: str = ""

    def as_rule(self) -> Rule:
        """The engine rule for this pattern."""
        check = self.validator
        return Rule(
            id=self.rule,
            kind="secret",
            pattern=self.pattern,
            severity=self.severity,
            score=self.score,
            hints=tuple(h.lower() for h in self.hints),
            group=self.group,
            needs=self.needs,
            key=f"python:{self.rule}:{self.pattern.pattern}",
            fn=(lambda m, g: check(m)) if check is not None else None,
        )


@lru_cache(maxsize=1)
def _detect_secrets_rules() -> tuple[Rule, ...]:
    """The denylist regexes of the detect-secrets plugins in ``detect_secrets.toml``, as rules."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    path = resources.files("shared_core") / "data" / "screening" / "detect_secrets.toml"
    table = toml_loads(path.read_text(encoding="utf-8"))["plugin"]
    plugins: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    by_name: dict[str, Any] = {plugin.__name__: plugin for plugin in plugins}
    rules: list[Rule] = []
    for row in table:
        cls: Any = by_name.get(row["plugin"])
        if cls is None:
            continue  # a plugin this detect-secrets version does not have
        denylist: Iterable[Pattern[str]] = cls.denylist
        only_if = row.get("only_if", "")
        for i, rx in enumerate(denylist):
            if only_if and only_if not in rx.pattern:
                continue
            rules.append(
                Rule(
                    id=row["id"],
                    kind="secret",
                    pattern=rx,
                    severity=Severity.HIGH,
                    score=0.85,
                    hints=tuple(row.get("hints", ())),
                    validator=row.get("validator", ""),
                    needs=row.get("needs", ""),
                    key=f"detect_secrets:{row['plugin']}:{i}",
                )
            )
    return tuple(rules)


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
        extra_rules: more rules to run (:class:`SecretRule` or engine :class:`Rule` objects).
        engine: the rule tables (default: the shipped ones; see
            :meth:`ScreeningEngine.from_files` to extend or override them).
        decode: also screen the decoded views of the text (default ``True``).
        max_chars: longest text accepted; longer raises :class:`~shared_core.errors.InputError`.
    """

    def __init__(
        self,
        *,
        use_detect_secrets: bool = True,
        include_identifiers: bool = False,
        extra_rules: Sequence[SecretRule | Rule] = (),
        engine: ScreeningEngine | None = None,
        decode: bool = True,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        self.max_chars = check_max_chars(max_chars)
        self.decode = bool(decode)
        eng = engine if engine is not None else default_engine()
        rules = [r for r in eng.ruleset("secret").rules if include_identifiers or "identifier" not in r.tags]
        if use_detect_secrets:
            rules.extend(_detect_secrets_rules())
        rules.extend(r.as_rule() if isinstance(r, SecretRule) else r for r in extra_rules)
        self._rules = RuleSet(rules)

    def _match(self, text: str) -> list[Finding]:
        return [
            Finding(kind="secret", rule=r.id, start=s, end=e, severity=r.severity, score=r.score)
            for r, s, e in self._rules.matches(text)
        ]

    def scan(self, text: str) -> list[Finding]:
        """Return the credentials found in ``text`` and in its decoded views.

        Raises:
            InputError: if ``text`` is not a str or is longer than ``max_chars``.
        """
        text = check_text(text, max_chars=self.max_chars)
        if len(text) < 4:
            return []
        found = self._match(text)
        if self.decode:
            for view in decoded_views(text):
                for f in self._match(view.text):
                    s, e = view.original_span(f.start, f.end)
                    found.append(f.model_copy(update={"start": s, "end": e}))
        return resolve_overlaps(found)
