"""Issue 48: which bank frame the keys find, judged by its filmed lips (landmarks only, nothing drawn).

For each held-out frame of a bench pair, the bank frame that ``MouthBank`` chooses (jump 0) by the keys' weights
(``mouths.mouth_keys``: the inner lips' opening ``gap`` times, the mouth's centre ``place`` times), and the r of that
bank frame's filmed inner-lip gap (dlib's points of the training frame) with the held-out frame's own: what a bank
mouth brings to the frame before any engine or warp. Also the r of the rig's gap of the held-out frame's fitted
motion (what a geometry that follows the motion exactly would give). The avatars are those of ``bash
recipes/avatar.sh`` (their work folders keep each training frame's points in ``data.npz``). One JSON line a pair.
Usage: python recipes/avatar_bank_keys.py WORK PAIR[,PAIR...] [GAP:PLACE ...]
  python recipes/avatar_bank_keys.py runs/avatar-bench andrew,edtalk,cap12,feifei,reagan,noem,pexels 0:4.4721 2:2 2:0
"""

import json
import sys
from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.data import maps_motion
from talkhead.avatar.file import load_avatar
from talkhead.avatar.mouths import MouthBank, mouth_keys
from talkhead.avatar.reenact import fitted_drive
from talkhead.bench.avatar import AvatarBenchConfig, _pair_videos
from talkhead.face.affine import apply, invert
from talkhead.face.template import fit_rig, project
from talkhead.rig.spec import SPEC
from talkhead.video import read_frames


def filmed_points(work: Path, bank_motion: np.ndarray) -> np.ndarray:
    """Each training frame's own points [N, 68, 2] in its crop: ``data.npz`` keeps them with what the fitted
    expression moves them by taken out (``avatar.data.mask_points``), which is put back here."""
    z = np.load(work / "data.npz")
    n = len([k for k in z.files if k.endswith("/points")])
    pts = np.concatenate([z[f"clip{i}/points"] for i in range(n)])
    motion = np.concatenate([z[f"clip{i}/motion"] for i in range(n)])
    if motion.shape != bank_motion.shape or not np.allclose(motion, bank_motion, atol=1e-4):
        raise SystemExit(f"{work}: the bank is not every training frame in order (cut to its budget)")
    rig, m = fit_rig(z["crop_points"]), maps_motion(motion).astype(np.float32)
    rest = m.copy()
    rest[:, SPEC.expression] = 0.0
    return pts + (project(rig, torch.from_numpy(m)) - project(rig, torch.from_numpy(rest))).numpy()


def gap(p: np.ndarray) -> np.ndarray:
    """The inner lips' opening over the eye corners' span, per frame of points [T, 68, 2]."""
    return (p[:, [65, 66, 67], 1].mean(1) - p[:, [61, 62, 63], 1].mean(1)) / np.linalg.norm(p[:, 45] - p[:, 36], axis=1)


def r(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(np.corrcoef(a, b)[0, 1]), 3)


work, cfg = Path(sys.argv[1]), AvatarBenchConfig()
weights = [tuple(map(float, w.split(":"))) for w in (sys.argv[3:] or ["0:4.4721", "2:2"])]
for name in sys.argv[2].split(","):
    a = load_avatar(work / f"{name}.avatar")
    bank = gap(filmed_points(work / f"{name}.avatar.work", a.bank["motion"]))
    video = _pair_videos(name, cfg, work)[1]
    d = fitted_drive(a, read_frames(video, 25), video.name, progress=False)
    held = gap(np.stack([apply(invert(m), p) for m, p in zip(d.affine, d.landmarks)]))
    rig = gap(project(fit_rig(a.crop_points), torch.from_numpy(maps_motion(d.motion).astype(np.float32))).numpy())
    row = {"pair": name, "frames": len(held), "rig_gap_of_the_motion": r(held, rig)}
    for g, p in weights:
        found = MouthBank(mouth_keys(a.crop_points, a.bank["motion"], a.side, g, p), jump=0.0).choose(
            mouth_keys(a.crop_points, d.motion, a.side, g, p))
        row[f"found_gap_r gap {g:g} place {p:g}"] = r(held, bank[found])
    print(json.dumps(row), flush=True)
