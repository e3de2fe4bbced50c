"""Text to speech with exact phoneme timings, from espeak-ng's own phoneme events."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from talkhead.audio import espeak
from talkhead.errors import InputError

SAMPLE_RATE = 16_000
SILENCE = "_"


class Phone(NamedTuple):
    phone: str  # espeak IPA, stress marks kept (ˈ primary, ˌ secondary); "_" is a pause
    start: float  # seconds
    end: float


@dataclass(frozen=True)
class Speech:
    """Mono float32 speech and its phones, timed in seconds."""

    wav: np.ndarray
    sample_rate: int
    phones: list[Phone]

    @property
    def duration(self) -> float:
        return len(self.wav) / self.sample_rate


@dataclass(frozen=True)
class Voice:
    """One espeak-ng voice setting: language voice, variant, rate (wpm), pitch and range (0-99)."""

    name: str
    base: str
    variant: str
    rate: int
    pitch: int
    range: int = 50
    sex: str = "male"

    @property
    def espeak_name(self) -> str:
        return f"{self.base}+{self.variant}"


VOICES: dict[str, Voice] = {
    v.name: v
    for v in (
        Voice("us-male", "en-us", "m1", 170, 42, 50, "male"),
        Voice("us-female", "en-us", "f1", 175, 62, 55, "female"),
        Voice("us-male-slow", "en-us", "m3", 140, 35, 40, "male"),
        Voice("us-female-fast", "en-us", "f2", 215, 66, 60, "female"),
        Voice("gb-male", "en", "m2", 165, 40, 45, "male"),
        Voice("gb-female", "en", "f3", 178, 60, 50, "female"),
        Voice("rp-male-low", "en-gb-x-rp", "m4", 158, 28, 35, "male"),
        Voice("us-female-high", "en-us", "f4", 188, 80, 70, "female"),
        Voice("scot-female", "en-gb-scotland", "f2", 172, 58, 55, "female"),
        # Held out from training: evaluation voices.
        Voice("us-female-soft", "en-us", "f5", 165, 70, 45, "female"),
        Voice("gb-male-deep", "en", "m7", 155, 25, 40, "male"),
        Voice("nyc-male", "en-us-nyc", "m6", 185, 50, 60, "male"),
        # Extra voices for distillation corpora (``data synth --voices wide``): more accents and
        # timbres for a student to learn its teacher on. None uses a held-out voice's variant
        # (f5, m7, m6) or the New York accent, which only a held-out voice speaks.
        Voice("carib-male", "en-029", "m2", 165, 38, 45, "male"),
        Voice("clan-female", "en-gb-x-gbclan", "f4", 176, 64, 55, "female"),
        Voice("welsh-male", "en-gb-x-gbcwmd", "m5", 160, 42, 50, "male"),
        Voice("us-male-bright", "en-us", "m5", 195, 45, 65, "male"),
        Voice("us-female-low", "en-us", "f3", 160, 58, 40, "female"),
        Voice("rp-female", "en-gb-x-rp", "f1", 170, 66, 60, "female"),
        Voice("scot-male", "en-gb-scotland", "m3", 168, 36, 45, "male"),
        Voice("carib-female", "en-029", "f2", 182, 62, 50, "female"),
    )
}
HELD_OUT_VOICES: tuple[str, ...] = ("us-female-soft", "gb-male-deep", "nyc-male")
# The voices of the teacher's corpus (``data synth`` default); the rest of VOICES widen distillation corpora.
CORPUS_VOICES: tuple[str, ...] = tuple(VOICES)[:12]
TRAIN_VOICES: tuple[str, ...] = tuple(v for v in VOICES if v not in HELD_OUT_VOICES)
DEFAULT_VOICE = "us-female"


def get_voice(name: str) -> Voice:
    """Look a voice up by name; an unknown name is an InputError listing the choices."""
    try:
        return VOICES[name]
    except KeyError:
        raise InputError(f"unknown voice {name!r}; choose one of: {', '.join(VOICES)}") from None


def _phones_from_events(events: list[tuple[int, int, str]], n_samples: int, rate: int) -> list[Phone]:
    """Each phoneme event starts a phone that ends where the next event starts."""
    marks = [(s, name) for kind, s, name in events if kind == espeak._EV_PHONEME]
    ends = [s for kind, s, _ in events if kind != espeak._EV_PHONEME]
    stop = max(ends + [s for s, _ in marks] + [0])
    phones: list[Phone] = []
    if marks and marks[0][0] > 0:
        phones.append(Phone(SILENCE, 0.0, marks[0][0] / rate))
    for (s, name), nxt in zip(marks, [m[0] for m in marks[1:]] + [stop]):
        if nxt > s:
            phones.append(Phone(name or SILENCE, s / rate, nxt / rate))
    # The engine appends a short silence after its last event; it is a pause, not a phone.
    if n_samples > stop:
        phones.append(Phone(SILENCE, stop / rate, n_samples / rate))
    return _merge_silences(phones)


def _merge_silences(phones: list[Phone]) -> list[Phone]:
    out: list[Phone] = []
    for p in phones:
        if out and p.phone == SILENCE and out[-1].phone == SILENCE:
            out[-1] = Phone(SILENCE, out[-1].start, p.end)
        else:
            out.append(p)
    return out


def synthesize(text: str, voice: str = DEFAULT_VOICE, *, rate: int | None = None,
               pitch: int | None = None) -> Speech:
    """Speak ``text`` with a named voice at 16 kHz; phones come from the engine's events.

    ``rate`` (words per minute) and ``pitch`` (0-99) override the voice's own.
    """
    if not text or not text.strip():
        raise InputError("text is empty")
    v = get_voice(voice)
    eng = espeak.engine()
    params = {espeak.PARAM_RATE: rate or v.rate, espeak.PARAM_PITCH: v.pitch if pitch is None else pitch,
              espeak.PARAM_RANGE: v.range}
    raw, events = eng.synth(text, v.espeak_name, params)
    phones = _phones_from_events(events, len(raw), eng.sample_rate)
    if not any(p.phone != SILENCE for p in phones):
        raise InputError(f"text has nothing speakable: {text[:40]!r}")
    from scipy.signal import resample_poly  # 0.6 s to import: only text-to-speech pays for it

    wav = raw.astype(np.float32) / 32768.0
    g = np.gcd(SAMPLE_RATE, eng.sample_rate)
    wav = resample_poly(wav, SAMPLE_RATE // g, eng.sample_rate // g).astype(np.float32)
    # Resampling can round the length; the phones must still tile the audio exactly.
    end = len(wav) / SAMPLE_RATE
    last = phones[-1]
    phones[-1] = Phone(last.phone, min(last.start, end), end)
    return Speech(wav=wav, sample_rate=SAMPLE_RATE, phones=phones)
