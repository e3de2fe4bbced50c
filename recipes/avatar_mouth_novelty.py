"""Issue 48: how far a held-out take's mouths are from the avatar's mouth bank, beside its lips (2026-12-07).

For each trained avatar of ``talkhead bench avatar`` (``--work``, default runs/avatar-bench), the held-out video's
fitted mouths are compared with the bank's (``avatar.mouths.novelty``, in percent of the crop's side): each frame's
distance to its nearest bank mouth (median, 90th percentile), the same with the take's mean mouth moved onto the
bank's (what a shift of the whole take leaves), that shift, and the spread of each. The bench writes the first three
as ``mouth_novelty_pct``; this also reads avatars trained before it did. One JSON line per pair.
Usage: python recipes/avatar_mouth_novelty.py WORK PAIR[,PAIR...]
  python recipes/avatar_mouth_novelty.py runs/avatar-bench andrew,edtalk,cap12,pexels,feifei,reagan,noem
"""

import json
import sys
from pathlib import Path

import numpy as np

from talkhead.avatar.file import load_avatar
from talkhead.avatar.mouths import lip_points, novelty
from talkhead.bench.avatar import AvatarBenchConfig, _held_out, _pair_videos

work, cfg = Path(sys.argv[1]), AvatarBenchConfig()
for name in sys.argv[2].split(","):
    avatar = load_avatar(work / f"{name}.avatar")
    held = _held_out(avatar, _pair_videos(name, cfg, work)[1])
    bank, take = (lip_points(avatar.crop_points, m, avatar.side).reshape(len(m), 40)
                  for m in (avatar.bank["motion"], held["motion"]))
    near, matched = novelty(take, bank)
    print(json.dumps({"pair": name, "bank_frames": len(bank), "held_out_frames": len(take),
                      "nearest_median": round(float(np.median(near)), 2),
                      "nearest_p90": round(float(np.percentile(near, 90)), 2),
                      "nearest_median_means_met": round(float(np.median(matched)), 2),
                      "shift_rms": round(float(np.sqrt(((take.mean(0) - bank.mean(0)) ** 2).mean())), 2),
                      "spread_bank": round(float(bank.std(0).mean()), 2),
                      "spread_held_out": round(float(take.std(0).mean()), 2)}), flush=True)
