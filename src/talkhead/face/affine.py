"""2x3 affine maps of image points: fitted (a similarity), inverted, applied."""

from __future__ import annotations

import numpy as np


def similarity(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """The 2x3 similarity (scale, rotation, shift) taking points src [N, 2] onto dst [N, 2] (least squares)."""
    ms, md = src.mean(0), dst.mean(0)
    a, b = src - ms, dst - md
    cov = b.T @ a / len(src)
    u, s, vt = np.linalg.svd(cov)
    d = np.sign(np.linalg.det(u @ vt))
    rot = u @ np.diag([1.0, d]) @ vt
    scale = (s * [1.0, d]).sum() / max(1e-9, (a ** 2).sum() / len(src))
    m = np.zeros((2, 3))
    m[:, :2] = scale * rot
    m[:, 2] = md - m[:, :2] @ ms
    return m


def invert(m: np.ndarray) -> np.ndarray:
    """The inverse of 2x3 affine maps [..., 2, 3]."""
    lin = np.linalg.inv(m[..., :2])
    return np.concatenate([lin, -(lin @ m[..., 2:])], axis=-1)


def apply(m: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """A 2x3 map applied to points [N, 2]."""
    return pts @ m[:, :2].T + m[:, 2]
