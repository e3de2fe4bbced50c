"""Sliding windows over long clips: 80 frames with a 10-frame overlap, fused with a cross-fade.

Each window is conditioned on the first frames of itself as the previous
window generated them, so it continues that motion; within a clip windows are
therefore sequential, and the batch dimension runs over clips or seeds.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def window_starts(n_frames: int, window: int = 80, overlap: int = 10) -> list[int]:
    """Start frame of each window; the last one may run past the clip (padded)."""
    hop = window - overlap
    starts = [0]
    while starts[-1] + window < n_frames:
        starts.append(starts[-1] + hop)
    return starts


def crossfade_weights(overlap: int) -> Tensor:
    """Weight of the new window over the overlap: rises from ~0 to ~1, [overlap]."""
    return (torch.arange(overlap, dtype=torch.float32) + 0.5) / overlap


WindowFn = Callable[[int, Tensor | None, Tensor], Tensor]


def run_windows(n_frames: int, window_fn: WindowFn, noise: Tensor, window: int = 80, overlap: int = 10) -> Tensor:
    """Generate a whole clip window by window: noise [B, K, W, D] -> motion [B, n_frames, D].

    ``window_fn(start, tail, noise_k)`` returns one window [B, W, D]; ``tail`` is the last
    ``overlap`` frames generated so far ([B, overlap, D]) or None for the first window.
    """
    starts = window_starts(n_frames, window, overlap)
    if noise.shape[1] < len(starts):
        raise ValueError(f"need noise for {len(starts)} windows, got {noise.shape[1]}")
    b, _, _, d = noise.shape
    out = torch.zeros(b, starts[-1] + window, d, dtype=noise.dtype, device=noise.device)
    ramp = crossfade_weights(overlap).to(noise)[None, :, None]
    for k, s in enumerate(starts):
        tail = out[:, s : s + overlap].clone() if k else None
        y = window_fn(s, tail, noise[:, k])
        if k:
            y = y.clone()
            y[:, :overlap] = (1 - ramp) * tail + ramp * y[:, :overlap]
        out[:, s : s + window] = y
    return out[:, :n_frames]
