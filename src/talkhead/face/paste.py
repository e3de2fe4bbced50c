"""Pixel work around drawing a crop into a frame: pasting it through its mask, the latent window that covers
the mask, the ring where a drawing's colour is checked, and the forward-and-back loop over base frames."""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from talkhead.face.affine import apply, invert

WINDOW_MARGIN = 2  # latent cells decoded around the paste mask


def paste_lower_face(frame: np.ndarray, crop: np.ndarray, affine: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``frame`` with ``crop`` warped in through ``affine`` (crop -> frame pixels), weighted by ``mask`` [S, S]."""
    h, w = frame.shape[:2]
    s = crop.shape[0]
    rows, cols = np.nonzero(mask.any(1))[0], np.nonzero(mask.any(0))[0]
    if not len(rows):
        return frame.copy()
    # Only where the warped mask can be above 0: its box a crop pixel wider each way (bilinear reads a pixel's
    # neighbours), about half the crop's; the pixels outside would come out as the frame's, to the bit.
    a, b = np.array([cols[0] - 1, rows[0] - 1], np.float64), np.array([cols[-1] + 2, rows[-1] + 2], np.float64)
    corners = apply(affine, np.array([a, [b[0], a[1]], [a[0], b[1]], b]))
    x0, y0 = np.clip(np.floor(corners.min(0)).astype(int), 0, [w, h])
    x1, y1 = np.clip(np.ceil(corners.max(0)).astype(int), 0, [w, h])
    out = frame.copy()
    if x1 <= x0 or y1 <= y0:
        return out
    ys, xs = np.mgrid[y0:y1, x0:x1]
    q = apply(invert(affine), np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5], 1)) / s * 2 - 1
    grid = torch.from_numpy(q.astype(np.float32)).reshape(1, y1 - y0, x1 - x0, 2)
    src = torch.from_numpy(np.concatenate([crop.astype(np.float32), mask[..., None] * 255], 2)).permute(2, 0, 1)[None]
    warped = F.grid_sample(src, grid, mode="bilinear", padding_mode="zeros", align_corners=False)[0]
    m = warped[3] / 255
    region = torch.from_numpy(frame[y0:y1, x0:x1].astype(np.float32)).permute(2, 0, 1)
    blend = region + m * (warped[:3] - region)
    out[y0:y1, x0:x1] = blend.round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).numpy()
    return out


def decode_window(paste: np.ndarray, down: int, margin: int = WINDOW_MARGIN) -> tuple[int, int, int, int]:
    """Latent rows and columns (r0, r1, c0, c1) that cover the paste mask, ``margin`` cells wider: decoding
    only these is what drawing needs. (With its own group-norm statistics a window decodes at 34-38 dB
    against the whole crop on the bench's avatars; with the bank frame's whole-crop statistics at 42 dB,
    with the crop's own whole statistics at 64 dB: the rest is the window's border.)"""
    ys, xs = np.nonzero(paste > 0)
    g = paste.shape[0] // down
    return (max(0, ys.min() // down - margin), min(g, ys.max() // down + 1 + margin),
            max(0, xs.min() // down - margin), min(g, xs.max() // down + 1 + margin))


def colour_ring(hidden: np.ndarray, window: tuple[int, int, int, int], down: int) -> np.ndarray:
    """Where each drawn crop's colour is checked, bool [B, S, S]: the decoded ``window`` less the frame's
    hidden region [B, S, S] grown by a pixel. The network sees the real frame there (the context), so what its
    decoding is off by there is an error of the whole drawing. An avatar learnt from one session and drawn
    on another (cap12 -> cap13, other light) drew the lower face 4-6 levels too bright."""
    from scipy.ndimage import binary_dilation

    r0, r1, c0, c1 = window
    ring = np.zeros_like(hidden)
    ring[:, r0 * down:r1 * down, c0 * down:c1 * down] = True
    return ring & ~binary_dilation(hidden, _CROSS)


_CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)[None]  # scipy's default: 4-neighbours, within a frame


def pingpong(i: np.ndarray, n: int) -> np.ndarray:
    """Frame indices looping 0..n-1 forward and back: 0 1 2 1 0 1 2 ... (no jump at the turn)."""
    if n <= 1:
        return np.zeros_like(i)
    j = i % (2 * n - 2)
    return np.where(j < n, j, 2 * n - 2 - j)
