"""The face VAE of the latent engine: 128 px crops <-> 16 x 16 x 4 latents (8x down, as TempoSyncDiff's).

KL-regularised, trained with L1 on pixels plus L1 on image gradients (edges: no pretrained perceptual
network ships), by the project's one training loop (``train.loop.fit``). A checkpoint describes
itself: ``load_vae(path)`` rebuilds the network from its metadata.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.checkpoint import dataclass_from, load_checkpoint, save_checkpoint
from talkhead.errors import InputError


@dataclass(frozen=True)
class VAEConfig:
    """Network size and loss weights."""

    size: int = 128
    widths: tuple[int, ...] = (32, 64, 96)  # one stride-2 stage each: 128 -> 16
    latent: int = 4
    kl: float = 1e-5
    gradient: float = 1.0
    # The decoder's last 2x is a pixel shuffle from the previous stage: no convolution at full size,
    # which makes decoding 2.3x faster on a CPU (20 -> 8.6 ms per 128 px frame on one core).
    shuffle: bool = True
    # Photometric and mirror augmentation of the training crops: with a handful of identities the
    # VAE otherwise learns their colours and lighting and fails on a new face (17.0 dB held out
    # without it, in recipes/latent.sh's first run).
    augment: bool = True


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())


class FaceVAE(nn.Module):
    """Images [B, 3, S, S] in [0, 1] -> (mean, log-variance) [B, L, S/8, S/8] -> images."""

    def __init__(self, cfg: VAEConfig = VAEConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        w = cfg.widths
        enc: list[nn.Module] = [nn.Conv2d(3, w[0], 3, padding=1)]
        for a, b in zip((w[0],) + w[:-1], w):
            enc += [_block(a, b), nn.Conv2d(b, b, 4, stride=2, padding=1)]
        self.encoder = nn.Sequential(*enc, _block(w[-1], w[-1]), nn.Conv2d(w[-1], 2 * cfg.latent, 1))
        dec: list[nn.Module] = [nn.Conv2d(cfg.latent, w[-1], 3, padding=1), _block(w[-1], w[-1])]
        pairs = list(zip(w[::-1], w[::-1][1:] + (w[0],)))
        for a, b in pairs[:-1] if cfg.shuffle else pairs:
            dec += [nn.Upsample(scale_factor=2, mode="nearest"), _block(a, b)]
        tail = [nn.Conv2d(w[0], 12, 3, padding=1), nn.PixelShuffle(2)] if cfg.shuffle else [nn.Conv2d(w[0], 3, 3, padding=1)]
        self.decoder = nn.Sequential(*dec, *tail)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, logvar = self.encoder(x * 2 - 1).chunk(2, dim=1)
        return mean, logvar.clamp(-20, 10)

    def decode(self, z: Tensor) -> Tensor:
        return torch.sigmoid(self.decoder(z))

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        mean, logvar = self.encode(x)
        z = mean + (0.5 * logvar).exp() * torch.randn(mean.shape, generator=generator).to(mean)
        return self.decode(z), mean, logvar


def vae_loss(recon: Tensor, x: Tensor, mean: Tensor, logvar: Tensor, cfg: VAEConfig) -> Tensor:
    """L1 + ``gradient`` x L1 of horizontal and vertical differences + ``kl`` x KL(q || N(0, I)) per element."""
    l1 = (recon - x).abs().mean()
    grad = sum(((recon.diff(dim=d) - x.diff(dim=d)).abs().mean() for d in (2, 3)), torch.zeros(()))
    kl = 0.5 * (mean.pow(2) + logvar.exp() - 1 - logvar).mean()
    return l1 + cfg.gradient * grad + cfg.kl * kl


def as_batch(frames: np.ndarray) -> Tensor:
    """uint8 [B, S, S, 3] -> float [B, 3, S, S] in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float() / 255.0


def augment(x: Tensor, gen: torch.Generator) -> Tensor:
    """Random mirror, per-channel gain, brightness, contrast, gamma and a share of greyscale: x [B, 3, S, S] in [0, 1]."""
    b = x.shape[0]

    def u(lo: float, hi: float, *shape: int) -> Tensor:
        return lo + (hi - lo) * torch.rand((b, *shape), generator=gen)

    flip = torch.rand(b, generator=gen) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    x = x * u(0.75, 1.25, 3, 1, 1) * u(0.7, 1.3, 1, 1, 1)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = (mean + (x - mean) * u(0.7, 1.3, 1, 1, 1) + u(-0.1, 0.1, 1, 1, 1)).clamp(0, 1)
    x = x ** u(0.7, 1.4, 1, 1, 1)
    grey = torch.rand(b, generator=gen) < 0.15
    return torch.where(grey[:, None, None, None], x.mean(dim=1, keepdim=True).expand_as(x), x)


class VAEObjective:
    """Random crops from the training identities; the loss of one batch (``train.loop.Objective``)."""

    def __init__(self, frames: np.ndarray, cfg: VAEConfig, batch: int) -> None:
        self.frames, self.cfg, self.batch = frames, cfg, batch

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        idx = torch.randint(0, len(self.frames), (self.batch,), generator=gen).numpy()
        x = as_batch(self.frames[idx])
        if self.cfg.augment:
            x = augment(x, gen)
        recon, mean, logvar = module(x, gen)
        return vae_loss(recon, x, mean, logvar, self.cfg)


@torch.no_grad()
def psnr(vae: FaceVAE, frames: np.ndarray, batch: int = 64) -> float:
    """Mean PSNR (dB) of the VAE's reconstruction (its mean latent decoded) over ``frames`` uint8 [N, S, S, 3]."""
    vae.eval()
    vals = []
    for i in range(0, len(frames), batch):
        x = as_batch(frames[i:i + batch])
        mse = (vae.decode(vae.encode(x)[0]) - x).pow(2).mean(dim=(1, 2, 3)).clamp_min(1e-10)
        vals += (10 * torch.log10(1 / mse)).tolist()
    return float(np.mean(vals))


def _frames(faces: str | Path, split: str, size: int) -> np.ndarray:
    from talkhead.render.latent.faces import load_faces

    clips = load_faces(faces, split)
    if not clips:
        raise InputError(f"{faces} has no {split} face crops")
    frames = np.concatenate([c["frames"] for c in clips])
    if frames.shape[1] != size:
        raise InputError(f"the crops in {faces} are {frames.shape[1]} px; the VAE takes {size}")
    return frames


def train_vae(faces: str | Path, out: str | Path, cfg: VAEConfig = VAEConfig(), steps: int = 2000, batch: int = 16,
              lr: float = 2e-3, seed: int = 0, resume: bool = False, progress: bool = True) -> dict:
    """Train on the crops' training identities; returns PSNR on train and held-out identities."""
    from talkhead.train.loop import FitConfig, fit

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "state.pt").exists() and not resume:
        raise InputError(f"{out} already holds a run; pass --resume to continue it or choose a new --out")
    train_frames = _frames(faces, "train", cfg.size)
    torch.manual_seed(seed)
    vae = FaceVAE(cfg)
    fit_cfg = FitConfig(steps=steps, lr=lr, weight_decay=0.0, warmup=min(100, steps // 10), ema=0.999,
                        ema_warmup=True, seed=seed, ckpt_every=200)
    t0 = time.time()

    def save(step: int, loss: float, avg: nn.Module) -> None:
        meta = {"kind": "face-vae", "vae": cfg, "train": {"faces": str(faces), "step": step, "steps": steps,
                "batch": batch, "lr": lr, "frames": len(train_frames), "wall_s": round(time.time() - t0, 1)}}
        save_checkpoint(out / "vae.safetensors", avg.state_dict(), meta)

    result = fit(vae, VAEObjective(train_frames, cfg, batch), fit_cfg, out / "state.pt", on_checkpoint=save,
                 resume=resume, desc="vae", progress=progress)
    avg = load_vae(out / "vae.safetensors")
    report = {"steps": result.step, "psnr_train_db": round(psnr(avg, train_frames[::7]), 2),
              "loss_first": round(float(np.mean(result.losses[:20])), 5) if result.losses else None,
              "loss_last": round(float(np.mean(result.losses[-20:])), 5) if result.losses else None}
    try:
        report["psnr_heldout_db"] = round(psnr(avg, _frames(faces, "heldout", cfg.size)[::7]), 2)
    except InputError:
        report["psnr_heldout_db"] = None  # no held-out identities in this folder
    (out / "report.json").write_text(json.dumps({**report, "config": asdict(cfg)}, indent=1))
    return report


def load_vae(path: str | Path) -> FaceVAE:
    tensors, meta = load_checkpoint(path)
    if meta.get("kind") != "face-vae":
        raise InputError(f"{path} is not a face VAE checkpoint")
    vae = FaceVAE(dataclass_from(VAEConfig, meta["vae"]))
    vae.load_state_dict(tensors)
    return vae.eval()
