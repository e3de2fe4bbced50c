"""The motion rig: named channels, phone-driven lips, non-verbal motion, motion files."""

from __future__ import annotations

import math

import numpy as np

from talkhead.config import FPS
from talkhead.rig.nonverbal import nonverbal_motion
from talkhead.rig.spec import SPEC
from talkhead.rig.visemes import mouth_targets, stress_of


def n_frames(n_samples: int, sample_rate: int) -> int:
    """Video frames (25 fps) that cover ``n_samples`` of audio."""
    return max(1, math.ceil(n_samples * FPS / sample_rate - 1e-6))


def target_motion(wav: np.ndarray, sample_rate: int, phones: list[tuple[str, float, float]],
                  seed: int | np.random.Generator = 0) -> np.ndarray:
    """Speech -> phoneme-driven target motion [T, 58]: coarticulated lips plus seeded non-verbal motion."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    n = n_frames(len(wav), sample_rate)
    motion = mouth_targets(phones, n)
    stressed = [(s, e) for p, s, e in phones if stress_of(p) == 1]
    extra = nonverbal_motion(wav, sample_rate, stressed, n, rng)
    keep = np.zeros(SPEC.dim, bool)
    for name in ("eyeBlinkLeft", "eyeBlinkRight", "browInnerUp", "browOuterUpLeft", "browOuterUpRight"):
        keep[SPEC[name]] = True
    keep[SPEC.pose] = True
    motion[:, keep] = extra[:, keep]
    return motion
