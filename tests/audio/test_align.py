"""Forced alignment on real recordings: phone boundaries against CMU ARCTIC's own labels, and refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from talkhead.audio.align import AlignError, align, normalise, number_words
from talkhead.audio.io import load_audio

SPEECH = Path(__file__).resolve().parents[1] / "assets" / "speech"
A0009 = "He turned sharply, and faced Gregson across the table."


def _arctic_labels() -> list[tuple[str, float, float]]:
    """The HTS full-context labels shipped with a0009: (ARPAbet phone, start s, end s), 100 ns units."""
    out = []
    for line in (SPEECH / "arctic_a0009.lab").read_text().splitlines():
        start, end, label = line.split()
        phone = label.split("-")[1].split("+")[0].upper()
        phone = {"PAU": "SIL", "AX": "AH"}.get(phone, phone)  # CMU's dictionary writes schwa as AH
        out.append((phone, int(start) / 1e7, int(end) / 1e7))
    return out


def test_number_words_and_normalise():
    assert number_words(0) == "zero"
    assert number_words(42) == "forty two"
    assert number_words(1305) == "one thousand three hundred five"
    assert normalise("Press 1, or # [a beep] to exit!") == ["press", "one", "or", "pound", "to", "exit"]


def test_alignment_matches_arctic_labels():
    wav = load_audio(SPEECH / "arctic_a0009.wav")
    got = align(wav, A0009)
    ref = _arctic_labels()
    speech = lambda seq: [p for p, _, _ in seq if p != "SIL"]
    assert speech(got) == speech(ref)  # the same phone sequence as CMU's labels
    # Boundaries of the speech phones, one by one: within a frame or two of CMU's own alignment.
    starts = lambda seq: np.array([s for p, s, _ in seq if p != "SIL"])
    err = np.abs(starts(got) - starts(ref))
    assert np.median(err) < 0.02 and err.mean() < 0.03, err
    assert got[-1][2] == pytest.approx(len(wav) / 16_000, abs=0.02)


def test_telephone_speech_aligns():
    wav = load_audio(SPEECH / "allison-all-circuits-busy-now.wav")
    phones = align(wav, "All circuits are busy now.")
    assert [p for p, _, _ in phones if p != "SIL"][:3] == ["AO", "L", "S"]
    assert all(e > s for _, s, e in phones)


def test_refuses_what_it_cannot_align():
    wav = load_audio(SPEECH / "allison-vm-goodbye.wav")
    with pytest.raises(AlignError, match="does not fit"):
        align(wav, "Thank you for calling Super Awesome Company, the premier provider of perfect products.")
    with pytest.raises(AlignError, match="not in the pronunciation dictionary: unmuted"):
        align(load_audio(SPEECH / "allison-conf-now-unmuted.wav"), "The conference is now unmuted.")
    with pytest.raises(AlignError, match="silent"):
        align(np.zeros(16_000, np.float32), "hello")
    with pytest.raises(AlignError, match="no words"):
        align(wav, "[beep]")
