"""The shipped latent engines on the built-in photo (a training face): lips re-detected on their frames open
wider for an open vowel than for a bilabial, though less than on the warp renderer's frames (44-52 % of
its difference: the measured shortfall); the person is kept; the files fit the size budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from talkhead.bench.render import script_length, scripted_motion
from talkhead.face.detect import default_photo
from talkhead.face.identity import identity_distance, lip_gap
from talkhead.latent.engine import LATENT_DIR, load_engine
from talkhead.latent.renderer import CROP_FRAMING
from talkhead.warp.renderer import WarpRenderer

ENGINES = ["latent-teacher", "latent-student-4", "latent-student-2", "latent-student-1"]


def test_shipped_engines_fit_the_budget():
    sizes = {p.stem: p.stat().st_size for p in LATENT_DIR.glob("*.safetensors")}
    assert set(ENGINES) <= set(sizes) and sum(sizes.values()) <= 25e6


@pytest.fixture(scope="module")
def poses():
    motion, marks = scripted_motion(script_length())
    rows = motion[[marks["open vowel"], marks["bilabial closure"], marks["neutral"]]]
    crops = WarpRenderer(default_photo(), 128, framing=CROP_FRAMING)
    return rows, crops.background, crops(rows)


@pytest.mark.parametrize("name", ENGINES)
def test_lips_open_and_close_as_on_the_warp_renderer(name, poses):
    rows, reference, warp = poses
    eng = load_engine(name)
    anchor = eng.anchor(reference)
    ref, m = anchor["latent"], torch.from_numpy(rows)
    noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(0)).expand(len(rows), -1, -1, -1)
    z = eng.sample(ref, m, noise, geometry=eng.maps(anchor, m))
    frames = eng.decode(z)
    gap = [lip_gap(f) for f in frames]
    warp_gap = [lip_gap(f) for f in warp]
    assert None not in gap
    assert gap[0] > gap[1] + 0.35 * (warp_gap[0] - warp_gap[1])  # measured 0.44-0.52 of the warp frames' difference
    assert identity_distance(reference, frames)["distance"] < 0.6  # still the same person (dlib: < 0.6)
    assert np.isfinite(frames.astype(float)).all()
