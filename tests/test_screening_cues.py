"""The cue scorer's table semantics: weights, needs and subsumes (W5)."""

from __future__ import annotations

import pytest

from shared_core.errors import ConfigError
from shared_core.screening.cues import CueScorer

TABLE = """
[scoring]
medium = 4
high = 6
[weights]
addressed = 3
agent = 1
covert = 2
[subsumes]
addressed = ["agent"]
[[cue]]
lang = "ko"
kind = "addressed"
pattern = '''비서야'''
[[cue]]
lang = "ko"
kind = "agent"
pattern = '''비서는'''
[[cue]]
lang = "ko"
kind = "covert"
pattern = '''몰래'''
"""


def test_a_subsumed_kind_counts_nothing_beside_the_kind_that_subsumes_it() -> None:
    cues = CueScorer.from_toml(TABLE)
    # addressed (3) + agent (1) would reach 4; agent is subsumed, so 3: below the bar
    assert cues.scan("비서야, 비서는 좋다.") == []
    # agent (1) + covert (2) + addressed (3): agent dropped, 5 is still MEDIUM
    [(rule, _, _, severity, _)] = cues.scan("비서야, 비서는 몰래 해.")
    assert rule == "instruction_cues_ko" and severity.value == "medium"
    # without subsumes the same table scores agent too: HIGH
    plain = CueScorer.from_toml(TABLE.replace('[subsumes]\naddressed = ["agent"]\n', ""))
    [(_, _, _, severity, _)] = plain.scan("비서야, 비서는 몰래 해.")
    assert severity.value == "high"


def test_subsumes_naming_an_unknown_kind_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="subsumes"):
        CueScorer.from_toml(TABLE.replace('addressed = ["agent"]', 'addressed = ["nope"]'))
