"""Issue 48, item 1: the person's filmed mouth, in pixels, moved to the drawn mouth, with no engine at all.

Each frame's lower face is the real crop of a bank frame (its latent decoded and its detail added back: the person's
own pixels at their own sharpness), moved by the avatar's thin-plate warp (``MouthFlow``) from that frame's mouth to
the one the motion asks, its colour matched to the frame it is drawn on. The bank frames are chosen as the shipped
avatar chooses its start (``MouthBank.choose``: nearest, played forward while that costs at most ``jump`` more), or
along the path of least cost over a batch (``MouthBank.path``: the mouths' distance summed, each jump costing
``jump``), and a share ``carry`` of each frame can be the frame before it moved to this frame's mouth.
Each trained avatar (``bash recipes/avatar.sh`` made them) re-enacts its held-out video as ``talkhead bench avatar``
measures it. One JSON line per avatar and way.
Usage: python recipes/avatar_filmed.py WORK PAIR[,PAIR...] [WAY|WAY...]
  python recipes/avatar_filmed.py runs/avatar-bench andrew,edtalk,cap12
"""

import json
import sys
import time
from pathlib import Path

import numpy as np

from talkhead.avatar.file import load_avatar
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, face_metrics

WAYS = {"shipped": {}, "filmed, chosen as shipped": {"mouth": "filmed"}, "lips filmed": {"mouth": "lips"},
        "lips filmed, path jump 30": {"mouth": "lips", "path": 30.0},
        "filmed, path jump 10": {"mouth": "filmed", "path": 10.0},
        "filmed, path jump 30": {"mouth": "filmed", "path": 30.0},
        "filmed, path jump 100": {"mouth": "filmed", "path": 100.0},
        "filmed, path jump 30, carry 0.5": {"mouth": "filmed", "path": 30.0, "carry": 0.5}}

work = Path(sys.argv[1])
if len(sys.argv) > 3:
    WAYS = {label: WAYS[label] for label in sys.argv[3].split("|")}
cfg = AvatarBenchConfig()
for name in sys.argv[2].split(","):
    avatar = load_avatar(work / f"{name}.avatar")
    h = _held_out(avatar, _pair_videos(name, cfg, work)[1])
    real = _crops(h["real"], h["affine"], avatar.side)
    for label, drawing in WAYS.items():
        r = AvatarRenderer(avatar, cfg.seed, frames=h["real"], affines=h["affine"], motion=h["motion"],
                           points=h["points"], **drawing)
        t = time.perf_counter()
        drawn = np.stack(list(r.frames(h["motion"])))
        ms = (time.perf_counter() - t) / len(drawn) * 1000
        row = face_metrics(_crops(drawn, h["affine"], avatar.side), real, h["paste"])
        print(json.dumps({"pair": name, "way": label, "ms_per_frame": round(ms, 1), **row}), flush=True)
