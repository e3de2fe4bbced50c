"""Moving pixels of one mouth to another mouth's shape, in an avatar's aligned crop.

A bank frame's detail (what the VAE loses of the real crop: lip edges, teeth, skin) was filmed with that frame's
mouth. Added as it is to a drawn frame whose mouth is shaped otherwise, its edges land where the bank frame's lips
were, and averaging it over frames (to keep it from flickering) smears edges of different shapes into each other.
``MouthFlow`` moves an image from one motion's mouth to another's by a thin-plate warp through the points of the
avatar's rig (fitted to its first face in the crop) moved by each motion: the points speech does not move stay put,
and so does the crop's border. ``AvatarRenderer(flow=True)`` moves the detail with it, ``move_start=True`` the bank
latent the bridge starts from (``warp_latent``; with ``move_pixels`` its crop, encoded again); ``start_memory`` and
``carry`` steady the moved start. All are off by default: they make the lips follow the motion better (speech-driven,
on all four bench avatars) but the mouth shimmers past the flicker target (docs/avatar.md, 2026-12-06).
``AvatarRenderer(mouth="filmed")`` moves the chosen bank frame's real crop itself, and ``mouth="lips"`` puts it on the
engine's lower face within ``lips_mask``.

The warp is solved on a coarse grid (every ``step`` pixels) and spread bilinearly to every pixel: a thin-plate
spline is smooth, and solving it at every pixel of a 256 px crop costs more than the engine's own step.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from talkhead.avatar.data import grown, maps_motion
from talkhead.face.template import fit_rig, project
from talkhead.warp.renderer import border_points, tps_eval, tps_solve

# The points the warp is solved through: all 68 but the inner lips, which meet when the mouth closes (two points at
# one place sent to two places could fold the warp; the outer lips carry the opening too). Measured, it did not help:
# the lecturer's lips 0.854 through all 68, 0.829 without (docs/avatar.md); the bench's figures are without.
KEEP = list(range(60))


class MouthFlow:
    """Warps [B, S, S, C] images from one motion's mouth to another's, on the avatar's crop rig."""

    def __init__(self, crop_points: np.ndarray, side: int, step: int = 4) -> None:
        self.rig, self.side = fit_rig(crop_points), side
        self.anchors = torch.from_numpy(border_points(0, 0, side - 1, side - 1, 6).astype(np.float32))
        n = (side + step - 1) // step + 1
        axis = torch.linspace(0, side - 1, n)
        yy, xx = torch.meshgrid(axis, axis, indexing="ij")
        self.coarse, self.n = torch.stack([xx.reshape(-1), yy.reshape(-1)], 1), n

    def points(self, motion: np.ndarray) -> torch.Tensor:
        """The rig's points ``KEEP`` [T, P, 2] in crop pixels for motion [T, 58] (pose taken out, as the crop does)."""
        return project(self.rig, torch.from_numpy(maps_motion(motion).astype(np.float32)))[:, KEEP]

    def _where(self, src: torch.Tensor, dst: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
        """Where each of the pixels ``at`` [M, 2] of the mouth at ``dst`` [B, P, 2] reads from at ``src``: [B, M, 2]."""
        anchors = self.anchors.expand(len(src), -1, -1)
        targets, sources = torch.cat([dst, anchors], 1), torch.cat([src, anchors], 1)
        return tps_eval(tps_solve(targets, sources), targets, at)

    def warp(self, images: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """``images`` [B, S, S, C] drawn with the mouth at points ``src`` [B, P, 2], moved to ``dst`` [B, P, 2]."""
        b = len(images)
        where = self._where(src, dst, self.coarse).reshape(b, self.n, self.n, 2).permute(0, 3, 1, 2)
        where = F.interpolate(where, size=(self.side, self.side), mode="bilinear", align_corners=True)
        grid = (where.permute(0, 2, 3, 1) / (self.side - 1)) * 2 - 1
        out = F.grid_sample(images.permute(0, 3, 1, 2), grid, mode="bicubic", padding_mode="border", align_corners=True)
        return out.permute(0, 2, 3, 1)

    def warp_latent(self, z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        """Latents ``z`` [B, L, g, g] of crops with the mouth at ``src``, moved to ``dst`` (each cell read at its
        centre's crop pixel, bilinearly: a cell is several pixels wide)."""
        g = z.shape[-1]
        centre = (torch.arange(g, dtype=torch.float32) + 0.5) * self.side / g - 0.5
        yy, xx = torch.meshgrid(centre, centre, indexing="ij")
        where = self._where(src, dst, torch.stack([xx.reshape(-1), yy.reshape(-1)], 1))
        cells = (where + 0.5) * g / self.side - 0.5
        grid = (cells / (g - 1) * 2 - 1).reshape(len(z), g, g, 2)
        return F.grid_sample(z, grid, mode="bilinear", padding_mode="border", align_corners=True)


def lips_mask(points: np.ndarray, side: int) -> np.ndarray:
    """Where the filmed lips go, float [B, S, S] in [0, 1]: each mouth's outer lips (rig points 48-59 of ``points``
    [B, P, 2], crop pixels) filled, grown by side / 43 px (3 at 128 px) and feathered by side / 64 (2 px): the lips'
    edges, which say how far the mouth is open, and not the cheeks and chin, which the engine draws steadier."""
    from PIL import Image, ImageDraw, ImageFilter

    grow, blur = max(1, round(side / 43)), side / 64
    out = np.empty((len(points), side, side), np.float32)
    for k, p in enumerate(points):
        img = Image.new("L", (side, side), 0)
        ImageDraw.Draw(img).polygon([tuple(q) for q in p[48:60].tolist()], fill=255)
        img = Image.fromarray(grown(np.asarray(img), grow)).filter(ImageFilter.GaussianBlur(blur))
        out[k] = np.asarray(img, np.float32) / 255
    return out
