"""Shared fixtures: real TTS speech, made once per test session (a second or so)."""

from __future__ import annotations

import numpy as np
import pytest

SENTENCES_PER_VOICE = 8


@pytest.fixture(scope="session")
def tts_samples():
    """{voice: [(text, Speech), ...]}: 8 generated paragraphs per voice, every voice, fixed seed."""
    from talkhead.audio.tts import VOICES, synthesize
    from talkhead.data.text import paragraph

    rng = np.random.default_rng(20240611)
    out = {}
    for voice in VOICES:
        texts = [paragraph(rng, 1 + k % 3) for k in range(SENTENCES_PER_VOICE)]
        out[voice] = [(t, synthesize(t, voice)) for t in texts]
    return out


@pytest.fixture(scope="session")
def tts_motions(tts_samples):
    """{voice: [target motion [T, 58], ...]} for ``tts_samples``, seed 0."""
    from talkhead.rig import target_motion

    return {v: [target_motion(sp.wav, sp.sample_rate, sp.phones, seed=0) for _, sp in s]
            for v, s in tts_samples.items()}
