#!/usr/bin/env python
# The mouth bank's choices on cap12 -> cap13 (docs/avatar.md), after `talkhead bench avatar` made runs/avatar-bench:
# retrieval alone by the scaled mouth channels against the rig's lip points, then the avatar with each JUMP.
# Usage: python recipes/avatar_bank_sweep.py [JUMP,JUMP,...]   (one thread; about a minute per jump)
import json
import sys

import numpy as np
import torch

torch.set_num_threads(1)
from pathlib import Path

from talkhead.avatar.file import load_avatar
from talkhead.avatar.mouths import AS_POINTS, MOUTH, distances, mouth_keys
from talkhead.avatar.renderer import paste_lower_face
from talkhead.avatar.train import load_data
from talkhead.bench.avatar import (
    AvatarBenchConfig,
    _crops,
    _held_out,
    _pair_videos,
    _redraw,
    face_metrics,
)

work = Path("runs/avatar-bench")
av = load_avatar(work / "cap12.avatar")
d = load_data(work / "cap12.avatar.work" / "data.npz", av.engine.vae.down)
frames, bm = np.concatenate([c["frames"] for c in d.clips]), np.concatenate([c["motion"] for c in d.clips])
h = _held_out(av, _pair_videos("cap12", AvatarBenchConfig(), work)[1])
real = _crops(h["real"], h["affine"], av.side)
def measure(drawn):
    return face_metrics(_crops(drawn, h["affine"], av.side), real, av.paste)
def pasted(idx):
    return np.stack([paste_lower_face(f, frames[j], a, av.paste) for f, j, a in zip(h["real"], idx, h["affine"])])
tm = bm[:, MOUTH]
by_channels = ((((h["motion"][:, None, MOUTH] - tm[None]) / (tm.std(0) + 1e-3)) ** 2).sum(-1)).argmin(1)
by_lips = distances(*(mouth_keys(av.crop_points, m, av.side, **AS_POINTS) for m in (h["motion"], bm))).argmin(1)
rows = {"retrieval by mouth channels": measure(pasted(by_channels)), "retrieval by lip points": measure(pasted(by_lips))}
av.bank["keys"] = AS_POINTS  # as measured (2026-12-02): the bank searched by the lips' points as they are
for jump in [float(j) for j in (sys.argv[1] if len(sys.argv) > 1 else "0,2,10,20").split(",")]:
    av.bank["jump"] = jump
    rows[f"avatar, jump {jump:g}"] = measure(_redraw(av, h, 0)[0])
    print(list(rows)[-1], rows[list(rows)[-1]], flush=True)
print(json.dumps(rows, indent=1))
