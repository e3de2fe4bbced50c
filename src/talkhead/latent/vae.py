"""The face VAE of the latent engine: 128 px crops <-> 16 x 16 x 4 latents (8x down, as TempoSyncDiff's).

KL-regularised; trained in ``latent.train_vae`` (L1 on pixels plus L1 on image gradients) by the project's
one training loop. A checkpoint describes itself: ``load_vae(path)`` rebuilds the network from its
metadata.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.checkpoint import dataclass_from, described, load_checkpoint, with_weights
from talkhead.errors import InputError


@dataclass(frozen=True)
class VAEConfig:
    """Network size and loss weights."""

    size: int = field(default=128, metadata={"help": "crop side the crops were made at, px"})
    widths: tuple[int, ...] = field(default=(32, 64, 96), metadata={"help": "channels of each stride-2 stage, e.g. 32,64,96 (multiples of 8)"})
    latent: int = field(default=4, metadata={"help": "latent channels"})
    kl: float = field(default=1e-05, metadata={"help": "weight of the KL term"})
    gradient: float = field(default=1.0, metadata={"help": "weight of the L1 on image gradients"})
    # The decoder's last 2x is a pixel shuffle from the previous stage: no convolution at full size,
    # which makes decoding 2.3x faster on a CPU (20 -> 8.6 ms per 128 px frame on one core).
    shuffle: bool = field(default=True, metadata={"help": "decode the last 2x by a pixel shuffle"})
    # Photometric and mirror augmentation of the training crops: with a handful of identities the
    # VAE otherwise learns their colours and lighting and fails on a new face (17.0 dB held out
    # without it, in recipes/latent.sh's first run).
    augment: bool = field(default=True, metadata={"help": "photometric and mirror augmentation of the crops"})


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

    @property
    def down(self) -> int:
        """Pixels per latent cell along a side."""
        return 2 ** len(self.cfg.widths)

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        mean, logvar = self.encoder(x * 2 - 1).chunk(2, dim=1)
        return mean, logvar.clamp(-20, 10)

    def decode(self, z: Tensor, norms: Tensor | None = None) -> Tensor:
        """Latents -> images in [0, 1]. ``norms`` [B, K, G, 2]: the decoder's K group norms use these means
        and variances (``norm_stats`` of another latent) instead of their input's own: a part of a latent
        then decodes as it would inside the whole one (a group norm otherwise sees only that part)."""
        if norms is None:
            return torch.sigmoid(self.decoder(z))
        return torch.sigmoid(self._decode_leaves(z, norms=norms))

    def norm_stats(self, z: Tensor) -> Tensor:
        """The means and variances [B, K, G, 2] that the decoder's group norms see decoding ``z``."""
        seen: list[Tensor] = []
        self._decode_leaves(z, seen=seen)
        return torch.stack(seen, 1)

    def _decode_leaves(self, z: Tensor, norms: Tensor | None = None, seen: list[Tensor] | None = None) -> Tensor:
        x, k = z, 0
        for m in self.decoder.modules():
            if list(m.children()):  # a container: its layers come next, in order (all are Sequential)
                continue
            if not isinstance(m, nn.GroupNorm):
                x = m(x)
                continue
            g = x.reshape(x.shape[0], m.num_groups, -1)
            stats = norms[:, k] if norms is not None else torch.stack([g.mean(-1), g.var(-1, unbiased=False)], -1)
            if seen is not None:
                seen.append(stats)
            # sqrt and division, not rsqrt: correctly rounded, so a frame decodes alike in any batch
            g = (g - stats[..., :1]) / torch.sqrt(stats[..., 1:] + m.eps)
            x = g.reshape_as(x) * m.weight[:, None, None] + m.bias[:, None, None]
            k += 1
        return x

    def forward(self, x: Tensor, generator: torch.Generator | None = None) -> tuple[Tensor, Tensor, Tensor]:
        mean, logvar = self.encode(x)
        z = mean + (0.5 * logvar).exp() * torch.randn(mean.shape, generator=generator).to(mean)
        return self.decode(z), mean, logvar


def as_batch(frames: np.ndarray) -> Tensor:
    """uint8 [B, S, S, 3] -> float [B, 3, S, S] in [0, 1]."""
    return torch.from_numpy(np.ascontiguousarray(frames)).permute(0, 3, 1, 2).float() / 255.0


def load_vae(path: str | Path) -> FaceVAE:
    tensors, meta = load_checkpoint(path)
    if meta.get("kind") != "face-vae":
        raise InputError(f"{path} is not a face VAE checkpoint")
    with described(path, "face VAE"):
        cfg = dataclass_from(VAEConfig, meta["vae"])
        vae = with_weights(lambda: FaceVAE(cfg), tensors, str(path))
    return vae.eval()
