"""The latent denoiser: a small U-Net over the VAE's 16 x 16 x 4 face latents.

Each frame's latent is generated from noise, conditioned on the reference latent (the photo's own
crop at rest, concatenated channel-wise: the identity anchor every layer can copy from) and on the
frame's 58-channel motion (its mouth blendshapes are the visemes; head pose and eyes too), which
scales and shifts every block (FiLM) together with the timestep. It is trained as a noise-predicting
teacher on the diffusion core's cosine schedule (T = 1000) and sampled by the core's samplers, so
the 1/2/4-step students are the same network with fewer, distilled steps.

Why no audio input: in the training crops the face is a function of motion alone (the warp renderer
draws it from the motion), so an audio branch would have nothing to learn; the audio reaches the
frames through the motion model, which is where lip sync is learned.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn
from torch.nn import functional as F

MOTION_DIM = 58


@dataclass(frozen=True)
class LatentConfig:
    """Network width and the diffusion settings it is trained with."""

    latent: int = field(default=4, metadata={"help": "latent channels, as the VAE's"})
    widths: tuple[int, int, int] = field(default=(48, 96, 128), metadata={"help": "U-Net channels at 16, 8 and 4 px, e.g. 48,96,128"})
    emb: int = field(default=128, metadata={"help": "timestep and motion embedding width"})
    prediction: str = field(default="eps", metadata={"help": "what the network predicts: eps (as TempoSyncDiff) or x0",
                                                      "choices": ("eps", "x0")})
    timesteps: int = field(default=1000, metadata={"help": "diffusion steps T"})
    # Diffuse the frame's change from the reference latent, not the latent itself: what stays
    # still (most of the face) is the reference exactly, so the identity is kept by construction
    # and the network only learns what motion changes, which a few identities can teach.
    residual: bool = field(default=True, metadata={"help": "diffuse the change from the reference latent"})
    # > 0: also condition on the frame's mouth drawn at latent size (face.framing): where
    # this face's mouth is and how far it opens, which 4 training people cannot teach by example.
    geometry: int = 0
    # > 0: also condition on this many channels of context at latent size: an avatar's frame with its
    # lower face masked, encoded (what stays real around the mouth the network draws).
    context: int = 0


def timestep_embedding(t: Tensor, dim: int) -> Tensor:
    """Sinusoidal features of (possibly fractional) timesteps t [B] -> [B, dim]."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    ang = t.float()[:, None] * freqs[None]
    return torch.cat([ang.sin(), ang.cos()], dim=1)


class FiLMBlock(nn.Module):
    """conv -> norm -> (1 + scale) * h + shift from the conditioning -> SiLU -> conv, with a residual path."""

    def __init__(self, cin: int, cout: int, emb: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.norm = nn.GroupNorm(8, cout)
        self.film = nn.Linear(emb, 2 * cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)

    def forward(self, x: Tensor, emb: Tensor) -> Tensor:
        scale, shift = self.film(emb)[:, :, None, None].chunk(2, dim=1)
        h = F.silu(self.norm(self.conv1(x)) * (1 + scale) + shift)
        return self.skip(x) + self.conv2(h)


class LatentNet(nn.Module):
    """net(x_t [B, L, h, w], t [B], {"reference": [B, L, h, w], "motion": [B, 58], ...}) -> eps (or x0).

    ``geometry`` [B, G, h, w] and ``context`` [B, C, h, w] join the input when the config has them.
    """

    def __init__(self, cfg: LatentConfig = LatentConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        w1, w2, w3 = cfg.widths
        self.embed = nn.Sequential(nn.Linear(cfg.emb + MOTION_DIM, cfg.emb), nn.SiLU(), nn.Linear(cfg.emb, cfg.emb))
        self.stem = nn.Conv2d(2 * cfg.latent + cfg.geometry + cfg.context, w1, 3, padding=1)
        self.down1, self.down2 = FiLMBlock(w1, w1, cfg.emb), FiLMBlock(w1, w2, cfg.emb)
        self.mid = FiLMBlock(w2, w3, cfg.emb)
        self.up2, self.up1 = FiLMBlock(w3 + w2, w2, cfg.emb), FiLMBlock(w2 + w1, w1, cfg.emb)
        self.head = nn.Sequential(nn.GroupNorm(8, w1), nn.SiLU(), nn.Conv2d(w1, cfg.latent, 3, padding=1))
        nn.init.zeros_(self.head[-1].weight)
        nn.init.zeros_(self.head[-1].bias)

    def forward(self, x: Tensor, t: Tensor, cond: dict[str, Tensor]) -> Tensor:
        emb = self.embed(torch.cat([timestep_embedding(t, self.cfg.emb), cond["motion"]], dim=1))
        inputs = [x, cond["reference"]] + ([cond["geometry"]] if self.cfg.geometry else [])
        inputs += [cond["context"]] if self.cfg.context else []
        h1 = self.down1(self.stem(torch.cat(inputs, dim=1)), emb)                        # 16 x 16
        h2 = self.down2(F.avg_pool2d(h1, 2), emb)                                         # 8 x 8
        h3 = self.mid(F.avg_pool2d(h2, 2), emb)                                           # 4 x 4
        u2 = self.up2(torch.cat([F.interpolate(h3, scale_factor=2.0), h2], dim=1), emb)
        u1 = self.up1(torch.cat([F.interpolate(u2, scale_factor=2.0), h1], dim=1), emb)
        return self.head(u1)


def slerp(a: Tensor, b: Tensor, w: Tensor) -> Tensor:
    """Spherical interpolation of flattened latents a, b [..., D] at weights w [...] in [0, 1].

    Latents of a Gaussian prior live near a sphere; a straight line between two of them passes
    closer to the origin (a washed-out face), the arc does not. Nearly parallel pairs fall back
    to the straight line, where the two agree.
    """
    an, bn = a / a.norm(dim=-1, keepdim=True).clamp_min(1e-8), b / b.norm(dim=-1, keepdim=True).clamp_min(1e-8)
    omega = (an * bn).sum(-1).clamp(-1 + 1e-7, 1 - 1e-7).acos()[..., None]
    w = w[..., None]
    so = omega.sin()
    arc = ((1 - w) * omega).sin() / so * a + (w * omega).sin() / so * b
    return torch.where(so > 1e-4, arc, (1 - w) * a + w * b)
