"""Training the face VAE (``talkhead latent vae``) on the project's one loop (``train.loop.fit``).

L1 on pixels plus L1 on image gradients (edges: no pretrained perceptual network ships) plus a small
KL term; photometric and mirror augmentation, so that a handful of identities do not teach the VAE
their colours.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.checkpoint import save_checkpoint
from talkhead.errors import InputError
from talkhead.latent.vae import FaceVAE, VAEConfig, as_batch, load_vae
from talkhead.metrics import psnr_db


def vae_loss(recon: Tensor, x: Tensor, mean: Tensor, logvar: Tensor, cfg: VAEConfig) -> Tensor:
    """L1 + ``gradient`` x L1 of horizontal and vertical differences + ``kl`` x KL(q || N(0, I)) per element."""
    l1 = (recon - x).abs().mean()
    grad = sum(((recon.diff(dim=d) - x.diff(dim=d)).abs().mean() for d in (2, 3)), torch.zeros(()))
    kl = 0.5 * (mean.pow(2) + logvar.exp() - 1 - logvar).mean()
    return l1 + cfg.gradient * grad + cfg.kl * kl


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


class PatchCritic(nn.Module):
    """A small convolutional critic: images [B, 3, S, S] in [0, 1] -> realness logits [B, 1, S/8, S/8]."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        sn = nn.utils.parametrizations.spectral_norm  # keeps the critic smooth, so one step per VAE step is stable
        layers: list[nn.Module] = []
        for a, b in ((3, width), (width, 2 * width), (2 * width, 4 * width)):
            layers += [sn(nn.Conv2d(a, b, 4, stride=2, padding=1)), nn.LeakyReLU(0.2)]
        self.net = nn.Sequential(*layers, sn(nn.Conv2d(4 * width, 1, 3, padding=1)))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x * 2 - 1)


class Adversary:
    """The hinge GAN term of a VAE's loss: owns its critic and the critic's optimiser (state for resume).

    L1 and gradient losses average over what the decoder cannot know (skin grain, stubble, the sheen
    of teeth), which reads as blur; a critic that tells real patches from decoded ones asks for
    texture of the right statistics instead. Used to fine-tune a decoder (``decoder_only``).
    """

    def __init__(self, weight: float, lr: float = 2e-4, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.weight, self.critic = weight, PatchCritic()
        self.opt = torch.optim.Adam(self.critic.parameters(), lr=lr, betas=(0.5, 0.9))

    def __call__(self, recon: Tensor, x: Tensor) -> Tensor:
        """One critic step on this batch, then the generator's term (``weight`` x -critic(recon))."""
        self.opt.zero_grad(set_to_none=True)
        d = torch.relu(1 - self.critic(x)).mean() + torch.relu(1 + self.critic(recon.detach())).mean()
        d.backward()
        self.opt.step()
        for p in self.critic.parameters():  # the generator's backward must not touch the critic
            p.requires_grad_(False)
        g = -self.critic(recon).mean()
        for p in self.critic.parameters():
            p.requires_grad_(True)
        return self.weight * g

    def state_dict(self) -> dict:
        return {"critic": self.critic.state_dict(), "opt": self.opt.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.critic.load_state_dict(state["critic"])
        self.opt.load_state_dict(state["opt"])


class VAEObjective:
    """Random crops from the training identities; the loss of one batch (``train.loop.Objective``)."""

    def __init__(self, frames: np.ndarray, cfg: VAEConfig, batch: int, patch: int = 0,
                 adversary: Adversary | None = None) -> None:
        # ``patch`` > 0: train on random square patches of that side (the network is convolutional, so
        # it learns the same local code at a fraction of the cost per step).
        self.frames, self.cfg, self.batch, self.patch, self.adversary = frames, cfg, batch, patch, adversary

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        idx = torch.randint(0, len(self.frames), (self.batch,), generator=gen).numpy()
        x = as_batch(self.frames[idx])
        if self.patch and self.patch < x.shape[-1]:
            down = 2 ** len(self.cfg.widths)  # patches on the latent grid, as the whole crop is cut
            n = (x.shape[-1] - self.patch) // down + 1
            oy, ox = (torch.randint(0, n, (2,), generator=gen) * down).tolist()
            x = x[:, :, oy:oy + self.patch, ox:ox + self.patch]
        if self.cfg.augment:
            x = augment(x, gen)
        recon, mean, logvar = module(x, gen)
        loss = vae_loss(recon, x, mean, logvar, self.cfg)
        return loss if self.adversary is None else loss + self.adversary(recon, x)

    def state_dict(self) -> dict | None:
        return None if self.adversary is None else self.adversary.state_dict()

    def load_state_dict(self, state: dict) -> None:
        if self.adversary is not None:
            self.adversary.load_state_dict(state)


@torch.no_grad()
def psnr(vae: FaceVAE, frames: np.ndarray, batch: int = 64) -> float:
    """Mean PSNR (dB) of the VAE's reconstruction (its mean latent decoded) over ``frames`` uint8 [N, S, S, 3]."""
    vae.eval()
    vals = []
    for i in range(0, len(frames), batch):
        x = as_batch(frames[i:i + batch])
        mse = (vae.decode(vae.encode(x)[0]) - x).pow(2).mean(dim=(1, 2, 3))
        vals += psnr_db(mse.cpu().numpy(), peak=1.0).tolist()
    return float(np.mean(vals))


def _frames(faces: str | Path, split: str, size: int) -> np.ndarray:
    from talkhead.latent.data import load_faces

    clips = load_faces(faces, split)
    if not clips:
        raise InputError(f"{faces} has no {split} face crops")
    frames = np.concatenate([c["frames"] for c in clips])
    if frames.shape[1] != size:
        raise InputError(f"the crops in {faces} are {frames.shape[1]} px; the VAE takes {size}")
    return frames


@dataclass(frozen=True)
class VAETrainConfig:
    """The VAE's optimisation (its network and loss weights: ``VAEConfig``)."""

    steps: int = 2000
    batch: int = 16
    lr: float = 2e-3
    seed: int = 0


_VT = VAETrainConfig()


def train_vae(faces: str | Path, out: str | Path, cfg: VAEConfig = VAEConfig(), steps: int = _VT.steps,
              batch: int = _VT.batch, lr: float = _VT.lr, seed: int = _VT.seed, resume: bool = False,
              progress: bool = True) -> dict:
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


