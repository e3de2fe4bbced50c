"""Quality metrics shared by evaluation, validation and the benchmarks: of motion, and PSNR of frames."""

from __future__ import annotations

import numpy as np

from talkhead.config import FPS
from talkhead.rig.spec import SPEC


def pearson(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson correlation of two 1-D series (0 when either is constant)."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    a, b = a - a.mean(), b - b.mean()
    den = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / den) if den > 1e-12 else 0.0


def lipsync_r(gen: list[np.ndarray], target: list[np.ndarray], channel: str = "jawOpen") -> float:
    """Correlation of a mouth channel between generated and target motion, over all clips pooled."""
    i = SPEC[channel]
    return pearson(np.concatenate([g[:, i] for g in gen]), np.concatenate([t[:, i] for t in target]))


def mouth_mse(gen: list[np.ndarray], target: list[np.ndarray]) -> float:
    """Mean squared error over the mouth channels, in rig units."""
    idx = SPEC.mouth
    return float(np.mean(np.concatenate([(g[:, idx] - t[:, idx]) ** 2 for g, t in zip(gen, target)])))


def jitter(motion: np.ndarray) -> float:
    """Mean |second difference| over frames and channels: frame-to-frame roughness."""
    m = np.asarray(motion, np.float64)
    return float(np.abs(np.diff(m, n=2, axis=-2)).mean()) if m.shape[-2] > 2 else 0.0


def blink_rate(motion: np.ndarray, threshold: float = 0.5) -> float:
    """Blinks per minute: upward crossings of the mean eyelid closure through ``threshold``."""
    lid = 0.5 * (motion[:, SPEC["eyeBlinkLeft"]] + motion[:, SPEC["eyeBlinkRight"]])
    closed = lid > threshold
    onsets = int(np.sum(closed[1:] & ~closed[:-1]) + closed[0])
    return onsets / (len(motion) / FPS / 60.0)


def head_stats(motion: np.ndarray) -> dict[str, float]:
    """Head rotation std and mean speed (rad, rad/s) over pitch, yaw, roll."""
    rot = motion[:, SPEC.pose][:, :3]
    speed = np.abs(np.diff(rot, axis=0)).mean() * FPS if len(rot) > 1 else 0.0
    return {"head_std": float(rot.std(0).mean()), "head_velocity": float(speed)}


def error_shares(gen: list[np.ndarray], ref: list[np.ndarray]) -> dict[str, float]:
    """Share of the total squared error [T, 58] that falls in each channel group of ``SPEC.groups()``."""
    sq = np.concatenate([(np.asarray(g, np.float64) - r) ** 2 for g, r in zip(gen, ref)])
    total = float(sq.sum())
    return {g: float(sq[:, idx].sum() / total) if total > 0 else 0.0 for g, idx in SPEC.groups().items()}


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two flattened arrays."""
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-12))


def psnr_db(mse: np.ndarray | float, peak: float = 255.0, floor: float = 1e-10) -> np.ndarray | float:
    """Peak signal-to-noise ratio (dB) of mean squared errors (one, or one per frame) in the units of ``peak``;
    an error under ``floor`` counts as ``floor`` (identical frames: a large finite figure)."""
    return 10 * np.log10(peak ** 2 / np.maximum(mse, floor))
