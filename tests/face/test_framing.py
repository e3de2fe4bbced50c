"""The mouth maps: the rig's lips drawn at latent size on the face's own landmarks, and an engine that takes them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_latent import TINY_TRAIN

from talkhead.bench.render import script_length, scripted_motion
from talkhead.face.detect import default_photo
from talkhead.face.framing import mouth_maps, reference_rig
from talkhead.latent.data import load_faces
from talkhead.latent.engine import load_engine
from talkhead.latent.net import LatentConfig
from talkhead.latent.onnx import OnnxEngine, export_onnx
from talkhead.latent.train import train_teacher
from talkhead.warp.renderer import WarpRenderer


def test_maps_open_with_the_jaw_and_follow_the_face():
    motion, marks = scripted_motion(script_length())
    rows = motion[[marks["open vowel"], marks["bilabial closure"], marks["yaw +15°"]]]
    crop = WarpRenderer(default_photo(), 128, framing=1.9).background
    maps = mouth_maps(reference_rig(crop), rows, 128, 16)
    assert maps.shape == (3, 2, 16, 16) and 0 <= maps.min() and maps.max() <= 1
    opening = maps[:, 0].sum(dim=(1, 2))
    assert opening[0] > 3 * opening[1]  # an open vowel opens the mouth, a bilabial (almost) shuts it
    ys, xs = np.nonzero(maps[1, 1].numpy() > 0.5)  # the lips sit in the lower middle of the crop
    assert 8 <= ys.mean() <= 14 and 5 <= xs.mean() <= 11
    assert not torch.equal(maps[2, 1], maps[1, 1])  # a turned head moves them


def test_an_engine_with_mouth_maps_trains_samples_and_exports(tiny_vae, tiny_faces, tmp_path):
    net = LatentConfig(widths=(16, 16, 16), emb=32, geometry=2)
    train_teacher(tiny_vae, tiny_faces, tmp_path, TINY_TRAIN, net, progress=False)
    eng = load_engine(tmp_path / "teacher.safetensors")
    assert eng.cfg.geometry == 2 and eng.net.stem.in_channels == 10
    clip = load_faces(tiny_faces, "heldout")[0]
    anchor = eng.anchor(clip["reference"])
    m = torch.from_numpy(clip["motion"][:4])
    noise = torch.zeros(4, 4, 8, 8)
    z = eng.sample(anchor["latent"], m, noise, [999, 499], eng.maps(anchor, m))
    assert z.shape == (4, 4, 8, 8) and torch.isfinite(z).all()
    export_onnx(eng, tmp_path / "onnx")
    ort = OnnxEngine(tmp_path / "onnx", eng, threads=1)
    assert torch.allclose(ort.sample(anchor["latent"], m, noise, [999, 499], eng.maps(anchor, m)), z, atol=1e-3)


def test_fine_maps_are_the_coarse_cells_split_and_name_their_detail():
    # An avatar on an 8x VAE sees a mouth 5 cells wide: its maps may draw each cell 4 x 4 finer, as channels.
    from talkhead.face.framing import CHANNELS, map_detail

    motion, marks = scripted_motion(script_length())
    rows = motion[[marks["open vowel"], marks["bilabial closure"]]]
    crop = WarpRenderer(default_photo(), 128, framing=1.9).background
    rig = reference_rig(crop)
    coarse, fine = mouth_maps(rig, rows, 128, 16), mouth_maps(rig, rows, 128, 16, fine=4)
    assert fine.shape == (2, CHANNELS * 16, 16, 16) and 0 <= fine.min() and fine.max() <= 1
    back = torch.nn.functional.avg_pool2d(torch.nn.functional.pixel_shuffle(fine, 4), 4)
    # The same shares of each cell, up to where the two drawings' edge pixels fall (a quarter of a cell's row).
    assert (back - coarse).abs().max() <= 0.3 and (back - coarse).abs().mean() < 0.01
    opening = fine[:, :16].sum(dim=(1, 2, 3))
    assert opening[0] > 3 * opening[1]
    assert map_detail(CHANNELS) == 1 and map_detail(CHANNELS * 16) == 4
    with pytest.raises(ValueError):
        map_detail(5)
