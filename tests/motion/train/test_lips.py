"""``LipsConfig.smooth``: the captured real motion that ``distill lips`` learns from, smoothed over frames within
each stretch of seen lips, on a corpus made by ``data talking`` from the astronaut drawn speaking. Smoothing
takes out frame-to-frame energy (the capture's landmark jitter) and keeps the motion's course, a constant stays
constant, unseen frames are neither changed nor leak into seen ones, and 0 is the motion as captured."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from talkhead.metrics import pearson
from talkhead.motion.data.talking import clip_arrays
from talkhead.motion.train.lips import LipsConfig, finetune_lips, real_clips, smooth_seen
from talkhead.rig.spec import SPEC


@pytest.fixture(scope="module")
def corpus(talking_corpus):
    return talking_corpus


def _energy(m: torch.Tensor) -> float:
    return float(m[:, SPEC.mouth].diff(dim=0).pow(2).sum())


def test_smoothing_takes_out_jitter_and_keeps_the_lips(corpus):
    from talkhead.motion.model import load

    model = load("student-1-whisper")
    raw, masks = real_clips(corpus, model, ())
    row = json.loads((corpus / "manifest.jsonl").read_text().splitlines()[0])
    captured = clip_arrays(corpus, row)["motion"]
    assert np.array_equal(raw.motion[0].numpy(), captured[: len(raw.motion[0])])  # 0: as captured, as before
    smooth, _ = real_clips(corpus, model, (), smooth=1.0)
    m0, m1 = raw.motion[0], smooth.motion[0]
    assert m1.shape == m0.shape and m1.dtype == m0.dtype and bool(masks[0].all())
    assert _energy(m1) < 0.6 * _energy(m0), (_energy(m1), _energy(m0))
    jaw = SPEC["jawOpen"]
    assert pearson(m1[:, jaw].numpy(), m0[:, jaw].numpy()) > 0.9  # the lips' course is kept
    assert abs(float(m1[:, SPEC.mouth].mean() - m0[:, SPEC.mouth].mean())) < 0.01
    assert _energy(smooth_seen(m0, masks[0], 2.0)) < _energy(m1)  # wider is smoother


def test_unseen_frames_stay_and_do_not_leak(corpus):
    row = json.loads((corpus / "manifest.jsonl").read_text().splitlines()[0])
    m = torch.from_numpy(clip_arrays(corpus, row)["motion"])
    seen = torch.ones(len(m), dtype=torch.bool)
    seen[40:50] = False
    out = smooth_seen(m, seen, 1.5)
    assert torch.equal(out[40:50], m[40:50])
    wild = m.clone()
    wild[40:50] = 100.0  # whatever the unseen frames hold, the seen ones come out the same
    assert torch.allclose(smooth_seen(wild, seen, 1.5)[seen], out[seen])
    assert not torch.allclose(out[seen], m[seen])
    flat = torch.full((30, SPEC.dim), 0.25)
    assert torch.allclose(smooth_seen(flat, seen[:30], 3.0), flat)
    assert smooth_seen(m, seen, 0.0) is m


def test_a_run_records_smoothing_and_the_jaw_hold(corpus, tmp_path):
    from talkhead.motion.model import load

    out = tmp_path / "lips.safetensors"
    cfg = LipsConfig(iters=3, batch=4, points=0.0, augmented=0, smooth=1.0, jaw=1.0)
    report = finetune_lips("student-1-whisper", corpus, out, cfg, progress=False)
    assert report["steps"] == 3 and np.isfinite(report["final_loss"])
    got = load(out).meta["lips"]["config"]
    assert (got["smooth"], got["jaw"]) == (1.0, 1.0)
