"""Issue 46: is the lip net's opening too jittery for filmed lips? The fold nets of ``lipnet_sweep.py none`` (3
members, no synthetic half; each trained once per fold of recipes/lips_folds.json), their openings smoothed over
frames by a centred Gaussian of SIGMA frames before scoring, on the fold people only, each by the fold net that never
heard them (z-scored gap, best lag within +-8 frames). docs/lips.md, "The opening smoothed over frames". Needs
corpus/talking (recipes/lipnet.sh makes it).

    python recipes/lipnet_smooth.py 0 0.5 0.75 1 1.5 2   # 7 min, 2 cores; appends to runs/lipnet-sweep/smooth.jsonl
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from lipnet_encoder import FOLDS, train
from lipnet_sweep import settings
from scipy.ndimage import gaussian_filter1d

from talkhead.motion.data.talking import lagged_r
from talkhead.motion.train.lipnet import gap_clips

torch.set_num_threads(2)
sigmas = [float(s) for s in sys.argv[1:]] or [0.0, 0.5, 1.0]
t0 = time.time()
cfg, features = settings("none")
data, _ = gap_clips("corpus/talking", (), 0, "offline", features, cfg.speeds)
people: dict[float, dict[str, list[float]]] = {s: {} for s in sigmas}
for hold in FOLDS:
    net, mean, std = train(data, tuple(hold), cfg.seed, cfg)
    with torch.no_grad():
        for i, row in enumerate(data.rows):
            if row["person"] in hold:
                z = net((data.feats[i][0][None] - mean) / std)[0].numpy().astype(np.float64)
                for s in sigmas:
                    zs = gaussian_filter1d(z, s, mode="nearest") if s > 0 else z
                    people[s].setdefault(row["person"], []).append(
                        lagged_r(data.gap[i].numpy(), zs, data.seen[i].numpy(), 8)[1])
plain = {p: float(np.mean(v)) for p, v in people[sigmas[0]].items()}
out = Path("runs/lipnet-sweep")
out.mkdir(parents=True, exist_ok=True)
for s in sigmas:
    r = {p: float(np.mean(v)) for p, v in sorted(people[s].items())}
    res = {"smooth_sigma": s, "fold_mean": round(float(np.mean(list(r.values()))), 4),
           "fold_min": round(min(r.values()), 3),
           f"better_than_sigma_{sigmas[0]:g}": sum(r[p] > plain[p] for p in r),
           "people": {p: round(v, 3) for p, v in r.items()},
           "seconds": round(time.time() - t0)}
    print(json.dumps({k: v for k, v in res.items() if k != "people"}), flush=True)
    with open(out / "smooth.jsonl", "a") as f:
        f.write(json.dumps(res) + "\n")
