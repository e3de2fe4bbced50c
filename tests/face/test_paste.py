"""Pixel work around pasting a drawn crop into its frame."""

from __future__ import annotations

import numpy as np

from talkhead.face.paste import colour_ring, decode_window, paste_lower_face, pingpong


def test_pingpong_loops_without_a_jump():
    assert pingpong(np.arange(9), 4).tolist() == [0, 1, 2, 3, 2, 1, 0, 1, 2]
    assert pingpong(np.arange(3), 1).tolist() == [0, 0, 0]


def test_decode_window_covers_the_mask_with_a_margin_and_stays_on_the_grid():
    paste = np.zeros((64, 64), np.float32)
    paste[33:47, 20:30] = 1.0  # latent cells (down 8): rows 4-5, columns 2-3
    assert decode_window(paste, 8, margin=1) == (3, 7, 1, 5)
    paste[60:, :3] = 0.5  # reaching the corner: clipped to the grid
    assert decode_window(paste, 8, margin=2) == (2, 8, 0, 6)


def test_colour_ring_is_the_window_less_the_grown_hidden_region():
    hidden = np.zeros((1, 32, 32), bool)
    hidden[0, 10:20, 10:20] = True
    ring = colour_ring(hidden, (1, 3, 1, 3), 8)  # the window: pixels 8..23
    assert ring.shape == hidden.shape and not (ring & hidden).any()
    assert not ring[0, 9, 12] and not ring[0, 20, 12]  # a pixel's growth
    assert ring[0, 8, 8] and ring[0, 23, 23] and not ring[0, 7, 12] and not ring[0, 24, 12]


def test_paste_blends_through_the_mask_and_leaves_the_rest():
    frame = np.full((40, 60, 3), 10, np.uint8)
    crop = np.full((16, 16, 3), 200, np.uint8)
    mask = np.zeros((16, 16), np.float32)
    mask[4:12, 4:12] = 1.0
    affine = np.array([[1.0, 0.0, 20.0], [0.0, 1.0, 12.0]])  # crop pixels -> frame pixels: a shift
    out = paste_lower_face(frame, crop, affine, mask)
    assert (out[18:22, 26:30] == 200).all()  # inside the mask: the crop
    assert (out[:10] == 10).all() and (out[:, :18] == 10).all()  # outside: the frame, untouched
    assert out.dtype == np.uint8 and out.shape == frame.shape
    off = np.array([[1.0, 0.0, 500.0], [0.0, 1.0, 0.0]])  # wholly outside the frame
    assert np.array_equal(paste_lower_face(frame, crop, off, mask), frame)


def test_paste_warps_only_where_the_mask_reaches_and_draws_what_a_whole_frame_warp_does():
    """A turned, scaled crop with a soft mask off its centre: the frame equals, to the bit, the crop and mask warped
    over the whole frame and blended (what pasting did before it kept to the mask's box)."""
    import torch
    from torch.nn import functional as F

    from talkhead.face.affine import apply, invert

    rng = np.random.default_rng(0)
    frame = rng.integers(0, 256, (90, 120, 3), np.uint8)
    crop = rng.integers(0, 256, (32, 32, 3), np.uint8)
    mask = np.zeros((32, 32), np.float32)
    mask[18:27, 6:20] = rng.uniform(0.01, 1.0, (9, 14))
    c, sn = 2.1 * np.cos(0.4), 2.1 * np.sin(0.4)
    affine = np.array([[c, -sn, 40.3], [sn, c, 7.6]])
    ys, xs = np.mgrid[0:90, 0:120]
    q = apply(invert(affine), np.stack([xs.ravel() + 0.5, ys.ravel() + 0.5], 1)) / 32 * 2 - 1
    src = torch.from_numpy(np.concatenate([crop.astype(np.float32), mask[..., None] * 255], 2)).permute(2, 0, 1)[None]
    warped = F.grid_sample(src, torch.from_numpy(q.astype(np.float32)).reshape(1, 90, 120, 2), mode="bilinear",
                           padding_mode="zeros", align_corners=False)[0]
    region = torch.from_numpy(frame.astype(np.float32)).permute(2, 0, 1)
    want = (region + warped[3] / 255 * (warped[:3] - region)).round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0)
    out = paste_lower_face(frame, crop, affine, mask)
    assert np.array_equal(out, want.numpy()) and not np.array_equal(out, frame)
    assert np.array_equal(paste_lower_face(frame, crop, affine, np.zeros_like(mask)), frame)
