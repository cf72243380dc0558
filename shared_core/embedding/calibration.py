"""The score thresholds of an embedding: what the recall gate uses when settings leave them unset."""

from __future__ import annotations

from shared_core.config import SEED_CALIBRATION, ScoreCalibration

__all__ = ["calibration_of"]


def calibration_of(embedder: object) -> ScoreCalibration:
    """The :class:`ScoreCalibration` of an embedding.

    Its ``calibration`` attribute when it has one (the shipped models do); else a calibration of
    its ``recommended_min_score`` alone (no relative rule: nobody measured one for that model);
    else the seeds' (0.78, plain threshold).
    """
    found = getattr(embedder, "calibration", None)
    if isinstance(found, ScoreCalibration):
        return found
    threshold = getattr(embedder, "recommended_min_score", None)
    if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
        return ScoreCalibration(min_score=float(threshold), source="the embedding's recommended_min_score")
    return SEED_CALIBRATION
