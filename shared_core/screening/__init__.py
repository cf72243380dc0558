"""Write-side screens (W4, W5): credentials, personal data, and instructions aimed at the agent.

Every screen has one method, ``scan(text) -> list[Finding]``; :func:`screen` runs several and
returns a :class:`ScreenReport`. Findings carry a kind, a rule id, a span, a severity and a
score, never the matched text, so a report can go into an audit record as it is::

    from shared_core.screening import mask_pii, screen

    text = "My card is 4111 1111 1111 1111, call 090-1234-5678"
    report = screen(text)
    report.has_secret          # True: card numbers are credentials (W4)
    report.max_severity        # Severity.HIGH
    report.model_dump_json()   # kinds, rules, spans, severities, scores: no text
    mask_pii(text, report.findings)   # "My card is <CREDIT_CARD>, call <JP_PHONE_NUMBER>"

What a finding *means* for a write (reject, quarantine, mask) is the write policy's decision.

Screens:
    :class:`SecretScreen`: API keys, tokens, private keys, passwords, card numbers.
    :class:`PiiScreen`: Presidio pattern recognizers plus Japanese and Korean patterns.
    :class:`InjectionScreen`: instruction overrides, role switches, exfiltration, persistence,
    encoded payloads and hidden text, in many languages.

All three share one rule engine (:class:`ScreeningEngine`): the rule tables are TOML files in
``shared_core/data/screening/`` that a caller extends or overrides per memory space without
forking (``ScreeningEngine.from_files("space.toml")``, then ``SecretScreen(engine=...)``), and
one decoding step (:func:`decoded_views`: full-width, invisible characters, escapes, URL
encoding, spaced-out and reversed keys, base64 / base32 / hex). :func:`screen_fields` screens
every field of a record in one pass; :func:`joint_findings` finds instructions split across
consecutive memories.

Case tables (``secrets``, ``pii``, ``injection``) shared by the tests of every adapter are
returned by :func:`load_cases`.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any, Literal

from ..errors import InputError
from .decoding import View, decoded_views
from .engine import Rule, ScreeningEngine, load_rules, register_validator
from .findings import DEFAULT_MAX_CHARS, Finding, FindingKind, Screen, ScreenReport, Severity
from .injection import InjectionRule, InjectionScreen
from .joint import JointFinding, joint_findings, screen_fields
from .pii import DEFAULT_PII_ENTITIES, PiiPattern, PiiScreen, mask_pii
from .run import default_screens, screen
from .secrets import SecretRule, SecretScreen

__all__ = [
    "DEFAULT_MAX_CHARS",
    "DEFAULT_PII_ENTITIES",
    "Finding",
    "FindingKind",
    "InjectionRule",
    "InjectionScreen",
    "JointFinding",
    "PiiPattern",
    "PiiScreen",
    "Rule",
    "Screen",
    "ScreenReport",
    "ScreeningEngine",
    "SecretRule",
    "SecretScreen",
    "Severity",
    "View",
    "decoded_views",
    "default_screens",
    "joint_findings",
    "load_cases",
    "load_rules",
    "mask_pii",
    "register_validator",
    "screen",
    "screen_fields",
]


CaseTable = Literal["secrets", "pii", "injection"]


def load_cases(name: CaseTable) -> list[dict[str, Any]]:
    """Load a shared case table: rows of ``{"text", "expect", "kind", "note"}``.

    ``expect`` says whether a finding of ``kind`` must be reported for ``text`` (``True``) or
    must not be (``False``). The tables live in ``shared_core/data/screening/`` and are reused
    by the LangChain and LlamaIndex adapters' tests.

    Raises:
        InputError: if there is no table of that name.
    """
    if name not in ("secrets", "pii", "injection"):
        raise InputError(f"no case table named {name!r}")
    path = resources.files("shared_core") / "data" / "screening" / f"{name}_cases.jsonl"
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
    return rows
