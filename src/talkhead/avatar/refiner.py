"""A per-person pixel refiner after an avatar's engine: the drawn crop, and beside it the person's own filmed mouth
moved to the drawn mouth's shape, -> a crop nearer the real one.

The engine's decoded lower face is soft (the person's VAE keeps about what a 2 px blur keeps), and it carries the
engine's own errors. The refiner is a small two-scale convolutional net that corrects it. Beside the drawn crop it sees
a *guide*: the real crop of the bank frame the engine started from (``avatar.mouths``), moved from that frame's mouth to
the drawn one by the avatar's thin-plate warp (``avatar.flow.MouthFlow``). It learns from the avatar's own training
frames, drawn by the finished engine from the references training gave it (each frame's nearest mouth at least
``bank_exclude`` frames away), so it learns the engine's errors on mouths it did not start from, not a VAE round
trip's. On the held-out frames of ``bench avatar``'s lecturer and EDTalk pairs it lifts lower-face PSNR by 3.1
and 3.0 dB, at flicker 0.94 and 0.93x of the real video's, but the lower face comes out softer (docs/avatar.md, "A
pixel refiner after the engine"). With it the bank's detail is not added: the guide brings the person's real pixels,
and the detail added on top cost about 3 dB there.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn


class Refiner(nn.Module):
    """(drawn crop, guide - drawn crop) in [-1, 1] -> the crop, as a correction added to the drawn one."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        w = self.width = width
        self.a = nn.Sequential(nn.Conv2d(6, w, 3, padding=1), nn.SiLU(), nn.Conv2d(w, w, 3, padding=1), nn.SiLU())
        self.down = nn.Sequential(nn.Conv2d(w, 2 * w, 3, stride=2, padding=1), nn.SiLU(),
                                  nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.SiLU(),
                                  nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.SiLU())
        self.up = nn.ConvTranspose2d(2 * w, w, 4, stride=2, padding=1)
        self.b = nn.Sequential(nn.Conv2d(2 * w, w, 3, padding=1), nn.SiLU(), nn.Conv2d(w, 3, 3, padding=1))

    def forward(self, drawn: torch.Tensor, guide: torch.Tensor) -> torch.Tensor:
        a = self.a(torch.cat([drawn, guide - drawn], 1))
        return drawn + self.b(torch.cat([a, self.up(self.down(a))], 1))

    @torch.no_grad()
    def apply(self, drawn: np.ndarray, guide: np.ndarray) -> np.ndarray:
        """Crops float [B, H, W, 3] (0-255; H and W even) refined with their guides: float, not clipped."""
        out = self(as_tensor(drawn), as_tensor(guide))
        return ((out + 1) * 127.5).permute(0, 2, 3, 1).numpy()


def as_tensor(x: np.ndarray) -> torch.Tensor:
    """Crops float or uint8 [B, H, W, 3] (0-255) as the net reads them: [B, 3, H, W] in [-1, 1]."""
    return torch.from_numpy(np.ascontiguousarray(x, np.float32)).permute(0, 3, 1, 2) / 127.5 - 1


def refiner_tensors(net: Refiner) -> dict[str, torch.Tensor]:
    return {f"refiner.{k}": v.detach().clone().contiguous() for k, v in net.state_dict().items()}


def refiner_from(tensors: dict, meta: dict | None) -> Refiner | None:
    """The refiner an avatar file holds (``refiner.*`` tensors, its width in the metadata), or None; a refiner whose
    tensors are not those of its width is a ``ValueError``/``RuntimeError`` for the caller to name."""
    if not meta:
        return None
    net = Refiner(int(meta["width"]))
    net.load_state_dict({k[8:]: v.float() for k, v in tensors.items() if k.startswith("refiner.")}, strict=True)
    return net.eval()
