"""The trained model through the samplers and the sliding windows: shapes, determinism, fusion."""

from __future__ import annotations

import numpy as np
import torch

from talkhead.audio.tts import synthesize
from talkhead.motion.model import load
from talkhead.motion.windows import run_windows, window_starts
from talkhead.pipeline import MotionConfig, motion_from_audio


def test_window_starts_cover_the_clip():
    for n in (1, 79, 80, 81, 165, 1000):
        s = window_starts(n)
        assert s[0] == 0 and s[-1] + 80 >= n and all(b - a == 70 for a, b in zip(s, s[1:]))


def test_run_windows_crossfades_from_the_tail():
    # A window function that continues the tail exactly gives a seamless, exact ramp.
    def fn(start, tail, noise):
        return (torch.arange(start, start + 80, dtype=torch.float32)[None, :, None]).expand(1, 80, 2)

    out = run_windows(300, fn, torch.zeros(1, 5, 80, 2))
    assert torch.allclose(out[0, :, 0], torch.arange(300, dtype=torch.float32))


def test_long_clip_is_deterministic_and_seed_dependent(tiny_teacher):
    model = load(tiny_teacher)
    wav = synthesize("This sentence is long enough to need several windows of motion, one after another, "
                     "so that they have to be joined without seams.", "nyc-male").wav
    a = motion_from_audio(model, wav, MotionConfig(steps=4, seed=3))
    b = motion_from_audio(model, wav, MotionConfig(steps=4, seed=3))
    c = motion_from_audio(model, wav, MotionConfig(steps=4, seed=4))
    assert a.shape == (int(np.ceil(len(wav) / 640)), 58) and len(window_starts(len(a))) >= 3
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)
    d = motion_from_audio(model, wav, MotionConfig(steps=4, seed=3, sampler="ddpm"))
    e = motion_from_audio(model, wav, MotionConfig(steps=4, seed=3, sampler="ddpm"))
    assert np.array_equal(d, e)


def test_every_sampler_runs_the_model_and_many_steps_converge(tiny_teacher):
    model = load(tiny_teacher)
    feats = model.audio_features(synthesize("Hello there.", "us-male").wav)[None]
    noise = model.init_noise(1, feats.shape[1], torch.Generator().manual_seed(0))
    for name in ("ddim", "dpmpp", "unipc", "ddpm"):
        out = model.sample(feats, noise, steps=4, sampler=name, generator=torch.Generator().manual_seed(0))
        assert out.shape == (1, feats.shape[1], 58) and torch.isfinite(out).all()
    fine = model.sample(feats, noise, steps=1000, sampler="ddim")
    half = model.sample(feats, noise, steps=250, sampler="ddim")
    coarse = model.sample(feats, noise, steps=2, sampler="ddim")
    assert (fine - half).abs().max() < 0.5 * (fine - coarse).abs().max()


def test_batch_rows_are_independent(tiny_teacher):
    model = load(tiny_teacher)
    feats = model.audio_features(synthesize("Batch me.", "us-female").wav)[None]
    noise = model.init_noise(2, feats.shape[1], torch.Generator().manual_seed(1))
    both = model.sample(feats.expand(2, -1, -1), noise, steps=3)
    one = model.sample(feats, noise[1:], steps=3)
    assert torch.allclose(both[1:], one, atol=1e-5)
