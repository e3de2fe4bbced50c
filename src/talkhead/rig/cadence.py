"""Cadence (MuseTalk-style): keep every K-th frame, fill the frames between by interpolation.

Blendshapes and translations interpolate linearly; head rotation by spherical
linear interpolation of the rotation itself, so a turning head moves along the
shortest arc rather than through a blend of Euler angles.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from talkhead.rig.spec import SPEC

# The renderer's rotation is Rz(roll)·Rx(-pitch)·Ry(yaw) in scipy's terms (see face.template.pose_rotation).
_EULER = "ZXY"


def _to_rotation(pose: np.ndarray) -> Rotation:
    return Rotation.from_euler(_EULER, np.stack([pose[:, 2], -pose[:, 0], pose[:, 1]], -1))


def _from_rotation(rot: Rotation) -> np.ndarray:
    roll, neg_pitch, yaw = rot.as_euler(_EULER).T
    return np.stack([-neg_pitch, yaw, roll], -1)


def keyframes(n_frames: int, stride: int) -> np.ndarray:
    """Indices of the frames that are computed: every ``stride``-th, and always the last."""
    if stride < 1:
        raise ValueError("cadence stride must be >= 1")
    idx = np.arange(0, n_frames, stride)
    return idx if idx[-1] == n_frames - 1 else np.append(idx, n_frames - 1)


def interpolate_motion(key_motion: np.ndarray, key_idx: np.ndarray, n_frames: int) -> np.ndarray:
    """Motion at keyframes [K, 58] -> every frame [n_frames, 58]: lerp blendshapes/translation, slerp rotation."""
    t = np.arange(n_frames)
    out = np.empty((n_frames, SPEC.dim), np.float32)
    for c in range(SPEC.dim):
        out[:, c] = np.interp(t, key_idx, key_motion[:, c])
    if len(key_idx) > 1:
        pose = key_motion[:, SPEC.pose]
        rot = Slerp(key_idx.astype(float), _to_rotation(pose))(t.astype(float))
        out[:, SPEC.pose.start : SPEC.pose.start + 3] = _from_rotation(rot)
    return out


def interpolation_weights(n_frames: int, key_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For pixel interpolation: each frame's left/right keyframe position and the right's weight."""
    t = np.arange(n_frames)
    right = np.clip(np.searchsorted(key_idx, t, side="left"), 0, len(key_idx) - 1)
    left = np.clip(right - 1, 0, None)
    exact = key_idx[right] == t
    left = np.where(exact, right, left)
    span = np.maximum(key_idx[right] - key_idx[left], 1)
    w = np.where(exact, 1.0, (t - key_idx[left]) / span)
    return left, right, w.astype(np.float32)
