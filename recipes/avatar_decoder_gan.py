#!/usr/bin/env python
# Avatar decoder sharpness with a critic (docs/avatar.md): fine-tune the decoder of cap12's avatar VAE with
# L1 + gradient + WEIGHT x hinge-GAN on 64 px patches (encoder frozen, so the latent space and the teacher stay),
# then measure its reconstruction of cap13's lower face against the real frames.
# Usage (after `talkhead bench avatar`, which makes runs/avatar-bench): python recipes/avatar_decoder_gan.py WEIGHT STEPS [OUT]
import json
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)
from talkhead.avatar.data import extract
from talkhead.avatar.file import load_avatar
from talkhead.avatar.reenact import fitted_drive
from talkhead.avatar.train import load_data
from talkhead.bench.face_metrics import laplacian_var
from talkhead.checkpoint import save_checkpoint
from talkhead.latent.train_vae import Adversary, VAEObjective
from talkhead.latent.vae import as_batch, load_vae
from talkhead.train.loop import FitConfig, fit
from talkhead.video import read_frames

weight, steps = float(sys.argv[1]), int(sys.argv[2])
work = "runs/avatar-bench/cap12.avatar.work"
d = load_data(f"{work}/data.npz", 4)
frames = np.concatenate([c["frames"] for c in d.clips])
vae = load_vae(f"{work}/vae.safetensors").train()
for p in vae.encoder.parameters():
    p.requires_grad_(False)
t = time.time()
adv = Adversary(weight) if weight > 0 else None
fit(vae, VAEObjective(frames, vae.cfg, 16, 64, adv), FitConfig(steps=steps, lr=5e-4, warmup=20, ema=0.99, ema_warmup=True), None, progress=False)
train_s = time.time() - t
if len(sys.argv) > 3:
    save_checkpoint(sys.argv[3], vae.state_dict(), {"kind": "face-vae", "vae": vae.cfg})
av = load_avatar("runs/avatar-bench/cap12.avatar"); m = av.paste > 0.5
fr = read_frames("/work/shared/data/videos/cap13_edit2.mp4")[100:400:3]
keep, motion, aff = fitted_drive(av, fr, "cap13", progress=False)
real = np.stack([extract(f, a, av.side) for f, a in zip(fr[keep], aff)])
vae.eval()
with torch.no_grad():
    rec = (vae.decode(vae.encode(as_batch(real))[0]).clamp(0, 1) * 255 + 0.5).to(torch.uint8).permute(0, 2, 3, 1).numpy()
err = ((rec.astype(float) - real) ** 2)[:, m].mean(1)
det = np.mean([laplacian_var(g.mean(-1), m) for g in rec]) / np.mean([laplacian_var(g.mean(-1), m) for g in real])
print(json.dumps({"weight": weight, "steps": steps, "train_s": round(train_s), "psnr": round(float(np.mean(10 * np.log10(255 ** 2 / err))), 2), "detail": round(float(det), 3)}))
