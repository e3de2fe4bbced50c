"""Issue 48: the bank's detail moved to the drawn mouth (``AvatarRenderer(flow=True)``, docs/avatar.md). One trained
avatar (``bash recipes/avatar.sh`` made it) re-enacts its pair's held-out video as shipped, then with the detail moved
at each detail memory and gain given (``:still``: the detail not moved, only its gain and memory changed; ``:still:K``:
the detail of the K bank mouths nearest the drawn one, blended: ``AvatarRenderer(detail_blend=K)``; ``:still:K:R``:
that detail faded where the drawn mouth is far from the bank's, ``detail_reach=R``), measured as ``talkhead bench
avatar`` measures it. One JSON line per way, with how far the held-out mouths are from the bank's (``reach_ratio``:
the nearest bank key's distance over the bank keys' spread, median and 90th percentile). PAIR@NAME: the avatar
WORK/NAME.avatar re-enacts PAIR's held-out video (an avatar learnt from part of PAIR's training video).
Usage: python recipes/avatar_flow_sweep.py WORK PAIR [FRAMES] [MEMORY:GAIN[:still[:K[:R]]] ...]  (FRAMES 0: all)
  python recipes/avatar_flow_sweep.py runs/avatar-bench andrew 0 0.7:1.2 0.7:1.3 0.6:1.3 0.8:1.5
  python recipes/avatar_flow_sweep.py runs/avatar-bench andrew 0 0.7:2:still 0.7:3:still 0.85:3:still
  python recipes/avatar_flow_sweep.py runs/avatar-bench andrew 0 0.3:1:still:4 0.5:1.2:still:4
"""

import json
import sys
from pathlib import Path

import numpy as np

from talkhead.avatar.file import load_avatar
from talkhead.avatar.mouths import beyond
from talkhead.avatar.renderer import AvatarRenderer
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, _redraw, face_metrics

work, (name, _, own) = Path(sys.argv[1]), sys.argv[2].partition("@")
n = int(sys.argv[3]) if len(sys.argv) > 3 else 0
cfg = AvatarBenchConfig()
avatar = load_avatar(work / f"{own or name}.avatar")
h = _held_out(avatar, _pair_videos(name, cfg, work)[1])
if n:
    h = {k: (v[:n] if hasattr(v, "__len__") and len(v) == len(h["real"]) else v) for k, v in h.items()}
real = _crops(h["real"], h["affine"], avatar.side)
ways = [("shipped", {})]
for arg in sys.argv[4:]:
    memory, gain, *rest = arg.split(":")
    moved, blend = "still" not in rest, int(rest[1]) if len(rest) > 1 else 1
    reach = float(rest[2]) if len(rest) > 2 else None
    ways.append((f"{'moved' if moved else 'not moved'}, memory {float(memory):g} gain {float(gain):g}"
                 + (f", blend {blend}" if blend > 1 else "") + (f", reach {reach:g}" if reach else ""),
                 {"flow": moved, "detail": float(memory), "detail_gain": float(gain), "detail_blend": blend,
                  "detail_reach": reach}))
r = AvatarRenderer(avatar)
ratio = beyond(r.keys(h["motion"]), r.bank.keys)
for label, drawing in ways:
    drawn, ms = _redraw(avatar, h, cfg.seed, **drawing)
    row = face_metrics(_crops(drawn, h["affine"], avatar.side), real, h["paste"])
    print(json.dumps({"pair": sys.argv[2], "frames": len(real), "way": label, "ms_per_frame": round(ms, 1), **row,
                      "reach_ratio": [round(float(v), 3) for v in np.percentile(ratio, [50, 90])]}), flush=True)
