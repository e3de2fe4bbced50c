"""``avatar train``'s VAE stages: the person's face VAE, and its decoder optionally sharpened by a critic."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.config import AvatarTrainConfig, vae_widths
from talkhead.avatar.data import AvatarData


def train_vae(work: Path, d: AvatarData, cfg: AvatarTrainConfig, progress: bool) -> Path:
    """A face VAE for the person's crops, from scratch: ``work/vae.safetensors``."""
    from talkhead.latent.vae import FaceVAE, VAEConfig

    vcfg = VAEConfig(size=d.side, widths=vae_widths(d.side, cfg), latent=cfg.vae_latent)
    torch.manual_seed(cfg.seed)
    return fit_vae(work / "vae.safetensors", FaceVAE(vcfg), d, cfg, cfg.vae_steps, cfg.vae_lr, 0.999, None, progress)


def sharpen_decoder(work: Path, d: AvatarData, cfg: AvatarTrainConfig, progress: bool) -> Path:
    """The VAE's decoder fine-tuned with a critic (``latent.train_vae.Adversary``); the encoder, so the latent space
    and the teacher trained on it, stay as they are. On cap13 the lower face's detail goes from 0.16 of the
    real frames' to 0.96, its reconstruction PSNR from 32.6 to 28.6 dB (recipes/avatar_decoder_gan.py)."""
    from talkhead.latent.train_vae import Adversary
    from talkhead.latent.vae import load_vae

    vae = load_vae(work / "vae.safetensors").train()
    for p in vae.encoder.parameters():
        p.requires_grad_(False)
    # The last weights, not an average: an EMA of the critic's decoder is as soft as the plain VAE (cap13's
    # lower face: detail 0.156 with an EMA of 0.99, 0.317 without, pasted into the frame and cropped again).
    return fit_vae(work / "decoder.safetensors", vae, d, cfg, cfg.critic_steps, cfg.critic_lr, 0.0,
                    Adversary(cfg.critic, seed=cfg.seed), progress)


def fit_vae(path: Path, vae: torch.nn.Module, d: AvatarData, cfg: AvatarTrainConfig, steps: int, lr: float,
             ema: float, adversary, progress: bool) -> Path:
    """One VAE stage on the person's crops, resumable, written to ``path`` (its state beside it)."""
    from talkhead.checkpoint import save_checkpoint
    from talkhead.latent.train_vae import VAEObjective
    from talkhead.train.loop import FitConfig, fit

    frames = np.concatenate([c["frames"] for c in d.clips])
    fit_cfg = FitConfig(steps=steps, lr=lr, warmup=min(100, steps // 10), ema=ema, ema_warmup=True, seed=cfg.seed,
                        ckpt_every=max(1, min(250, steps // 4)))
    t0 = time.time()

    def save(step: int, loss: float, avg: torch.nn.Module) -> None:
        save_checkpoint(path, avg.state_dict(), {"kind": "face-vae", "vae": vae.cfg, "train": {
            "frames": len(frames), "step": step, "steps": steps, "wall_s": round(time.time() - t0, 1)}})

    state = path.with_name(path.stem + ".state.pt")
    fit(vae, VAEObjective(frames, vae.cfg, cfg.vae_batch, cfg.vae_patch, adversary), fit_cfg, state,
        on_checkpoint=save, resume=state.exists(), desc=f"avatar {path.stem}", progress=progress)
    return path
