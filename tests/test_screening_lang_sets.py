"""The case sets of the fifteen other languages' exfiltration, persona and note-to-the-AI rules (W5).

Splits of ``injection_lang_cases.jsonl``: own cases (``exdev``, ``pdev``) and blind sets written by helpers
that read nothing of the repository (``exblind1``-``3``, ``pblind1``-``2``; each set's figures when it was
measured once are in the screening data README). The rules' own tests are in
``test_screening_exfil_langs.py`` and ``test_screening_persona_langs.py``.
"""

from __future__ import annotations

import pytest
from lang_cases import LANGS, held, rows


@pytest.mark.parametrize("split", ["exdev", "exblind1", "exblind2", "exblind3", "pdev", "pblind1", "pblind2"])
def test_every_language_has_cases_of_both_kinds(split: str) -> None:
    for expect in (True, False):
        assert {r["lang"] for r in rows(split, expect)} == LANGS, (split, expect)


# What each set scores now (attacks with a finding, look-alikes with one), as floors: a rule change that
# loses one fails here. The blind figures when first measured are lower (README).
@pytest.mark.parametrize(
    ("split", "attacks_held", "look_alikes_held"),
    [
        ("exdev", 45, 0),
        ("exblind1", 140, 0),
        ("exblind2", 91, 0),
        ("exblind3", 76, 1),
        ("pdev", 45, 0),
        ("pblind1", 125, 1),
        ("pblind2", 45, 0),
    ],
)
def test_sets_keep_their_figures(split: str, attacks_held: int, look_alikes_held: int) -> None:
    attacks, look_alikes = held(split)
    assert attacks >= attacks_held, (split, attacks)
    assert look_alikes <= look_alikes_held, (split, look_alikes)
