"""Phones -> visemes -> coarticulated blendshapes, checked on real TTS speech."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.audio.tts import SAMPLE_RATE, VOICES, Phone, Speech, synthesize
from talkhead.config import FPS
from talkhead.motion.data.text import paragraph
from talkhead.rig import n_frames, target_motion
from talkhead.rig.spec import SPEC
from talkhead.rig.visemes import ARPABET, VISEMES, mouth_targets, phone_visemes, segments, stress_of

JAW, CLOSE = SPEC["jawOpen"], SPEC["mouthClose"]
BILABIALS = {"p", "b", "m"}


def lip_gap(motion: np.ndarray) -> np.ndarray:
    """How far the lips are apart: ARKit's mouthClose closes the lips against an open jaw."""
    return motion[:, JAW] - motion[:, CLOSE]


def frame_times(n: int) -> np.ndarray:
    return (np.arange(n) + 0.5) / FPS  # each frame stands for the middle of its 40 ms


def motion_of(sp: Speech, seed: int = 0) -> np.ndarray:
    return target_motion(sp.wav, sp.sample_rate, sp.phones, seed=seed)


def core(phone: str) -> str:
    return phone.strip("ˈˌ")


# ---------------------------------------------------------------- phone coverage


def test_every_phone_the_tts_emits_maps(tts_samples) -> None:
    rng = np.random.default_rng(99)
    seen: set[str] = set()
    for voice in VOICES:
        speeches = [sp for _, sp in tts_samples[voice]]
        speeches += [synthesize(paragraph(rng, 3), voice) for _ in range(6)]
        for sp in speeches:
            seen.update(p.phone for p in sp.phones)
    assert len(seen) > 60  # the generator really covers English
    for phone in sorted(seen):
        vis = phone_visemes(phone)  # raises KeyError if unmapped
        assert all(v in VISEMES for v in vis), phone
        if not set(phone) <= set("ːˑʰʲʷˠ\u0303\u0329\u032fˈˌ"):
            assert vis, phone  # only a bare length/palatal/... mark may map to nothing


def test_every_arpabet_phone_with_stress_maps() -> None:
    vowels = {"AA", "AE", "AH", "AO", "AW", "AX", "AY", "EH", "ER", "AXR", "EY", "IH", "IX", "IY", "OW", "OY",
              "UH", "UW", "UX"}
    for base, ipa in ARPABET.items():
        forms = [base] + ([base + d for d in "012"] if base in vowels else [])
        for phone in forms:
            vis = phone_visemes(phone)
            assert vis and all(v in VISEMES for v in vis), phone
            assert vis == phone_visemes(ipa), phone  # same shape as the IPA it stands for
    assert phone_visemes("AA1") == ["aa"] and phone_visemes("UW0") == ["U"]
    assert phone_visemes("B") == phone_visemes("M") == phone_visemes("P") == ["PP"]
    assert phone_visemes("AY1") == ["aa", "I"]  # a diphthong glides
    assert phone_visemes("JH") == ["DD", "CH"]  # an affricate too
    assert phone_visemes("SIL") == phone_visemes("_") == phone_visemes("") == ["sil"]


def test_stress() -> None:
    assert stress_of("AA1") == 1 and stress_of("AA2") == 2 and stress_of("AA0") == 0 and stress_of("B") == 0
    assert stress_of("ˈɑː") == 1 and stress_of("ˌaɪ") == 2 and stress_of("ə") == 0
    # Stress marks and length change timing, not the lip shape.
    assert phone_visemes("ˈɑː") == phone_visemes("ɑ") == phone_visemes("AA1")
    # Combining diacritics (the Caribbean and Welsh voices' dental t̪ and d̪) keep the base letter's shape.
    assert phone_visemes("t̪") == phone_visemes("t") and phone_visemes("ˈd̪") == phone_visemes("d")


@pytest.mark.parametrize("phone", ["Q9", "☃", "XX1", "ħ", "pǃ", "AA7"])
def test_unknown_phone_is_an_error_not_silence(phone: str) -> None:
    with pytest.raises(KeyError):
        phone_visemes(phone)
    phones = [("_", 0.0, 0.2), (phone, 0.2, 0.4), ("_", 0.4, 0.6)]
    with pytest.raises(KeyError):
        mouth_targets(phones, 15)
    with pytest.raises(KeyError):
        target_motion(np.zeros(int(0.6 * SAMPLE_RATE), np.float32), SAMPLE_RATE, phones)


def test_segments_split_glides_and_keep_time() -> None:
    segs = segments([("_", 0.0, 0.1), ("ˈaɪ", 0.1, 0.3), ("ʲ", 0.3, 0.35), ("m", 0.35, 0.5)])
    assert [s[0] for s in segs] == ["sil", "aa", "I", "PP"]
    assert segs[1][1:] == pytest.approx((0.1, 0.2)) and segs[2][1:] == pytest.approx((0.2, 0.35))
    assert segs[0][1] == 0.0 and segs[-1][2] == 0.5
    for a, b in zip(segs, segs[1:]):
        assert a[2] == pytest.approx(b[1])


# ---------------------------------------------------------------- coarticulation on real speech


def _with_long_pause(sp: Speech, seconds: float = 1.0) -> Speech:
    """The same speech with real digital silence appended (the trailing pause made longer)."""
    wav = np.concatenate([sp.wav, np.zeros(int(seconds * SAMPLE_RATE), np.float32)])
    end = len(wav) / SAMPLE_RATE
    phones = list(sp.phones)
    last = phones[-1]
    phones[-1] = Phone(last.phone, last.start, end) if last.phone == "_" else last
    if last.phone != "_":
        phones.append(Phone("_", last.end, end))
    return Speech(wav, SAMPLE_RATE, phones)


@pytest.mark.parametrize("text", ["Well. Ma.", "Well. Papa.", "Oh. Mama bought a map.", "Hmm. Bob, be brave."])
def test_lips_open_before_the_vowel(text: str) -> None:
    """Anticipation: the lip gap leaves its silence level at least one frame before each vowel starts."""
    sp = synthesize(text, "us-female")
    m = motion_of(sp)
    gap, t = lip_gap(m), frame_times(len(m))
    pause = max((p for p in sp.phones if p.phone == "_"), key=lambda p: p.end - p.start)
    assert pause.end - pause.start > 0.2, sp.phones
    mid = (t > pause.start + 0.08) & (t < pause.end - 0.08)
    silence_level = float(np.median(gap[mid]))
    checked = 0
    for prev, ph in zip(sp.phones, sp.phones[1:]):
        if phone_visemes(ph.phone)[:1] not in (["aa"], ["O"], ["E"], ["@"]):
            continue
        if not (prev.phone == "_" or core(prev.phone) in BILABIALS) or ph.start < pause.end:
            continue
        before = np.flatnonzero(t < ph.start)[-1]  # the last frame before the vowel starts
        assert gap[before] > silence_level + 0.01, (text, prev, ph, gap[before - 2 : before + 2])
        checked += core(prev.phone) in BILABIALS
    assert checked >= 1, sp.phones  # at least one bilabial -> vowel release was looked at


def test_bilabials_close_the_lips(tts_samples, tts_motions) -> None:
    """At the middle of every p/b/m of 60 ms or more the lips are shut, in every voice."""
    checked = 0
    for voice, samples in tts_samples.items():
        for (text, sp), m in zip(samples, tts_motions[voice]):
            gap, t = lip_gap(m), frame_times(len(m))
            for p in sp.phones:
                if core(p.phone) in BILABIALS and p.end - p.start >= 0.06:
                    f = int(np.argmin(np.abs(t - 0.5 * (p.start + p.end))))
                    assert gap[f] < 0.05 and m[f, JAW] < 0.12, (voice, text, p, gap[f], m[f, JAW])
                    checked += 1
    assert checked > 100


def test_open_vowels_open_the_jaw_more_than_bilabials(tts_samples, tts_motions) -> None:
    open_v, bilabial = [], []
    for voice, samples in tts_samples.items():
        for (_, sp), m in zip(samples, tts_motions[voice]):
            t = frame_times(len(m))
            for p in sp.phones:
                if p.end - p.start < 0.06:
                    continue
                f = int(np.argmin(np.abs(t - 0.5 * (p.start + p.end))))
                if phone_visemes(p.phone) == ["aa"]:
                    open_v.append(m[f, JAW])
                elif core(p.phone) in BILABIALS:
                    bilabial.append(m[f, JAW])
    assert len(open_v) > 30 and len(bilabial) > 30
    assert np.mean(open_v) > 0.3 and np.mean(open_v) > 3 * np.mean(bilabial)
    assert np.percentile(open_v, 10) > np.percentile(bilabial, 90)


def test_rounded_vowels_pucker() -> None:
    sp = synthesize("Who knew? Blue shoes. Ah, father.", "gb-male")
    m = motion_of(sp)
    t = frame_times(len(m))
    pucker = {"U": [], "aa": []}
    for p in sp.phones:
        vis = phone_visemes(p.phone)
        if len(vis) == 1 and vis[0] in pucker and p.end - p.start >= 0.06:
            pucker[vis[0]].append(m[int(np.argmin(np.abs(t - 0.5 * (p.start + p.end)))), SPEC["mouthPucker"]])
    assert pucker["U"] and pucker["aa"]
    assert min(pucker["U"]) > 0.3 > max(pucker["aa"])


def test_silence_is_closed_and_still(tts_samples, tts_motions) -> None:
    # A long stretch of real silence after real speech: shut and motionless.
    for voice in ("us-male", "scot-female"):
        _, sp = tts_samples[voice][0]
        long = _with_long_pause(sp, 1.0)
        m = motion_of(long)
        t = frame_times(len(m))
        tail = m[t > sp.duration + 0.25][:, SPEC.mouth]
        assert len(tail) >= 15
        assert np.abs(tail).max() < 0.01, voice
        assert np.abs(np.diff(tail, axis=0)).max() < 1e-3, voice
    # Pauses between sentences: closed in their middle, and still away from the edges.
    n_pauses = 0
    for voice, samples in tts_samples.items():
        for (text, sp), m in zip(samples, tts_motions[voice]):
            t = frame_times(len(m))
            for p in sp.phones:
                if p.phone != "_" or p.end - p.start < 0.3:
                    continue
                mid = (t > p.start + 0.12) & (t < p.end - 0.12)
                if not mid.any():
                    continue
                n_pauses += 1
                assert m[mid, JAW].max() < 0.06 and np.abs(lip_gap(m)[mid]).max() < 0.06, (text, p)
                core_ = m[(t > p.start + 0.15) & (t < p.end - 0.15)][:, SPEC.mouth]
                if len(core_) > 1:
                    assert np.abs(np.diff(core_, axis=0)).max() < 0.02, (text, p)
    assert n_pauses >= 10


def test_targets_move_smoothly_not_in_steps(tts_samples) -> None:
    """Coarticulation, not a step function: jaw changes between frames stay well below the full range."""
    for _, sp in tts_samples["us-female"]:
        jaw = mouth_targets(sp.phones, n_frames(len(sp.wav), sp.sample_rate))[:, JAW]
        steps = np.abs(np.diff(jaw))
        assert steps.max() < 0.72  # never a full open-close jump in one frame
        assert np.median(steps[steps > 1e-4]) < 0.15
