"""Issue 48, item 1: where a drawn mouth's shape comes from. One trained avatar (``bash recipes/avatar.sh`` or
``recipes/avatar_variant.py`` made it) re-enacts its pair's held-out video sampled several ways, measured as
``talkhead bench avatar`` measures it: DDIM 20 from noise (the conditioning alone), and the bridge from the bank's
mouth noised to t0 (800 ships) in 2 steps, with the bank played forward (jump 10, as shipped) or always the nearest
mouth (jump 0).
Usage: python recipes/avatar_bridge_sweep.py WORK PAIR [FRAMES]   (one JSON line per way; FRAMES: the first N only)
  python recipes/avatar_bridge_sweep.py runs/avatar-bench andrew
"""

import json
import sys
from pathlib import Path

from talkhead.avatar.file import load_avatar
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, _redraw, face_metrics
from talkhead.diffusion.schedule import NoiseSchedule

work, name = Path(sys.argv[1]), sys.argv[2]
cfg = AvatarBenchConfig()
avatar = load_avatar(work / f"{name}.avatar")
h = _held_out(avatar, _pair_videos(name, cfg, work)[1])
n = int(sys.argv[3]) if len(sys.argv) > 3 else len(h["real"])
h = {k: (v[:n] if hasattr(v, "__len__") and len(v) == len(h["real"]) else v) for k, v in h.items()}
real = _crops(h["real"], h["affine"], avatar.side)
eng, shipped = avatar.engine, avatar.bank["jump"]
ways = [("DDIM 20 from noise", False, list(NoiseSchedule(1000).timesteps(20)), shipped)]
ways += [(f"bridge from t0 {t0}, jump {jump:g}", True, [t0, t0 // 2], jump)
         for t0, jump in ((400, shipped), (600, shipped), (800, shipped), (600, 0.0), (800, 0.0))]
for label, bridge, steps, jump in ways:
    eng.bridge, eng.timesteps, avatar.bank["jump"] = bridge, steps, jump
    drawn, _ = _redraw(avatar, h, cfg.seed)
    row = face_metrics(_crops(drawn, h["affine"], avatar.side), real, h["paste"])
    print(json.dumps({"avatar": str(work / name), "frames": n, "way": label, **row}), flush=True)
