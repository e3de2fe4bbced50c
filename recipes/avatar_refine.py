"""Issue 48: the pixel refiner after an avatar's engine (``avatar.refine``), measured on a bench pair's held-out frames.

The refiner is trained on the bench's avatar as ``avatar train --refine-steps`` trains it (the engine's crops of its
training frames, each drawn from a bank frame 2 s away or more, beside that frame's real crop moved to the drawn
mouth), then the held-out video is re-enacted as ``bench avatar`` re-enacts it: as shipped, with the refiner, and the
engine alone without the bank's detail.

Usage: python recipes/avatar_refine.py PAIR [STEPS]     (pairs of runs/avatar-bench: andrew edtalk cap12 pexels)
Needs runs/avatar-bench (bash recipes/avatar.sh). Rows go to runs/avatar-refine/results.jsonl (the bench's
face_metrics on every held-out frame: lower-face PSNR, detail, flicker, lip r; ms per frame), the refiner's training
state to runs/avatar-refine/PAIR/.
"""

import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.file import load_avatar
from talkhead.avatar.refine import train_refiner, training_pairs
from talkhead.avatar.train import load_data
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, _redraw, face_metrics

torch.set_num_threads(2)
name, steps = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1200
cfg, bench, out = AvatarBenchConfig(), Path("runs/avatar-bench"), Path("runs/avatar-refine")
out.mkdir(parents=True, exist_ok=True)
avatar = load_avatar(bench / f"{name}.avatar")
S = avatar.side
cache = out / f"{name}-held.npz"  # the held-out frames' capture takes minutes: kept between runs
if not cache.exists():
    h = _held_out(avatar, _pair_videos(name, cfg, bench)[1])
    np.savez(cache, **{k: v for k, v in h.items() if isinstance(v, np.ndarray)})
h = dict(np.load(cache))
real = _crops(h["real"], h["affine"], S)
d = load_data(bench / f"{name}.avatar.work" / "data.npz", avatar.engine.vae.down, cfg.train.data)


def measure(way: str, drawn: tuple[np.ndarray, float], extra: dict | None = None) -> None:
    row = {"pair": name, "way": way, "steps": steps, "ms_per_frame": round(drawn[1], 1), **(extra or {}),
           **face_metrics(_crops(drawn[0], h["affine"], S), real, h["paste"])}
    print(json.dumps(row), flush=True)
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


t0 = time.time()
drawn, guides, crops = training_pairs(avatar, d, cfg.train.bank_exclude, cfg.seed)
work = out / name
work.mkdir(exist_ok=True)
avatar.refiner = train_refiner(drawn, guides, crops, d.paste, steps, work, cfg.seed)
train_s = round(time.time() - t0)
measure("shipped", _redraw(avatar, h, cfg.seed, refine=False))
measure("engine alone, no bank detail", _redraw(avatar, h, cfg.seed, refine=False, detail=None))
measure("refined", _redraw(avatar, h, cfg.seed), {"train_s": train_s, "train_frames": len(crops)})
