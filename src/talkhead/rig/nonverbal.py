"""Seeded non-verbal motion: blinks, head pose that follows the voice, brow raises.

Lips are (almost) determined by the audio; none of this is. That is the
multimodality the diffusion model has to learn, and why its sampling
diversity is measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from talkhead.config import FPS
from talkhead.rig.spec import SPEC


def gaussian_filter1d(x: np.ndarray, sigma: float) -> np.ndarray:
    """scipy's Gaussian smoothing, imported when first used: scipy.ndimage costs 0.25 s of every start-up."""
    from scipy.ndimage import gaussian_filter1d as smooth

    return smooth(x, sigma)


_BLINK_PROFILE = np.array([0.45, 1.0, 0.95, 0.55, 0.15], np.float32)  # ~200 ms, ~150 ms closed-ish


@dataclass(frozen=True)
class NonverbalConfig:
    """Amplitudes and rates of the idle and speech-driven motion."""

    blink_mean_s: float = 3.2
    blink_min_s: float = 0.9
    head_idle_rad: float = 0.025
    head_speech_rad: float = 0.09
    head_smooth_s: float = 0.35
    translate_scale: float = 0.012
    brow_prob: float = 0.6
    brow_amp: float = 0.45


def frame_energy_pitch(wav: np.ndarray, sample_rate: int, n_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame loudness and pitch, both scaled to [0, 1]: [T], [T]."""
    hop = sample_rate // FPS
    pad = np.zeros(n_frames * hop, np.float32)
    pad[: min(len(wav), len(pad))] = wav[: len(pad)]
    frames = pad.reshape(n_frames, hop)
    rms = np.sqrt((frames**2).mean(1) + 1e-10)
    db = 20 * np.log10(rms)
    energy = np.clip((db + 50) / 35, 0, 1)
    # Autocorrelation pitch, 70-400 Hz; only where the frame is voiced enough to trust it.
    spec = np.fft.rfft(frames - frames.mean(1, keepdims=True), n=2 * hop, axis=1)
    ac = np.fft.irfft(np.abs(spec) ** 2, axis=1)[:, :hop]
    lo, hi = sample_rate // 400, min(sample_rate // 70, hop - 1)
    lag = lo + ac[:, lo:hi].argmax(1)
    voiced = ac[np.arange(n_frames), lag] > 0.3 * ac[:, 0]
    f0 = np.where(voiced & (energy > 0.2), sample_rate / lag, 0.0)
    pitch = np.where(f0 > 0, np.clip((np.log2(np.maximum(f0, 1)) - np.log2(80)) / 2.3, 0, 1), 0.0)
    return energy.astype(np.float32), gaussian_filter1d(pitch, 1.5).astype(np.float32)


def blinks(n_frames: int, rng: np.random.Generator, cfg: NonverbalConfig = NonverbalConfig()) -> np.ndarray:
    """Blink curve in [0, 1], [T]: random intervals, a short closing profile each."""
    out = np.zeros(n_frames, np.float32)
    t = rng.uniform(0.2, cfg.blink_mean_s) * FPS
    while t < n_frames:
        i = int(t)
        seg = _BLINK_PROFILE[: n_frames - i]
        out[i : i + len(seg)] = np.maximum(out[i : i + len(seg)], seg * rng.uniform(0.85, 1.0))
        t += (cfg.blink_min_s + rng.gamma(2.0, (cfg.blink_mean_s - cfg.blink_min_s) / 2.0)) * FPS
    return out


def head_pose(energy: np.ndarray, pitch: np.ndarray, rng: np.random.Generator,
              cfg: NonverbalConfig = NonverbalConfig()) -> np.ndarray:
    """Smooth head drift that moves more with louder, higher speech: [T, 6]."""
    n = len(energy)
    sigma = cfg.head_smooth_s * FPS
    drive = gaussian_filter1d(0.6 * energy + 0.4 * pitch, sigma)
    amp = cfg.head_idle_rad + cfg.head_speech_rad * drive
    pose = np.zeros((n, 6), np.float32)
    for k, weight in enumerate((1.0, 1.2, 0.5)):  # pitch, yaw, roll
        slow = gaussian_filter1d(rng.standard_normal(n + 60), sigma * 2.5)[30 : 30 + n]
        slow /= slow.std() + 1e-6
        fast = gaussian_filter1d(rng.standard_normal(n + 20), sigma * 0.6)[10 : 10 + n]
        fast /= fast.std() + 1e-6
        pose[:, k] = weight * (cfg.head_idle_rad * slow + amp * 0.6 * fast * drive / max(drive.max(), 1e-3))
    # Nods: the head dips a little on rising pitch accents.
    pose[:, 0] += 0.04 * gaussian_filter1d(np.diff(pitch, prepend=pitch[:1]).clip(0), 2.0)
    pose[:, 3:5] = cfg.translate_scale * pose[:, 1:3][:, ::-1] / max(cfg.head_idle_rad + cfg.head_speech_rad, 1e-6)
    pose[:, 5] = 0.5 * cfg.translate_scale * gaussian_filter1d(rng.standard_normal(n), sigma * 3)
    return pose


def brow_raises(stressed: list[tuple[float, float]], n_frames: int, rng: np.random.Generator,
                cfg: NonverbalConfig = NonverbalConfig()) -> np.ndarray:
    """Brow raise curve [T] in [0, 1]: a smooth bump on some stressed syllables."""
    out = np.zeros(n_frames, np.float32)
    t = np.arange(n_frames) / FPS
    for start, end in stressed:
        if rng.random() < cfg.brow_prob:
            centre, width = 0.5 * (start + end), max(end - start, 0.08) + 0.12
            out = np.maximum(out, cfg.brow_amp * rng.uniform(0.5, 1.0) * np.exp(-0.5 * ((t - centre) / (0.5 * width)) ** 2))
    return out


def nonverbal_motion(wav: np.ndarray, sample_rate: int, stressed: list[tuple[float, float]], n_frames: int,
                     rng: np.random.Generator, cfg: NonverbalConfig = NonverbalConfig()) -> np.ndarray:
    """Blinks, head pose and brows as a [T, 58] motion (mouth channels zero)."""
    energy, pitch = frame_energy_pitch(wav, sample_rate, n_frames)
    m = np.zeros((n_frames, SPEC.dim), np.float32)
    blink = blinks(n_frames, rng, cfg)
    m[:, SPEC["eyeBlinkLeft"]] = blink
    m[:, SPEC["eyeBlinkRight"]] = blink
    brow = brow_raises(stressed, n_frames, rng, cfg)
    m[:, SPEC["browInnerUp"]] = brow
    m[:, SPEC["browOuterUpLeft"]] = 0.8 * brow
    m[:, SPEC["browOuterUpRight"]] = 0.8 * brow
    m[:, SPEC.pose] = head_pose(energy, pitch, rng, cfg)
    return m
