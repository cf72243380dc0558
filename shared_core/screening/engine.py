r"""One rule engine for the write-side screens (W4, W5): rules as data, loaded from TOML files.

The secret, injection and PII screens share this engine. A rule is a regular expression plus
what makes it cheap and precise: *hints* (lower-case literals of which one must occur in the
text for the rule to run at all), *also* (a second such group, AND-ed), a *gate* (a cheap
pattern that must match the lower-cased text first), a *needs* feature (a named property of
the text, such as a run of twenty token characters), a named *validator* that accepts or refuses
each match (a placeholder filter, the Luhn check, ...), a severity, a score, the group whose span
is reported, the *view* it is matched in (``raw``, ``norm`` or ``compact`` text) and the
languages it covers.

The rule tables live in ``shared_core/data/screening/*.toml``; a caller (the write policy of a
memory space, say) extends or overrides them without forking::

    from shared_core.screening import ScreeningEngine, load_rules

    engine = ScreeningEngine.from_files("acme_rules.toml")          # default tables + acme's
    only = ScreeningEngine.from_files("acme_rules.toml", base=None)  # acme's alone

A rule file looks like this::

    [vars]                       # reusable fragments, written {=NAME} inside patterns
    ACME = '''acme_(?:live|test)'''

    [lists]                      # reusable word lists, written "@NAME" in hints and also
    ACME_HINTS = ["acme_live", "acme_test"]

    [[rule]]
    id = "acme_token"            # rule id reported in findings
    kind = "secret"              # secret | injection | pii
    pattern = '''\b{=ACME}_[a-z0-9]{12}\b'''
    hints = ["acme_"]
    severity = "high"            # low | medium | high
    score = 0.95

    [[rule]]
    key = "password_in_prose#3"  # the key of a default rule: replaces it ...
    enabled = false              # ... or, with enabled = false, switches it off

A rule's ``key`` is its ``id`` for the first rule of that id in a file and ``id#2``, ``id#3``
... for later ones (or what the file says); a rule of a later file with the key of an earlier
rule replaces it. Unknown fields, unknown validators or features, bad severities and patterns
that do not compile raise :class:`~shared_core.errors.ConfigError` naming the file and rule.

Written here rather than taken from a library: gitleaks and CredSweeper ship rule files of
this kind, but for their own scanners (Go; a CredSweeper run needs about thirty packages,
pandas and lxml among them); none is a small, offline Python engine with spans, severities
and multi-language views.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from pathlib import Path
from re import Match, Pattern
from typing import Any, Literal, cast

import ahocorasick_rs

from ..errors import ConfigError, InputError
from .findings import Finding, FindingKind, Severity
from .prefix import guarded
from .registry import FEATURES, VALIDATORS, Validator, register_validator, toml_loads
from .scripts import script_gate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "DEFAULT_RULE_FILES",
    "FEATURES",
    "VALIDATORS",
    "Rule",
    "RuleView",
    "ScreeningEngine",
    "default_rules",
    "load_rules",
    "merge_rules",
    "parse_rules",
    "register_validator",
    "toml_loads",
]

RuleView = Literal["raw", "norm", "compact"]
"""Which text a rule is matched in: the text as it is (``raw``), the normalised text (NFKC,
case-folded, invisible characters removed, look-alikes folded), or the compact text (normalised
letters and digits only, digit look-alikes folded)."""

DEFAULT_RULE_FILES: tuple[str, ...] = (
    "secrets.toml",
    "injection.toml",
    "injection_ja_ko.toml",
    "injection_more.toml",
    "pii.toml",
)
"""The rule tables shipped in ``shared_core/data/screening/``, loaded in this order."""

_KINDS = ("secret", "injection", "pii")
_VIEWS = ("raw", "norm", "compact")
_SEVERITIES = {s.value: s for s in Severity}
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}
_FIELDS = frozenset((
    "id", "key", "kind", "pattern", "severity", "score", "hints", "also", "gate", "group", "check_group",
    "validator", "needs", "languages", "view", "flags", "enabled", "tags", "note",
))  # fmt: skip
_VAR = re.compile(r"\{=([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Rule:
    r"""One screening rule.

    Attributes:
        id: rule id reported in findings (several rules may share one).
        kind: ``secret``, ``injection`` or ``pii`` (the kind of its findings).
        pattern: compiled regular expression.
        severity: severity of a match.
        score: confidence of a match in ``[0, 1]``.
        hints: lower-case literals of which one must occur in the (lower-cased) view.
        also: a second group of literals of which one must occur too.
        gate: a cheap pattern that must match the lower-cased view first.
        group: the group whose span is reported (``0``: the whole match; the whole match is
            reported when the group did not take part).
        check_group: the group the validator looks at (default: ``group``).
        validator: name of a validator in :data:`VALIDATORS`, or empty.
        needs: name of a feature in :data:`FEATURES` the text must have, or empty.
        languages: languages the rule is written for (``en``, ``ja``, ...; empty: any).
        view: the text the rule is matched in.
        word_start: the match must start at a word boundary (a leading ``\b`` of the pattern
            is checked this way, which keeps Python's engine from scanning ahead slowly).
        key: unique key of the rule in its table (what an override names).
        tags: free labels a screen selects rules by (``identifier``: not a credential).
        enabled: a disabled rule is kept in the table but never run.
    """

    id: str
    kind: FindingKind
    pattern: Pattern[str]
    severity: Severity = Severity.HIGH
    score: float = 0.85
    hints: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    gate: Pattern[str] | None = None
    group: int | str = 0
    check_group: int | str | None = None
    validator: str = ""
    needs: str = ""
    languages: tuple[str, ...] = ()
    view: RuleView = "raw"
    word_start: bool = False
    key: str = ""
    tags: tuple[str, ...] = ()
    enabled: bool = True
    fn: Validator | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.id)
        if not all(self.hints) or not all(self.also):  # as the loader says it for a rule file
            raise ConfigError(f"rule {self.key!r}: hints and also must be non-empty strings")
        if self.validator and self.fn is None:
            fn = VALIDATORS.get(self.validator)
            if fn is None:
                raise ConfigError(f"rule {self.key!r}: unknown validator {self.validator!r}")
            object.__setattr__(self, "fn", fn)

    def accepts(self, m: Match[str]) -> bool:
        """Whether a match passes the rule's validator (true when there is none)."""
        if self.fn is None:
            return True
        return self.fn(m, self.group if self.check_group is None else self.check_group)

    def span(self, m: Match[str]) -> tuple[int, int]:
        """The reported span of a match (its ``group``, or the whole match)."""
        if self.group:
            start, end = m.span(self.group)
            if start >= 0:
                return start, end
        return m.span()


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def _expand(pattern: str, variables: Mapping[str, str], where: str) -> str:
    for _ in range(8):  # variables may use variables; eight levels is plenty
        if "{=" not in pattern:
            return pattern

        def sub(m: Match[str]) -> str:
            name = m.group(1)
            if name not in variables:
                raise ConfigError(f"{where}: unknown variable {{={name}}}")
            return variables[name]

        pattern = _VAR.sub(sub, pattern)
    raise ConfigError(f"{where}: variables nested too deeply")


def _str_list(
    value: Any, name: str, where: str, lists: Mapping[str, Sequence[str]] | None = None
) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {name} must be a list of non-empty strings")
    out: list[str] = []
    for v in value:
        if lists is not None and v.startswith("@") and v[1:].isidentifier():  # "@NAME": [lists] NAME
            if v[1:] not in lists:
                raise ConfigError(f"{where}: unknown list {v}")
            out.extend(lists[v[1:]])
        else:
            out.append(v)
    return tuple(out)


def _group(value: Any, name: str, where: str) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{where}: {name} must be a group number or name")
    return value


def _rule_from_table(
    row: Mapping[str, Any],
    *,
    variables: Mapping[str, str],
    lists: Mapping[str, Sequence[str]],
    where: str,
    key: str,
) -> Rule:
    unknown = set(row) - _FIELDS
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}")
    rid = row.get("id")
    if not isinstance(rid, str) or not rid or len(rid) > 128:
        raise ConfigError(f"{where}: every rule needs an id (1-128 characters)")
    kind = row.get("kind")
    if kind not in _KINDS:
        raise ConfigError(f"{where}: kind must be one of {_KINDS}")
    raw_pattern = row.get("pattern")
    if not isinstance(raw_pattern, str) or not raw_pattern:
        raise ConfigError(f"{where}: pattern must be a non-empty string")
    view = row.get("view", "raw")
    if view not in _VIEWS:
        raise ConfigError(f"{where}: view must be one of {_VIEWS}")
    severity = _SEVERITIES.get(str(row.get("severity", "high")).lower())
    if severity is None:
        raise ConfigError(f"{where}: severity must be low, medium or high")
    score = row.get("score", 0.85)
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
        raise ConfigError(f"{where}: score must be a number in [0, 1]")
    flags = 0
    for f in str(row.get("flags", "")):
        if f not in _FLAGS:
            raise ConfigError(f"{where}: unknown flag {f!r} (use i, m, s, x)")
        flags |= _FLAGS[f]
    if view != "raw":
        flags |= re.MULTILINE
    pattern = _expand(raw_pattern, variables, where)
    word_start = False
    if view != "raw" and pattern.startswith(r"\b"):
        word_start = True
        pattern = pattern[2:]
    try:
        compiled = re.compile(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ConfigError(f"{where}: pattern does not compile: {exc}") from None
    gate = row.get("gate")
    gate_rx = None
    if gate is not None:
        if not isinstance(gate, str) or not gate:
            raise ConfigError(f"{where}: gate must be a non-empty pattern")
        try:
            gate_rx = re.compile(_expand(gate, variables, where))
        except re.error as exc:
            raise ConfigError(f"{where}: gate does not compile: {exc}") from None
    group = _group(row.get("group", 0), "group", where)
    check_group = row.get("check_group")
    if check_group is not None:
        check_group = _group(check_group, "check_group", where)
    for g in (group, check_group):
        if isinstance(g, str) and g not in compiled.groupindex:
            raise ConfigError(f"{where}: the pattern has no group named {g!r}")
        if isinstance(g, int) and not 0 <= g <= compiled.groups:
            raise ConfigError(f"{where}: the pattern has no group {g}")
    validator = row.get("validator", "")
    if not isinstance(validator, str) or (validator and validator not in VALIDATORS):
        raise ConfigError(f"{where}: unknown validator {validator!r}")
    needs = row.get("needs", "")
    if not isinstance(needs, str) or (needs and needs not in FEATURES):
        raise ConfigError(f"{where}: unknown feature {needs!r} in needs")
    enabled = row.get("enabled", True)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{where}: enabled must be true or false")
    hints = tuple(h.lower() for h in _str_list(row.get("hints", []), "hints", where, lists))
    also = tuple(h.lower() for h in _str_list(row.get("also", []), "also", where, lists))
    return Rule(
        id=rid,
        kind=cast(FindingKind, kind),
        pattern=compiled,
        severity=severity,
        score=float(score),
        hints=hints,
        also=also,
        gate=gate_rx,
        group=group,
        check_group=check_group,
        validator=validator,
        needs=needs,
        languages=_str_list(row.get("languages", []), "languages", where),
        view=cast(RuleView, view),
        word_start=word_start,
        key=key,
        tags=_str_list(row.get("tags", []), "tags", where),
        enabled=enabled,
    )


def parse_rules(text: str, *, name: str = "<rules>") -> tuple[Rule, ...]:
    """Parse a TOML rule table (see the module docstring for the format).

    Raises:
        ConfigError: if the TOML or a rule in it is invalid.
    """
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name}: not valid TOML: {exc}") from None
    unknown = set(doc) - {"vars", "lists", "rule", "meta"}
    if unknown:
        raise ConfigError(f"{name}: unknown top-level table(s) {sorted(unknown)}")
    variables = doc.get("vars", {})
    if not isinstance(variables, dict) or not all(isinstance(v, str) for v in variables.values()):
        raise ConfigError(f"{name}: [vars] must map names to strings")
    lists = doc.get("lists", {})
    if not isinstance(lists, dict) or not all(
        isinstance(v, list) and all(isinstance(w, str) and w for w in v) for v in lists.values()
    ):
        raise ConfigError(f"{name}: [lists] must map names to lists of strings")
    rows = doc.get("rule", [])
    if not isinstance(rows, list):
        raise ConfigError(f"{name}: rules are written [[rule]]")
    seen: dict[str, int] = {}
    keys: set[str] = set()
    rules: list[Rule] = []
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise ConfigError(f"{name}: rule {i} is not a table")
        rid = str(row.get("id", ""))
        seen[rid] = seen.get(rid, 0) + 1
        key = row.get("key") or (rid if seen[rid] == 1 else f"{rid}#{seen[rid]}")
        if not isinstance(key, str):
            raise ConfigError(f"{name}: rule {i}: key must be a string")
        if key in keys:
            raise ConfigError(f"{name}: rule {i}: key {key!r} used twice")
        keys.add(key)
        if row.get("enabled") is False and set(row) <= {"key", "id", "enabled", "note"}:
            rules.append(_disabled(key, rid))  # an override that only switches a rule off
            continue
        where = f"{name}: rule {i} ({key})"
        rules.append(_rule_from_table(row, variables=variables, lists=lists, where=where, key=key))
    return tuple(rules)


_NEVER = re.compile(r"(?!)")


def _disabled(key: str, rid: str) -> Rule:
    return Rule(id=rid or key, kind="secret", pattern=_NEVER, key=key, enabled=False)


def load_rules(path: str | Path) -> tuple[Rule, ...]:
    """Load a TOML rule file.

    Raises:
        ConfigError: if the file cannot be read or a rule in it is invalid.
    """
    return parse_rules(read_data_file(path, "rule file"), name=str(path))


def read_data_file(path: str | Path, what: str) -> str:
    """The UTF-8 text of a screening data file (rule table, cue table, model).

    Raises:
        ConfigError: naming the file and the error class (never its content) if it cannot be read.
    """
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {p}: {exc.__class__.__name__}") from None


def merge_rules(base: Iterable[Rule], *overrides: Iterable[Rule]) -> tuple[Rule, ...]:
    """Rules of ``base`` with each override applied in order.

    A rule whose key is already present replaces the earlier one in place (a disabled rule
    switches it off); a rule with a new key is appended.
    """
    table: dict[str, Rule] = {r.key: r for r in base}
    for rules in overrides:
        for r in rules:
            if not r.enabled and r.pattern is _NEVER and r.key in table:
                table[r.key] = replace(table[r.key], enabled=False)
            else:
                table[r.key] = r
    return tuple(table.values())


@lru_cache(maxsize=1)
def default_rules() -> tuple[Rule, ...]:
    """The rule tables shipped with the package (:data:`DEFAULT_RULE_FILES`), loaded once."""
    from . import validators as _validators  # noqa: F401  (registers the validators and features)

    folder = resources.files("shared_core") / "data" / "screening"
    rules: list[Rule] = []
    for name in DEFAULT_RULE_FILES:
        rules.extend(parse_rules((folder / name).read_text(encoding="utf-8"), name=name))
    return tuple(rules)


# ---------------------------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------------------------


def _inside_word(text: str, pos: int) -> bool:
    """Whether a match starting at ``pos`` starts in the middle of a word (no word boundary)."""
    if pos == 0:
        return False
    here, before = text[pos], text[pos - 1]
    return (here.isalnum() or here == "_") and (before.isalnum() or before == "_")


class RuleSet:
    """Rules of one kind and view, prepared for fast matching (hints looked up once per text)."""

    __slots__ = ("_always", "_automaton", "_by_hint", "_by_script", "_hints", "_patterns", "_slot", "rules")

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(r for r in rules if r.enabled)
        self._hints = tuple(sorted({h for r in self.rules for h in (*r.hints, *r.also)}))
        by_hint: dict[str, list[int]] = {}
        for i, r in enumerate(self.rules):
            for h in r.hints:
                by_hint.setdefault(h, []).append(i)
        self._by_hint = {h: tuple(ix) for h, ix in by_hint.items()}  # hint -> rules it admits
        self._always = tuple(i for i, r in enumerate(self.rules) if not r.hints)
        # Rules of one pattern share its matches in a text; each runs guarded (prefix.py), guarded on
        # first use: a command that screens a few texts analyses a few dozen rules, not all (~1 s).
        first: dict[tuple[str, int], int] = {}
        self._slot = tuple(first.setdefault((r.pattern.pattern, r.pattern.flags), i) for i, r in enumerate(self.rules))
        self._patterns: list[Pattern[str] | None] = [None] * len(self.rules)
        # Rules needing a script of their own (ja, ko, ru, ...) skip a text without it (scripts.py).
        by_script: dict[str, tuple[Pattern[str], set[int]]] = {}
        for i, r in enumerate(self.rules):
            gate = script_gate(r.languages, r.pattern)
            if gate is not None:
                by_script.setdefault(gate.pattern, (gate, set()))[1].add(i)
        self._by_script = tuple((gate, frozenset(ix)) for gate, ix in by_script.values())
        # One Aho-Corasick pass finds every hint and "also" literal present (overlapping ones too): ~5 us
        # for ~550 hints over 300 characters, against ~90 us for one ``in`` test per hint (ahocorasick-rs, a Rust automaton).
        auto = ahocorasick_rs.AhoCorasick
        self._automaton = auto(list(self._hints), matchkind=ahocorasick_rs.MatchKind.Standard) if self._hints else None

    def __len__(self) -> int:
        return len(self.rules)

    def matches(self, text: str, lowered: str | None = None) -> Iterator[tuple[Rule, int, int]]:
        """``(rule, start, end)`` of every accepted match in ``text``.

        ``lowered`` is the text the hints are looked up in (default ``text.lower()``; pass the
        text itself for views that are lower-case already). Spans are offsets into ``text``.
        """
        low = text.lower() if lowered is None else lowered
        chosen = set(self._always)
        auto = self._automaton
        present = set(auto.find_matches_as_strings(low, overlapping=True)) if auto is not None else set()
        for h in present:
            chosen.update(self._by_hint.get(h, ()))
        for gate, ix in self._by_script:
            if chosen & ix and gate.search(text) is None:
                chosen -= ix
        features: dict[str, bool] = {}
        found: dict[int, list[Match[str]]] = {}
        for i in sorted(chosen):  # table order: only the rules whose hints the text holds
            r = self.rules[i]
            if r.also and present.isdisjoint(r.also):
                continue
            if r.needs:
                if r.needs not in features:
                    features[r.needs] = FEATURES[r.needs](text, low)
                if not features[r.needs]:
                    continue
            if r.gate is not None and r.gate.search(low) is None:
                continue
            hits = found.get(self._slot[i])
            if hits is None:
                pattern = self._patterns[i]
                if pattern is None:
                    pattern = self._patterns[i] = guarded(r.pattern)
                hits = found[self._slot[i]] = list(pattern.finditer(text))
            for m in hits:
                if r.word_start and _inside_word(text, m.start()):
                    continue
                if not r.accepts(m):
                    continue
                start, end = r.span(m)
                if end > start:
                    yield r, start, end


class ScreeningEngine:
    """The rules of every screen, by kind and view, loaded from TOML tables.

    Example::

        engine = ScreeningEngine.from_files("space_rules.toml")   # defaults + overrides
        SecretScreen(engine=engine).scan(text)

    Args:
        rules: the rules (default: :func:`default_rules`).
        languages: run only rules for these languages (and rules for any language).
    """

    def __init__(
        self, rules: Iterable[Rule] | None = None, *, languages: Sequence[str] | None = None
    ) -> None:
        chosen = tuple(default_rules() if rules is None else rules)
        for r in chosen:
            if not isinstance(r, Rule):
                raise InputError("ScreeningEngine takes Rule objects (see load_rules)")
        if languages is not None:
            wanted = set(languages)
            chosen = tuple(r for r in chosen if not r.languages or wanted & set(r.languages))
        self.rules = chosen
        self._sets: dict[tuple[str, str], RuleSet] = {}

    @classmethod
    def from_files(
        cls,
        *paths: str | Path,
        base: ScreeningEngine | Iterable[Rule] | Literal["default"] | None = "default",
        languages: Sequence[str] | None = None,
    ) -> ScreeningEngine:
        """An engine of ``base``'s rules with the rule files ``paths`` applied in order.

        Args:
            paths: TOML rule files; later files override earlier ones by rule key.
            base: the rules the files extend: ``"default"`` (the shipped tables), another
                engine, a sequence of rules, or ``None`` (the files alone).
            languages: as for the constructor.

        Raises:
            ConfigError: if a file cannot be read or holds an invalid rule.
        """
        if isinstance(base, str):
            base_rules: Iterable[Rule] = default_rules()
        elif base is None:
            base_rules = ()
        elif isinstance(base, ScreeningEngine):
            base_rules = base.rules
        else:
            base_rules = base
        return cls(merge_rules(base_rules, *(load_rules(p) for p in paths)), languages=languages)

    def with_rules(self, *rules: Rule) -> ScreeningEngine:
        """A copy with ``rules`` added (or replacing rules with the same key)."""
        return ScreeningEngine(merge_rules(self.rules, rules))

    def ruleset(self, kind: FindingKind, view: RuleView = "raw") -> RuleSet:
        """The enabled rules of one kind matched in one view."""
        k = (kind, view)
        if k not in self._sets:
            self._sets[k] = RuleSet(r for r in self.rules if r.kind == kind and r.view == view)
        return self._sets[k]

    def findings(self, kind: FindingKind, text: str, *, view: RuleView = "raw") -> list[Finding]:
        """Findings of the rules of one kind and view in ``text`` (spans into ``text``)."""
        lowered = text if view != "raw" else None
        return [
            Finding(kind=kind, rule=r.id, start=s, end=e, severity=r.severity, score=r.score)
            for r, s, e in self.ruleset(kind, view).matches(text, lowered)
        ]


@lru_cache(maxsize=1)
def default_engine() -> ScreeningEngine:
    """The engine of the shipped rule tables (built once)."""
    return ScreeningEngine()
