"""TTS: every voice speaks, phones tile the audio exactly, bad input is an InputError."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from talkhead.audio.tts import (
    CORPUS_VOICES,
    HELD_OUT_VOICES,
    SAMPLE_RATE,
    SILENCE,
    TRAIN_VOICES,
    VOICES,
    Speech,
    get_voice,
    synthesize,
)
from talkhead.config import DEFAULT_VOICE
from talkhead.errors import InputError


def _median_f0(wav: np.ndarray, sr: int = SAMPLE_RATE) -> float:
    """Median autocorrelation pitch (60-400 Hz) over loud, clearly periodic 40 ms frames."""
    hop = sr // 25
    frames = wav[: len(wav) // hop * hop].reshape(-1, hop)
    lo, hi = sr // 400, sr // 60
    f0 = []
    for x in frames:
        if np.sqrt((x**2).mean()) < 0.02:
            continue
        x = x - x.mean()
        ac = np.correlate(x, x, "full")[hop - 1 :]
        lag = lo + int(ac[lo:hi].argmax())
        if ac[lag] > 0.3 * ac[0]:
            f0.append(sr / lag)
    assert len(f0) > 10, "too few voiced frames to measure pitch"
    return float(np.median(f0))


def test_voice_table_has_enough_distinct_male_and_female_voices() -> None:
    assert len(VOICES) >= 8
    sexes = {v.sex for v in VOICES.values()}
    assert sexes == {"male", "female"}
    assert sum(v.sex == "male" for v in VOICES.values()) >= 3
    assert sum(v.sex == "female" for v in VOICES.values()) >= 3
    assert len({(v.espeak_name, v.rate, v.pitch, v.range) for v in VOICES.values()}) == len(VOICES)
    assert set(HELD_OUT_VOICES) <= set(VOICES) and set(TRAIN_VOICES).isdisjoint(HELD_OUT_VOICES)
    assert set(TRAIN_VOICES) | set(HELD_OUT_VOICES) == set(VOICES)
    assert DEFAULT_VOICE in VOICES


def test_the_teachers_voices_stay_fixed_and_extra_voices_avoid_the_held_out_ones() -> None:
    # The corpus default must not grow with the table: corpus/main's seed stays reproducible.
    assert CORPUS_VOICES == ("us-male", "us-female", "us-male-slow", "us-female-fast", "gb-male", "gb-female",
                             "rp-male-low", "us-female-high", "scot-female", *HELD_OUT_VOICES)
    extra = [VOICES[v] for v in VOICES if v not in CORPUS_VOICES]
    held = [VOICES[v] for v in HELD_OUT_VOICES]
    assert len(extra) == 8 and {v.sex for v in extra} == {"male", "female"}
    assert not {v.variant for v in extra} & {v.variant for v in held}
    assert not {v.base for v in extra} & {"en-us-nyc"}  # the held-out-only accent


@pytest.mark.parametrize("voice", list(VOICES))
def test_every_voice_phones_tile_the_audio(tts_samples, voice: str) -> None:
    samples = tts_samples[voice]
    assert len(samples) >= 8
    for text, sp in samples:
        assert isinstance(sp, Speech)
        assert sp.sample_rate == SAMPLE_RATE == 16_000
        assert sp.wav.dtype == np.float32 and sp.wav.ndim == 1
        # int16 engine output resampled: full scale, give or take the resampler's overshoot.
        assert np.isfinite(sp.wav).all() and 0.05 < np.abs(sp.wav).max() <= 1.05
        assert sp.duration == pytest.approx(len(sp.wav) / 16_000)
        # Clips of 1-3 generated sentences: a plausible length, and real sound in them.
        assert 0.8 < sp.duration < 20, text
        assert np.sqrt((sp.wav**2).mean()) > 0.01, text

        ph = sp.phones
        assert ph[0].start == 0.0, text
        for a, b in zip(ph, ph[1:]):
            assert a.end == b.start, (text, a, b)  # contiguous, no gap or overlap
        for p in ph:
            assert p.end > p.start, (text, p)  # every phone has positive length
        assert abs(ph[-1].end - sp.duration) <= 0.030, text
        speech = [p for p in ph if p.phone != SILENCE]
        assert len(speech) >= 5, text
        # The engine's closing pause is a pause, not part of the last phone; neighbouring pauses merge.
        assert ph[-1].phone == SILENCE, text
        assert not any(a.phone == b.phone == SILENCE for a, b in zip(ph, ph[1:])), text


def test_phone_spans_carry_the_sound(tts_samples) -> None:
    """Non-silent phones are louder than the pauses: the timings line up with the audio."""
    for voice, samples in tts_samples.items():
        loud, quiet = [], []
        for _, sp in samples:
            for p in sp.phones:
                seg = sp.wav[int(p.start * sp.sample_rate) : int(p.end * sp.sample_rate)]
                if len(seg) < 160:
                    continue
                (quiet if p.phone == SILENCE else loud).append(float(np.sqrt((seg**2).mean())))
        assert np.median(loud) > 5 * np.median(quiet), voice


def test_female_voices_are_higher_pitched_than_male(tts_samples) -> None:
    for voice, samples in tts_samples.items():
        f0 = np.median([_median_f0(sp.wav) for _, sp in samples[:4]])
        if VOICES[voice].sex == "female":
            assert f0 > 150, (voice, f0)
        else:
            assert f0 < 140, (voice, f0)


def test_voices_sound_different() -> None:
    text = "Bob bought a blue umbrella."
    wavs = {v: synthesize(text, v).wav for v in VOICES}
    names = list(VOICES)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not (len(wavs[a]) == len(wavs[b]) and np.array_equal(wavs[a], wavs[b])), (a, b)


def test_synthesis_is_a_pure_function_of_its_inputs() -> None:
    """Same text, voice and settings -> identical samples and phones, whatever was spoken before.

    (espeak-ng keeps synthesis state in C statics; the corpus' determinism depends on this.)
    """
    text = "Honestly, the shiny apple bought a bridge in the garage."
    a = synthesize(text, "us-female-fast", rate=200, pitch=60)
    synthesize("Bob went home quickly and then slept very long indeed.", "nyc-male", rate=150, pitch=30)
    b = synthesize(text, "us-female-fast", rate=200, pitch=60)
    synthesize("Hmm?", "gb-male", rate=250, pitch=90)
    c = synthesize(text, "us-female-fast", rate=200, pitch=60)
    for other in (b, c):
        assert len(other.wav) == len(a.wav)
        assert np.array_equal(other.wav, a.wav)
        assert other.phones == a.phones


_HASH_ALL_VOICES = """
import hashlib, sys, time
from talkhead.audio.tts import VOICES, synthesize
time.sleep(float(sys.argv[1]))
h = hashlib.sha1()
for v in VOICES:
    sp = synthesize("Honestly, the shiny apple bought a bridge in the garage.", v)
    h.update(sp.wav.tobytes()); h.update(repr(sp.phones).encode())
print(h.hexdigest())
"""


def test_synthesis_is_the_same_in_another_process_at_another_time() -> None:
    """Breath noise must not be seeded from the clock: a rebuilt corpus has to come out identical."""
    h = hashlib.sha1()
    for v in VOICES:
        sp = synthesize("Honestly, the shiny apple bought a bridge in the garage.", v)
        h.update(sp.wav.tobytes())
        h.update(repr(sp.phones).encode())
    other = subprocess.run([sys.executable, "-c", _HASH_ALL_VOICES, "1.05"], capture_output=True, text=True,
                           timeout=60)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() == h.hexdigest()


def test_rate_and_pitch_overrides_take_effect() -> None:
    text = "Maria painted the purple violin at dawn."
    slow = synthesize(text, "us-male", rate=120)
    fast = synthesize(text, "us-male", rate=260)
    assert fast.duration < 0.75 * slow.duration
    low = _median_f0(synthesize(text, "us-male", pitch=10).wav)
    high = _median_f0(synthesize(text, "us-male", pitch=90).wav)
    assert high > 1.3 * low


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "...", "?", "-"])
def test_unspeakable_text_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError):
        synthesize(text)


def test_unknown_voice_is_an_input_error_listing_choices() -> None:
    with pytest.raises(InputError, match="us-female"):
        synthesize("Hello there.", "klingon")
    with pytest.raises(InputError):
        get_voice("")
    assert get_voice("gb-male").name == "gb-male"


def test_the_resampler_in_pieces_gives_the_whole_audio_resampled() -> None:
    """Audio arriving in pieces of any size resamples to what the whole does, sample for sample, and each
    output comes out once its filter's inputs are in."""
    from talkhead.audio.tts import Resampler, to_sample_rate

    rng = np.random.default_rng(0)
    for rate in (22_050, 24_000, 44_100, 16_000):
        x = synthesize("The birch canoe slid on the smooth planks.", "us-male").wav  # real speech...
        x = np.concatenate([x, rng.standard_normal(3001).astype(np.float32) * 0.1])  # ...and an odd length
        whole = to_sample_rate(x, rate)
        r, out, fed = Resampler(rate), [], 0
        while fed < len(x):
            n = int(rng.integers(1, 4000))
            out.append(r.push(x[fed:fed + n]))
            fed += min(n, len(x) - fed)
            behind = fed * SAMPLE_RATE / rate - sum(len(o) for o in out)
            assert -1 < behind <= 10 * max(r.up, r.down) / r.down + 2  # held back by the filter's reach only
        out.append(r.flush())
        assert np.array_equal(np.concatenate(out), whole)
