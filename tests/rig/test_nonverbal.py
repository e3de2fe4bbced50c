"""Non-verbal motion: seeded, plausible blinks, a head that follows the voice, brows on stress."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.audio.tts import SAMPLE_RATE, synthesize
from talkhead.config import FPS
from talkhead.motion.data.text import paragraph
from talkhead.rig import n_frames, target_motion
from talkhead.rig.nonverbal import blinks, brow_raises, frame_energy_pitch, head_pose, nonverbal_motion
from talkhead.rig.spec import SPEC
from talkhead.rig.visemes import stress_of

BLINK = SPEC["eyeBlinkLeft"]


@pytest.fixture(scope="module")
def speech_then_silence():
    """~10 s of real TTS speech followed by as much digital silence."""
    sp = synthesize(paragraph(np.random.default_rng(7), 4), "us-male")
    wav = np.concatenate([sp.wav, np.zeros_like(sp.wav)])
    return sp, wav


def _runs(on: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of each run of True."""
    edges = np.diff(np.concatenate([[0], on.astype(np.int8), [0]]))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return list(zip(starts, stops - starts))


def test_same_seed_same_motion_other_seed_other_blinks_and_pose(tts_samples) -> None:
    _, sp = tts_samples["gb-female"][2]
    a = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=11)
    b = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=11)
    c = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=12)
    assert np.array_equal(a, b)
    assert np.array_equal(a, target_motion(sp.wav, sp.sample_rate, sp.phones, seed=np.random.default_rng(11)))
    assert not np.array_equal(a[:, BLINK], c[:, BLINK])
    assert np.abs(a[:, SPEC.pose] - c[:, SPEC.pose]).max() > 1e-3
    # The lips are the audio's: the seed does not touch them.
    assert np.array_equal(a[:, SPEC.mouth], c[:, SPEC.mouth])


def test_blinks_are_short_and_at_a_plausible_rate() -> None:
    n = 60 * FPS  # one minute
    for seed in range(5):
        curve = blinks(n, np.random.default_rng(seed))
        assert curve.min() >= 0 and curve.max() <= 1
        runs = [(s, k) for s, k in _runs(curve > 0.1) if s + k < n]  # a blink cut off at the end aside
        assert 5 <= len(runs) <= 40, (seed, len(runs))
        for s, k in runs:
            assert 0.15 <= k / FPS <= 0.25, (seed, s, k)  # 150-250 ms each
            assert curve[s : s + k].max() > 0.8  # and the lid really closes
        gaps = np.diff([s for s, _ in runs]) / FPS
        assert gaps.min() >= 0.8  # never a flutter of blinks


def test_both_eyes_blink_together(tts_samples) -> None:
    _, sp = tts_samples["us-male"][0]
    m = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=3)
    assert np.array_equal(m[:, BLINK], m[:, SPEC["eyeBlinkRight"]])


def test_head_moves_more_while_speaking_than_in_silence(speech_then_silence) -> None:
    sp, wav = speech_then_silence
    n = n_frames(len(wav), SAMPLE_RATE)
    k = int(sp.duration * FPS)
    energy, _ = frame_energy_pitch(wav, SAMPLE_RATE, n)
    assert energy[: k - 5].mean() > 0.4 and energy[k + 5 :].max() < 0.01
    for seed in range(4):
        m = nonverbal_motion(wav, SAMPLE_RATE, [], n, np.random.default_rng(seed))
        vel = np.diff(m[:, SPEC.pose][:, :3], axis=0)  # pitch, yaw, roll per frame
        talking = vel[25 : k - 25].std(0).mean()  # a second away from the switch: smoothing spans it
        quiet = vel[k + 25 : -5].std(0).mean()
        assert talking > 2 * quiet, (seed, talking, quiet)
        assert quiet > 0  # idle sway, not a frozen head
        assert np.abs(m[:, SPEC.pose]).max() < 0.3


def test_head_pose_is_smooth(speech_then_silence) -> None:
    sp, wav = speech_then_silence
    n = n_frames(len(wav), SAMPLE_RATE)
    energy, pitch = frame_energy_pitch(wav, SAMPLE_RATE, n)
    pose = head_pose(energy, pitch, np.random.default_rng(0))
    assert pose.shape == (n, 6)
    acc = np.abs(np.diff(pose[:, :3], n=2, axis=0)).max()
    assert acc < 0.01  # radians/frame^2: no jerks


def test_brows_rise_only_near_stressed_syllables(tts_samples, tts_motions) -> None:
    raised = 0
    for voice, samples in tts_samples.items():
        for (text, sp), m in zip(samples, tts_motions[voice]):
            brow = m[:, SPEC["browInnerUp"]]
            t = np.arange(len(m)) / FPS
            spans = np.array([(p.start, p.end) for p in sp.phones if stress_of(p.phone) == 1]).reshape(-1, 2)
            up = brow > 0.02
            raised += int(up.any())
            if not up.any():
                continue
            assert len(spans), text
            # Raised only within half a second of a stressed syllable ...
            dist = np.maximum(spans[None, :, 0] - t[up, None], t[up, None] - spans[None, :, 1]).clip(0).min(1)
            assert dist.max() < 0.5, (voice, text)
            # ... and every raise peaks on one.
            peaks = [i for i in range(1, len(brow) - 1) if brow[i] > 0.05 and brow[i - 1] <= brow[i] > brow[i + 1]]
            centres = spans.mean(1)
            for i in peaks:
                assert np.abs(t[i] - centres).min() <= 0.05, (voice, text, t[i])
            assert brow.max() <= 0.45 + 1e-6
    assert raised > 48  # most clips have some


def test_no_stress_no_brows() -> None:
    assert not brow_raises([], 200, np.random.default_rng(0)).any()
    # Every stressed syllable can raise the brows; their peaks sit on the syllables.
    from talkhead.rig.nonverbal import NonverbalConfig

    cfg = NonverbalConfig(brow_prob=1.0)
    curve = brow_raises([(1.0, 1.2), (3.0, 3.1)], 5 * FPS, np.random.default_rng(0), cfg)
    peaks = [i for i in range(1, len(curve) - 1) if curve[i] >= curve[i - 1] and curve[i] > curve[i + 1]]
    assert [round(p / FPS, 1) for p in peaks] == [1.1, 3.0]
