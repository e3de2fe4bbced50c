#!/usr/bin/env python
# Avatar VAE sharpness (docs/avatar.md): train a VAE on cap12's crops, measure its reconstruction of cap13's lower face.
# Usage (after `talkhead bench avatar`, which makes runs/avatar-bench): python recipes/avatar_vae_sharpness.py LATENT STEPS PATCH
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
from talkhead.latent.train_vae import VAEObjective
from talkhead.latent.vae import FaceVAE, VAEConfig, as_batch
from talkhead.train.loop import FitConfig, fit
from talkhead.video import read_frames

latent, steps, patch = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
d=load_data("runs/avatar-bench/cap12.avatar.work/data.npz", 4)
frames=np.concatenate([c["frames"] for c in d.clips])
cfg=VAEConfig(size=128, widths=(32,64), latent=latent)
torch.manual_seed(0); vae=FaceVAE(cfg)
t=time.time()
fit(vae, VAEObjective(frames, cfg, 16, patch), FitConfig(steps=steps, lr=2e-3, warmup=70, ema=0.999, ema_warmup=True), None, progress=False)
train_s=time.time()-t
av=load_avatar("runs/avatar-bench/cap12.avatar"); m=av.paste>0.5
fr=read_frames("/work/shared/data/videos/cap13_edit2.mp4")[100:400:3]
keep,motion,aff=fitted_drive(av, fr, "cap13", progress=False)
real=np.stack([extract(f,a,av.side) for f,a in zip(fr[keep],aff)])
vae.eval()
with torch.no_grad(): rec=(vae.decode(vae.encode(as_batch(real))[0]).clamp(0,1)*255+0.5).to(torch.uint8).permute(0,2,3,1).numpy()
err=((rec.astype(float)-real)**2)[:,m].mean(1)
det=np.mean([laplacian_var(g.mean(-1),m) for g in rec])/np.mean([laplacian_var(g.mean(-1),m) for g in real])
print(json.dumps({"latent":latent,"steps":steps,"patch":patch,"train_s":round(train_s),"psnr":round(float(np.mean(10*np.log10(255**2/err))),2),"detail":round(float(det),3)}))
