"""Issue 48: what the avatar's VAE alone keeps of a held-out video's lower face (its round trip, pasted as the
avatar pastes), for VAE variants trained on the same crops. The avatars' engines can draw no better lips than
this. ``blur:S``: the real lower face blurred by a Gaussian of S px instead, for scale.
Usage: python recipes/avatar_vae_ceiling.py PAIR [LATENT:DOWN | blur:S ...]   e.g. andrew 4:8 16:8 4:4 blur:1
Uses runs/avatar-bench (bash recipes/avatar.sh) for the ingested data; VAEs go to runs/avatar-vae/PAIR-L-D.
"""

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.file import load_avatar
from talkhead.avatar.train import load_data
from talkhead.avatar.vae_stage import train_vae
from talkhead.bench.avatar import AvatarBenchConfig, _crops, _held_out, _pair_videos, face_metrics
from talkhead.latent.vae import load_vae

name, variants = sys.argv[1], sys.argv[2:] or ["4:8", "16:8"]
cfg, src = AvatarBenchConfig(), Path("runs/avatar-bench")
avatar = load_avatar(src / f"{name}.avatar")
h = _held_out(avatar, _pair_videos(name, cfg, src)[1])
real = _crops(h["real"], h["affine"], avatar.side)
d = load_data(src / f"{name}.avatar.work" / "data.npz", avatar.engine.vae.down, cfg.train.data)
def blurred(crops: np.ndarray, sigma: float) -> np.ndarray:
    from PIL import Image, ImageFilter

    return np.stack([np.asarray(Image.fromarray(c).filter(ImageFilter.GaussianBlur(sigma))) for c in crops])


for v in variants:
    paste = h["paste"][..., None]
    if v.startswith("blur:"):  # the real lower face only blurred: how much softness alone costs the lip measure
        mix = (real * (1 - paste) + blurred(real, float(v[5:])) * paste).round().astype(np.uint8)
        print(json.dumps({"pair": name, "blur_px": float(v[5:]), **face_metrics(mix, real, h["paste"])}), flush=True)
        continue
    latent, down = (int(x) for x in v.split(":"))
    work = Path(f"runs/avatar-vae/{name}-{latent}-{down}")
    tcfg = replace(cfg.train, vae_latent=latent, vae_4x_up_to=avatar.side if down == 4 else 0)
    own = avatar.engine.vae
    if (own.cfg.latent, own.down) == (latent, down):  # the avatar's own VAE (the same recipe would retrain it)
        vae = own
    else:
        if not (work / "vae.safetensors").exists():
            work.mkdir(parents=True, exist_ok=True)
            train_vae(work, d, tcfg, progress=False)
        vae = load_vae(work / "vae.safetensors").eval()
    assert vae.down == down and vae.cfg.latent == latent, (vae.down, vae.cfg.latent)
    with torch.no_grad():
        rec = np.concatenate([vae.decode(vae.encode(torch.from_numpy(real[i:i + 32]).permute(0, 3, 1, 2).float() / 255)[0])
                              .clamp(0, 1).mul(255).permute(0, 2, 3, 1).numpy() for i in range(0, len(real), 32)])
    mix = (real * (1 - paste) + rec * paste).round().astype(np.uint8)
    print(json.dumps({"pair": name, "latent": latent, "down": down, "side": avatar.side,
                      **face_metrics(mix, real, h["paste"])}), flush=True)
