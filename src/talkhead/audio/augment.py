"""Seeded waveform augmentation: the channels real recordings come through that TTS never has.

Each call draws a chain from one generator: level, a telephone line (300-3400 Hz band, 8 kHz,
mu-law), a room (an exponentially decaying noise tail), background noise at a random SNR. The
motion targets do not change: none of these moves speech in time.
"""

from __future__ import annotations

import numpy as np

from talkhead.config import SAMPLE_RATE


def telephone(wav: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Band-limit to a telephone line, resample through 8 kHz, and (half the time) mu-law at 8 bits."""
    from scipy.signal import butter, resample_poly, sosfilt

    sos = butter(4, [300, 3400], btype="bandpass", fs=SAMPLE_RATE, output="sos")
    x = resample_poly(sosfilt(sos, wav), 1, 2)
    if rng.random() < 0.5:
        peak = max(float(np.abs(x).max()), 1e-6)
        mu = 255.0
        y = np.sign(x / peak) * np.log1p(mu * np.abs(x / peak)) / np.log1p(mu)
        y = np.round(y * 127) / 127
        x = peak * np.sign(y) * ((1 + mu) ** np.abs(y) - 1) / mu
    return resample_poly(x, 2, 1)[: len(wav)]


def room(wav: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Convolve with a synthetic room response: a direct path and a noise tail with RT60 0.15-0.7 s."""
    from scipy.signal import fftconvolve

    rt60 = rng.uniform(0.15, 0.7)
    n = int(rt60 * SAMPLE_RATE)
    t = np.arange(n) / SAMPLE_RATE
    ir = rng.standard_normal(n) * np.exp(-6.9 * t / rt60) * rng.uniform(0.05, 0.3)
    ir[0] = 1.0
    out = fftconvolve(wav, ir)[: len(wav)]
    return out * (np.abs(wav).max() / max(np.abs(out).max(), 1e-6))


def noise(wav: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Add white or brown-ish noise at an SNR of 5-30 dB."""
    n = rng.standard_normal(len(wav))
    if rng.random() < 0.5:  # a 1/f^2 tilt, like hum and traffic more than hiss
        n = np.cumsum(n)
        n -= np.convolve(n, np.ones(401) / 401, mode="same")
    power = float(np.mean(wav**2)) + 1e-10
    snr = rng.uniform(5, 30)
    return wav + n * np.sqrt(power / (10 ** (snr / 10)) / (float(np.mean(n**2)) + 1e-12))


def augment(wav: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random chain of channel effects on mono 16 kHz float audio; same length, float32, within [-1, 1]."""
    x = np.asarray(wav, np.float64)
    if rng.random() < 0.3:
        x = room(x, rng)
    if rng.random() < 0.5:
        x = telephone(x, rng)
    if rng.random() < 0.6:
        x = noise(x, rng)
    x = x * 10 ** (rng.uniform(-18, 0) / 20) / max(float(np.abs(x).max()), 1e-6)
    return np.clip(x, -1, 1).astype(np.float32)
