"""``bench.evaluate.gap_r``: lip sync judged by the opening the motion draws, however it is made. The same
opening made by the jaw in one motion and by sealing lips in the other agrees by the gap, not by jawOpen."""

from __future__ import annotations

import numpy as np
import torch

from talkhead.bench.evaluate import gap_r
from talkhead.metrics import lipsync_r
from talkhead.motion.lipnet import set_opening
from talkhead.rig.spec import SPEC


def test_the_gap_sees_an_opening_made_either_way():
    u = torch.as_tensor(0.65 * np.sin(np.linspace(0, 12, 200)) - 0.35, dtype=torch.float32)  # mostly below rest
    jaw_only = torch.zeros(200, SPEC.dim)
    jaw_only[:, SPEC["jawOpen"]] = (u + 1) / 2  # the jaw alone, never sealing
    both = set_opening(torch.zeros(200, SPEC.dim), u)  # below rest the lips seal and the jaw stays shut
    a, b = jaw_only.numpy(), both.numpy()
    assert gap_r([a], [a]) > 0.999
    assert gap_r([b], [a]) > 0.85 > lipsync_r([b], [a]) + 0.05
    shuffled = b[np.random.default_rng(0).permutation(200)]
    assert abs(gap_r([shuffled], [a])) < 0.3  # the timing is what agrees
