"""Issue 48: is the person's engine short of training? Each pair's avatar (``talkhead bench avatar`` trained it in
runs/avatar-bench) trained again from its own ingest and VAE, the denoiser's three stages (teacher, mouth bank,
bridge) at FACTOR times their default steps, and both re-enacting the held-out video as ``bench avatar`` measures them
(the shipped drawing; lower-face PSNR, detail, flicker and lip r against the real frames). One JSON line a pair and
count; docs/avatar.md, "Longer training".

    python recipes/avatar_steps.py runs/steps2x 2 andrew,edtalk,pexels >> docs/bench/avatar-people/steps.jsonl
"""

import json
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

from talkhead.avatar.file import load_avatar
from talkhead.avatar.train import train_avatar
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, _redraw, face_metrics

WORK = Path("runs/avatar-bench")
out, factor = Path(sys.argv[1]), float(sys.argv[2])
cfg = AvatarBenchConfig()
longer = replace(cfg.train, teacher_steps=int(cfg.train.teacher_steps * factor),
                 bank_steps=int(cfg.train.bank_steps * factor), bridge_steps=int(cfg.train.bridge_steps * factor))
out.mkdir(parents=True, exist_ok=True)
for name in sys.argv[3].split(","):
    src, dst = WORK / f"{name}.avatar.work", out / f"{name}.avatar.work"
    if not dst.exists():  # the same crops, motion and VAE: only the denoiser's stages are trained again
        dst.mkdir()
        for f in src.iterdir():
            if f.is_file() and not f.name.startswith(("teacher", "student", "decoder")):
                shutil.copy2(f, dst / f.name)
    videos, held = _pair_videos(name, cfg, WORK)
    t0 = time.time()
    train_avatar(videos, out / f"{name}.avatar", longer, progress=False)
    took = round(time.time() - t0)
    for label, path in (("1x", WORK / f"{name}.avatar"), (f"{factor:g}x", out / f"{name}.avatar")):
        avatar = load_avatar(path)
        h = _held_out(avatar, held)
        drawn, ms = _redraw(avatar, h, cfg.seed)
        row = face_metrics(_crops(drawn, h["affine"], avatar.side), _crops(h["real"], h["affine"], avatar.side),
                           h["paste"])
        print(json.dumps({"pair": name, "steps": label, "train_s": None if label == "1x" else took,
                          **{k: v for k, v in row.items() if not isinstance(v, (list, dict))}}), flush=True)
