"""Issue 48: the avatar's engine tuned as the bridge it is sampled by (``avatar train``'s bridge stage,
``avatar.train.bridge_teacher``: from each training frame's bank neighbour, found by the drawing's keys, noised to
t = 800, its x0 at 800 and 400 scored against the frame). Starts from a trained avatar's bank teacher (``bash
recipes/avatar.sh`` made them, before the stage existed), trains into runs/avatar-bridge/PAIR-STEPS-LR-PIXEL, then
re-enacts the pair's held-out video with the avatar's engine swapped for it, as ``talkhead bench avatar`` measures
(one JSON line; the avatar as it was trained first with --both). --move: tuned from the neighbours' latents moved to
each frame's mouth (``AvatarTrainConfig.bridge_move``, into PAIR-STEPS-LR-PIXEL-moved-latent) and drawn with the bank's
mouth moved to the drawn one (``AvatarRenderer(move_start=True)``); --move-pixels: their crops moved and encoded again
(``move_pixels=True``, into ...-moved-pixels).
Usage: python recipes/avatar_bridge_train.py WORK PAIR [STEPS [LR [PIXEL]]] [--both] [--move | --move-pixels]
  python recipes/avatar_bridge_train.py runs/avatar-bench andrew 600 --both
  python recipes/avatar_bridge_train.py runs/avatar-bench andrew 1500 5e-4 0.5 --move
"""

import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from talkhead.avatar.file import load_avatar
from talkhead.avatar.train import bridge_teacher, load_data
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, _redraw, face_metrics
from talkhead.latent.engine import load_engine
from talkhead.latent.train import LatentTrainConfig

args = [a for a in sys.argv[1:] if a not in ("--both", "--move", "--move-pixels")]
moved = "pixels" if "--move-pixels" in sys.argv else "latent" if "--move" in sys.argv else ""
work, name = Path(args[0]), args[1]
steps, lr, pixel = (int(args[2]) if len(args) > 2 else 600), (float(args[3]) if len(args) > 3 else 5e-4), \
    (float(args[4]) if len(args) > 4 else 0.5)
bench = AvatarBenchConfig()
cfg = replace(bench.train, bridge_steps=steps, bridge_lr=lr, bridge_move=moved or "off")
src, out = work / f"{name}.avatar.work", Path(f"runs/avatar-bridge/{name}-{steps}-{lr:g}-{pixel:g}"
                                              + (f"-moved-{moved}" if moved else ""))
avatar = load_avatar(work / f"{name}.avatar")
out.mkdir(parents=True, exist_ok=True)
for f in ("teacher-bank.safetensors", "latents.pt"):  # the stage starts from the first; the same crops' latents
    if not (out / f).exists():
        shutil.copy(src / f, out / f)
d = load_data(src / "data.npz", avatar.engine.vae.down, cfg.data)
tcfg = LatentTrainConfig(steps=cfg.teacher_steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed, pixel=pixel,
                         distill_steps=cfg.student_steps)  # as ``train_avatar`` makes it, the pixel term's weight aside
t0 = time.time()
tuned = bridge_teacher(out, d, cfg, tcfg, progress=False)
print(json.dumps({"pair": name, "trained_s": round(time.time() - t0, 1)}), flush=True)
h = _held_out(avatar, _pair_videos(name, bench, work)[1])
real = _crops(h["real"], h["affine"], avatar.side)
for way in (["as trained"] if "--both" in sys.argv else []) + ["bridge trained"]:
    if way == "bridge trained":
        avatar.engine.net.load_state_dict(load_engine(tuned).net.state_dict())
    drawing = {"move_start": True, "move_pixels": moved == "pixels"} if moved and way == "bridge trained" else {}
    drawn, ms = _redraw(avatar, h, bench.seed, **drawing)
    row = face_metrics(_crops(drawn, h["affine"], avatar.side), real, h["paste"])
    print(json.dumps({"pair": name, "way": way, "steps": steps, "lr": lr, "pixel": pixel, "moved": moved,
                      "ms_per_frame": round(ms, 1), **row}), flush=True)
