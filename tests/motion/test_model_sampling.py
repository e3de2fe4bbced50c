"""The trained model through the samplers and the sliding windows: shapes, determinism, fusion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from talkhead.audio.tts import synthesize
from talkhead.motion.model import load
from talkhead.motion.stream import Hearing, MotionConfig, MotionStream, motion_from_audio
from talkhead.motion.windows import LowLatencyRunner, RampRunner, WindowRunner, run_windows, window_starts


def test_window_starts_cover_the_clip():
    for n in (1, 79, 80, 81, 165, 1000):
        s = window_starts(n)
        assert s[0] == 0 and s[-1] + 80 >= n and all(b - a == 70 for a, b in zip(s, s[1:]))


def test_run_windows_crossfades_from_the_tail():
    # A window function that continues the tail exactly gives a seamless, exact ramp.
    def fn(start, cond, tail, noise):
        return (torch.arange(start, start + 80, dtype=torch.float32)[None, :, None]).expand(1, 80, 2)

    out = run_windows(torch.zeros(1, 300, 3), fn, torch.zeros(1, 5, 80, 2), torch.zeros(3))
    assert torch.allclose(out[0, :, 0], torch.arange(300, dtype=torch.float32))


def test_window_runner_gives_the_whole_clip_result_however_rows_arrive():
    seen = []

    def fn(start, cond, tail, noise):  # depends on the conditioning, the tail and the noise
        seen.append(start)
        base = cond.sum(-1, keepdim=True).cumsum(1) + noise
        return base if tail is None else base + tail.mean(1, keepdim=True)

    g = torch.Generator().manual_seed(0)
    for n in (1, 79, 80, 81, 150, 151, 333):
        rows, noise = torch.randn(1, n, 3, generator=g), torch.randn(1, 6, 80, 1, generator=g)
        whole = run_windows(rows, fn, noise, torch.full((3,), -1.0))
        seen.clear()
        runner, out, at = WindowRunner(fn, lambda k: noise[:, k], torch.full((3,), -1.0), 1), [], 0
        for size in [1, 7, 64, 2, 90] * 10:
            if at >= n:
                break
            out.append(runner.push(rows[:, at:at + size]))
            at += size
            assert sum(o.shape[1] for o in out) <= max(0, at - 10)  # frames wait for the next window's overlap
        out.append(runner.flush())
        assert seen == window_starts(n)
        assert torch.equal(torch.cat(out, 1), whole) and whole.shape[1] == n


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
    # Streamed in 100 ms pieces with short feature blocks, the same seed gives the same motion as
    # the same stream fed at once: chunking never changes the result (stochastic samplers included).
    for sampler in ("ddim", "ddpm"):
        cfg, short = MotionConfig(steps=4, seed=3, sampler=sampler), Hearing(block_s=1.0, context_s=0.5)
        at_once = MotionStream(model, cfg, short)
        whole = np.concatenate([*at_once.push(wav), *at_once.flush()])
        pieces = MotionStream(model, cfg, short)
        parts = [m for s in range(0, len(wav), 1600) for m in pieces.push(wav[s:s + 1600])]
        assert np.array_equal(np.concatenate([*parts, *pieces.flush()]), whole)
        assert sum(len(p) for p in parts) >= 70  # the first window came out before the end of speech


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


def test_low_latency_runner_is_chunk_independent_and_early():
    def fn(start, cond, tail, noise):
        base = cond.sum(-1, keepdim=True).cumsum(1) + noise
        return base if tail is None else base + tail.mean(1, keepdim=True)

    g = torch.Generator().manual_seed(1)
    for n in (5, 30, 157):
        rows, noise = torch.randn(1, n, 3, generator=g), torch.randn(1, 200, 80, 1, generator=g)
        outs = []
        for size in (n, 1, 3):
            runner, out = LowLatencyRunner(fn, lambda k: noise[:, k], torch.zeros(3), 1, lookahead=4, step=2), []
            for s in range(0, n, size):
                out.append(runner.push(rows[:, s:s + size]))
                # frames come out at most overlap + lookahead frames behind what has arrived
                assert sum(o.shape[1] for o in out) >= min(s + size, n) - 10 - 4 - 2
            out.append(runner.flush())
            outs.append(torch.cat(out, 1))
        assert outs[0].shape[1] == n and all(torch.equal(o, outs[0]) for o in outs)


def test_ramp_runner_starts_early_then_runs_the_offline_windows():
    """A say's ramp: the first frames after a few rows, the same frames however rows arrive, and after the
    ramp the offline windows themselves (same places, same noise), so a window function that reads only
    its conditioning and noise gives the offline frames from the end of the ramp on."""
    def fn(start, cond, tail, noise):
        base = cond.sum(-1, keepdim=True).cumsum(1) + noise
        return base if tail is None else base + tail.mean(1, keepdim=True)

    def local(start, cond, tail, noise):  # ignores the tail; a frame reads rows after it too, as a network does
        return cond.sum(-1, keepdim=True).cumsum(1) + cond.sum(-1, keepdim=True).flip(1).cumsum(1).flip(1) + noise

    g = torch.Generator().manual_seed(2)
    steps, ahead = (6, 8, 16, 40), (1, 2, 4, 10)
    for n in (12, 40, 90, 157, 333):
        rows, noise = torch.randn(1, n, 3, generator=g), torch.randn(1, 8, 80, 1, generator=g)
        tail = torch.randn(1, 10, 1, generator=g)
        outs = []
        for window_fn in (fn, local):
            for size in (n, 1, 3, 29):
                runner, out = RampRunner(window_fn, lambda k: noise[:, k], torch.zeros(3), 1, steps=steps,
                                         lookaheads=ahead), []
                runner.continue_from(tail)
                for s in range(0, n, size):
                    out.append(runner.push(rows[:, s:s + size]))
                    got, have = sum(o.shape[1] for o in out), min(s + size, n)
                    if have >= 10 + 6 + 1:  # the tail's frames, 6 new ones and 1 of look-ahead
                        assert got >= 16
                    assert got <= max(10 * (have > 0), have - 1)  # nothing before its look-ahead is in
                out.append(runner.flush())
                outs.append(torch.cat(out, 1))
        assert all(o.shape[1] == n for o in outs)
        assert all(torch.equal(o, outs[0]) for o in outs[1:4]) and all(torch.equal(o, outs[4]) for o in outs[5:])
        assert torch.equal(outs[0][:, :10], tail)  # the tail stands for the frames before the speech
        if n > 80:  # from the end of the ramp (frame 80) on: the offline frames
            offline = run_windows(rows, local, noise, torch.zeros(3))
            assert torch.equal(outs[4][:, 80:], offline[:, 80:])
            assert not torch.equal(outs[4][:, 16:80], offline[:, 16:80])  # the ramp's own windows before
    with pytest.raises(ValueError):
        RampRunner(fn, lambda k: noise[:, k], torch.zeros(3), 1, steps=(40, 40), lookaheads=(1, 1))


def test_a_say_streamed_with_a_ramp_meets_the_offline_motion(tiny_teacher):
    """Speech pushed in 40 ms pieces with a ramp: its first frames come out 10 frames after its audio, it does
    not depend on the chunking, and its jawOpen follows the offline motion of the same audio."""
    from talkhead.metrics import pearson
    from talkhead.motion.stream import Ramp
    from talkhead.rig.spec import SPEC

    model = load(tiny_teacher)
    wav = synthesize("This sentence is long enough to need several windows of motion, one after another, "
                     "so that they have to be joined without seams.", "us-male").wav
    tail, cfg = np.zeros((12, 58), np.float32), MotionConfig(steps=4, seed=3)
    offline = MotionStream(model, cfg, tail=tail)
    whole = np.concatenate([*offline.push(wav), *offline.flush()])
    ramped = Hearing(block_s=4.0, context_s=1.0, ramp=Ramp())
    ramp = MotionStream(model, cfg, ramped, tail=tail)
    parts, first = [], None
    for s in range(0, len(wav), 640):
        parts += list(ramp.push(wav[s:s + 640]))
        if first is None and parts:
            first = s // 640 + 1
    got = np.concatenate([*parts, *ramp.flush()])
    at_once = MotionStream(model, cfg, ramped, tail=tail)
    assert np.array_equal(np.concatenate([*at_once.push(wav), *at_once.flush()]), got)
    assert first == 10 and got.shape == whole.shape
    jaw = SPEC["jawOpen"]
    assert pearson(got[:, jaw], whole[:, jaw]) > 0.9
    with pytest.raises(ValueError):
        MotionStream(model, cfg, Hearing(ramp=Ramp()))  # a ramp continues from motion shown before
