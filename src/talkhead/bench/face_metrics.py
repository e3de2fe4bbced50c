"""How a drawn lower face compares with the real one, frame by frame (``talkhead bench avatar``, ``bench phone``):
PSNR, detail (the Laplacian's variance), flicker, the lip gap's r with the real lips, and PSNR by head-pose novelty."""

from __future__ import annotations

import numpy as np

from talkhead.metrics import pearson, psnr_db
from talkhead.rig.spec import SPEC


def laplacian_var(grey: np.ndarray, mask: np.ndarray) -> float:
    """Variance of the 4-neighbour Laplacian inside ``mask`` (interior pixels): how much fine detail there is."""
    g = grey.astype(np.float64)
    lap = g[1:-1, :-2] + g[1:-1, 2:] + g[:-2, 1:-1] + g[2:, 1:-1] - 4 * g[1:-1, 1:-1]
    return float(lap[mask[1:-1, 1:-1]].var())


def frame_psnr(gen: np.ndarray, real: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per frame, the PSNR (dB) of crops gen against real [T, S, S, 3] inside boolean ``masks`` [T, S, S]."""
    err = np.array([((g.astype(np.float64) - r) ** 2)[k].mean() for g, r, k in zip(gen, real, masks)])
    return psnr_db(err, floor=1e-6)


def frame_change(crops: np.ndarray, mask: np.ndarray) -> float:
    """Flicker: the mean absolute change between frames of crops [T, S, S, 3], where ``mask`` [T, S, S] (bool)
    holds in both frames."""
    steady = mask[1:] & mask[:-1]
    return float(np.abs(np.diff(crops.astype(np.float64), axis=0))[steady].mean())


def face_metrics(gen: np.ndarray, real: np.ndarray, mask: np.ndarray) -> dict:
    """Lower-face PSNR, detail ratio, flicker ratio and lip-gap r of aligned crops gen, real [T, S, S, 3]; the
    lower face is ``mask`` ([S, S] for every frame or [T, S, S], each real frame's own) over 0.5."""
    from talkhead.face.identity import lip_gap

    m = np.broadcast_to(mask > 0.5, gen.shape[:3])
    psnr = float(np.mean(frame_psnr(gen, real, m)))
    detail = (np.mean([laplacian_var(g.mean(-1), k) for g, k in zip(gen, m)])
              / np.mean([laplacian_var(r.mean(-1), k) for r, k in zip(real, m)]))
    gaps = [(lip_gap(g), lip_gap(r)) for g, r in zip(gen[::2], real[::2])]
    both = np.array([(a, b) for a, b in gaps if a is not None and b is not None])
    return {"psnr_db": round(psnr, 2), "detail_ratio": round(float(detail), 3),
            "flicker_ratio": round(frame_change(gen, m) / max(1e-9, frame_change(real, m)), 3),
            "lip_r": round(pearson(both[:, 0], both[:, 1]), 3) if len(both) > 2 else None,
            "lip_found": round(len(both) / max(1, len(gaps)), 3)}


# Bins of head pose novelty: degrees in pitch and yaw (the turns the aligned crop cannot undo; roll it does) from the
# nearest training frame's pose.
POSE_BINS = (2.0, 5.0)


def pose_novelty(train_motion: np.ndarray, motion: np.ndarray) -> np.ndarray:
    """Per frame of ``motion`` [T, 58], degrees from the nearest frame of ``train_motion`` [N, 58] in pitch and yaw."""
    from talkhead.avatar.mouths import distances

    py = [SPEC["pitch"], SPEC["yaw"]]
    return np.degrees(np.sqrt(distances(motion[:, py], train_motion[:, py]).min(1)))


def by_pose(novelty: np.ndarray, crops: dict[str, np.ndarray], real: np.ndarray, mask: np.ndarray) -> dict:
    """Lower-face PSNR of each view's crops [T, S, S, 3] in each bin of ``novelty`` (``POSE_BINS``)."""
    edges = (0.0, *POSE_BINS, np.inf)
    bins = np.digitize(novelty, POSE_BINS)
    m = np.broadcast_to(mask > 0.5, real.shape[:3])
    out = {"bins_deg": [f"{a:g}-{b:g}" for a, b in zip(edges[:-1], edges[1:])],
           "frames": [int((bins == k).sum()) for k in range(len(edges) - 1)]}
    for name, gen in crops.items():
        db = frame_psnr(gen, real, m)
        out[name] = [round(float(db[bins == k].mean()), 2) if (bins == k).any() else None for k in range(len(edges) - 1)]
    return out
