"""Configuration: seeds' defaults, TOML overrides per memory space, stable hash (R3, W8)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared_core import ConfigBook, ConfigError, GateConfig, load_config
from shared_core.model import Tier


def test_seed_defaults() -> None:
    """The defaults are the seeds' values; min_score is left to the embedding, else the seeds' 0.78."""
    cfg = GateConfig()
    assert (cfg.min_score, cfg.max_age_days, cfg.allow_draft, cfg.max_hits) == (None, 90, False, 8)
    assert cfg.resolved().min_score == 0.78
    assert cfg.resolved(0.54).min_score == 0.54
    assert GateConfig(min_score=0.6).resolved(0.54).min_score == 0.6
    assert cfg.freshness_exempt_tags == ("long_term_policy", "legal_stopline")
    assert cfg.superseded_markers == ("superseded", "旧方針", "使用禁止")
    assert cfg.tier_priority == (Tier.WORKING, Tier.CONFIRMED)


def test_hash_is_stable_and_sensitive() -> None:
    """Equal settings hash equally; any change changes the hash."""
    assert GateConfig().config_hash() == GateConfig().config_hash()
    assert GateConfig().config_hash() != GateConfig(min_score=0.79).config_hash()
    assert len(GateConfig().config_hash()) == 16


def test_toml_overrides_per_space(tmp_path: Path) -> None:
    """[gate] sets defaults and [spaces.X.gate] overrides them for one space only."""
    p = tmp_path / "gate.toml"
    p.write_text(
        '[gate]\nmin_score = 0.5\n\n[spaces."support".gate]\nmax_age_days = 30\nallow_draft = true\n',
        encoding="utf-8",
    )
    book = load_config(p)
    assert book.for_space("other").min_score == 0.5
    support = book.for_space("support")
    assert (support.min_score, support.max_age_days, support.allow_draft) == (0.5, 30, True)


@pytest.mark.parametrize(
    "text",
    [
        "[gate]\nmin_score = 1.5\n",
        "[gate]\nmax_age_days = 0\n",
        "[gate]\nmin_scor = 0.5\n",
        "[gaet]\nmin_score = 0.5\n",
        "[gate]\nsuperseded_markers = ['']\n",
        "[gate]\nmin_score = nan\n",
        "not toml at all [",
        '[spaces."x"]\nmin_score = 0.1\n',
    ],
)
def test_bad_config_is_a_config_error(tmp_path: Path, text: str) -> None:
    """Unknown keys, out-of-range values and broken TOML raise ConfigError naming the problem."""
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError):
        load_config(p)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A missing config file raises ConfigError, not FileNotFoundError."""
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")


def test_replace_validates() -> None:
    """replace() returns a validated copy and rejects bad values."""
    assert GateConfig().replace(min_score=0.85).min_score == 0.85
    with pytest.raises(ConfigError):
        GateConfig().replace(max_hits=0)
    assert ConfigBook().for_space("s") == GateConfig()
