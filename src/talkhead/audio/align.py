"""Forced alignment of real speech to its transcript: ARPAbet phones with times, by PocketSphinx.

PyPI's ``pocketsphinx`` ships a US English acoustic model and the CMU dictionary. Alignment runs
in two passes (words, then phones within them). A transcript that does not fit its audio shows
as a poor acoustic score per frame; below ``min_score`` the clip is refused rather than trusted.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import numpy as np

from talkhead.config import SAMPLE_RATE
from talkhead.errors import InputError

FRAME_S = 0.01  # PocketSphinx frames: 10 ms
_lock = threading.Lock()

_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen " \
        "sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


class AlignError(InputError):
    """The transcript cannot be aligned to the audio (unknown word, mismatch, no speech)."""


def number_words(n: int) -> str:
    """0 <= n < 1,000,000 in English words, as a speaker reads a number: 42 -> 'forty two'."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    if n < 1000:
        return _ONES[n // 100] + " hundred" + ("" if n % 100 == 0 else " " + number_words(n % 100))
    if n < 1_000_000:
        return number_words(n // 1000) + " thousand" + ("" if n % 1000 == 0 else " " + number_words(n % 1000))
    raise AlignError(f"number too large to spell: {n}")


def normalise(text: str) -> list[str]:
    """Transcript -> lower-case words the dictionary can look up: digits spelt out, punctuation gone."""
    text = re.sub(r"\[[^\]]*\]", " ", text)  # [sound descriptions] are not speech
    text = re.sub(r"\d+", lambda m: " " + number_words(int(m.group())) + " ", text.replace(",", " "))
    text = text.lower().replace("&", " and ").replace("%", " percent ").replace("*", " star ").replace("#", " pound ")
    words = re.sub(r"[^a-z' ]+", " ", text).split()
    return [w.strip("'") for w in words if w.strip("'")]


@lru_cache(maxsize=1)
def _decoder():
    import pocketsphinx

    return pocketsphinx.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL", bestpath=False)


def _phone(name: str) -> str:
    return "SIL" if name.startswith("+") or name in ("SIL", "<sil>") else name


def align(wav: np.ndarray, transcript: str, min_score: float = -32.0) -> list[tuple[str, float, float]]:
    """Mono 16 kHz audio and what it says -> [(ARPAbet phone, start s, end s)], silences as SIL."""
    words = normalise(transcript)
    if not words:
        raise AlignError("the transcript has no words to align")
    if np.abs(wav).max(initial=0.0) < 1e-4:
        raise AlignError("the recording is silent")
    pcm = (np.clip(np.asarray(wav, np.float32), -1, 1) * 32767).astype(np.int16).tobytes()
    with _lock:  # one decoder, one utterance at a time
        d = _decoder()
        unknown = [w for w in words if d.lookup_word(w) is None]
        if unknown:
            raise AlignError(f"words not in the pronunciation dictionary: {', '.join(sorted(set(unknown)))}")
        try:
            d.set_align_text(" ".join(words))
            for second_pass in (False, True):
                if second_pass:
                    d.set_alignment()
                d.start_utt()
                d.process_raw(pcm, full_utt=True)
                d.end_utt()
            phones = list(d.get_alignment().phones())
        except RuntimeError:
            raise AlignError("the transcript does not fit the audio (alignment failed)") from None
    frames = sum(p.duration for p in phones)
    score = sum(p.score for p in phones) / max(frames, 1)
    if score < min_score:
        raise AlignError(f"the transcript does not fit the audio (score {score:.1f} per frame < {min_score})")
    return [(_phone(p.name), round(p.start * FRAME_S, 5), round((p.start + p.duration) * FRAME_S, 5))
            for p in phones]
