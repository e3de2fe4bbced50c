"""Which frames of a person's video can teach their lower face: not those where something hides the mouth,
nor those whose lips lie partly outside the picture.

A hand over the mouth is still given 68 points by dlib: the predictor guesses a hidden mouth from the
shape of the rest of the face. Its guess is not mirror-symmetric: the same frame mirrored, predicted in the
mirrored box and mirrored back, puts the mouth elsewhere, while a visible mouth is found again within about
1.5 % of the eye span. Over half a second (a rolling median, against dlib's frame-to-frame noise) the
disagreement marks an occluded stretch; hysteresis grows each stretch that passes ``high`` out to where it
falls below ``low`` (or near the run's own median level), and ``margin`` frames more, so the edges of a
hand coming and going (still at the chin, inside the redrawn region) go with it. Measured on the three videos in
``../shared/data/videos`` (docs/avatar.md): the Pexels clip's hand (frames ~60-245) is flagged as 52-247 and
no frame of cap12 or cap13 is (their rolling maximum is 2.4 % and 2.7 %, under ``high``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class OcclusionConfig:
    """Thresholds of the occlusion cue (fractions of the eye span)."""

    window: int = 13  # frames of rolling median (0.5 s at 25 fps)
    high: float = 0.03  # a stretch is occluded where the rolling disagreement passes this ...
    low: float = 0.018  # ... and reaches out to where it falls below this, or below ...
    level: float = 1.25  # ... this times the run's median under ``high`` (a small face's visible mouth reads near ``low``)
    margin: int = 12  # frames more on each side: a hand still touches the chin as it comes and goes (0.5 s)


def mirror_permutation() -> np.ndarray:
    """dlib's 68 points of a mirrored face, renumbered as the same points of the face itself."""
    perm = np.arange(68)
    pairs = [(range(0, 8), range(16, 8, -1)), (range(17, 22), range(26, 21, -1)), (range(31, 33), range(35, 33, -1)),
             ([36, 37, 38, 39, 40, 41], [45, 44, 43, 42, 47, 46]),
             ([48, 49, 50, 58, 59, 60, 61, 67], [54, 53, 52, 56, 55, 64, 63, 65])]
    for left, right in pairs:
        for i, j in zip(left, right):
            perm[i], perm[j] = j, i
    return perm


def mirror_disagreement(frames: np.ndarray, keep: list[int], pts: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Per kept frame: ``mirror_gap`` of frames[keep[j]] with its points and box."""
    return np.array([mirror_gap(frames[i], pts[j], boxes[j]) for j, i in enumerate(keep)], np.float32).reshape(-1)


def mirror_gap(frame: np.ndarray, points: np.ndarray, box) -> float:
    """The mean distance between the mouth's 20 points [68, 2] and the same points found in the mirrored frame
    (in the mirrored box), over the eye span."""
    import dlib

    from talkhead.face.detect import dlib_models

    _, predictor = dlib_models()
    w = frame.shape[1]
    left, top, right, bottom = box
    rect = dlib.rectangle(*(int(round(v)) for v in (w - 1 - right, top, w - 1 - left, bottom)))
    shape = predictor(np.ascontiguousarray(frame[:, ::-1]), rect)
    q = np.array([[s.x, s.y] for s in shape.parts()], np.float32)
    q[:, 0] = w - 1 - q[:, 0]
    q = q[mirror_permutation()]
    span = max(1.0, float(np.linalg.norm(points[36:42].mean(0) - points[42:48].mean(0))))
    return float(np.linalg.norm(points[48:68] - q[48:68], axis=1).mean() / span)


def occluded(disagreement: np.ndarray, keep: list[int], cfg: OcclusionConfig = OcclusionConfig()) -> np.ndarray:
    """bool per kept frame: in a stretch whose rolling disagreement passes ``high`` (grown out to ``low`` or
    the run's own level, then by ``margin``).
    Each run of consecutive frames is taken on its own: a lost face breaks the median and the stretches."""
    from scipy.ndimage import binary_dilation, label, median_filter

    keep, out = np.asarray(keep), np.zeros(len(keep), bool)
    cuts = np.flatnonzero(np.diff(keep) != 1) + 1
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(keep)]):
        roll = median_filter(disagreement[a:b], min(cfg.window, b - a), mode="reflect")
        # A small or rendered face's visible mouth can sit at ``low`` itself: then the stretch would grow
        # over the whole run, so it stops where the median comes back near the run's own level.
        calm = roll[roll <= cfg.high]  # the visible frames' level, not pulled up by the covered ones
        level = cfg.level * float(np.median(calm)) if len(calm) else cfg.low
        low = min(cfg.high, max(cfg.low, level))
        runs, _ = label(roll > low)
        hot = np.setdiff1d(np.unique(runs[roll > cfg.high]), [0])
        flags = np.isin(runs, hot)
        if cfg.margin:  # (scipy dilates until nothing changes when iterations is 0)
            flags = binary_dilation(flags, iterations=cfg.margin)
        out[a:b] = flags
    return out


def lips_outside(pts: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """bool per frame: some of the 20 lip points [N, 68, 2] lie outside a picture of ``size`` (width, height)."""
    lips, (w, h) = pts[:, 48:68], size
    return ((lips[..., 0] < 0) | (lips[..., 0] > w - 1) | (lips[..., 1] < 0) | (lips[..., 1] > h - 1)).any(1)
