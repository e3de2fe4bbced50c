"""The torch port of the Whisper encoder's layers, on real speech: it is the shipped encoder, and its taps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from talkhead.audio.features import FeatureConfig, FeatureStream, extract, silence_row
from talkhead.audio.io import load_audio
from talkhead.audio.whisper import encode, whisper_log_mel
from talkhead.audio.whisper_taps import encode_final, encode_taps, read_ct2

SPEECH = Path(__file__).resolve().parents[1] / "assets" / "speech"


@pytest.fixture(scope="module")
def arctic():
    return load_audio(SPEECH / "arctic_a0007.wav")


def test_the_port_run_to_the_end_is_ctranslate2s_encoder(arctic):
    """Same weights, same layers: the states CTranslate2 gives, to float32 rounding; so the inner layers are
    the inner layers of the encoder every model learnt from, not of another network."""
    wav = arctic[: len(arctic) // 320 * 320]
    mel = whisper_log_mel(wav)
    ours, theirs = encode_final(mel), encode(wav, threads=1)
    assert ours.shape == theirs.shape == (len(wav) // 320, 384)
    assert float(np.abs(ours - theirs).max()) < 2e-3


def test_taps_are_the_layers_asked_for_and_differ_from_the_output(arctic):
    mel = whisper_log_mel(arctic[:32000])
    one, two = encode_taps(mel, (1, 2))
    (again,) = encode_taps(mel, (2,))
    assert one.shape == two.shape == (100, 384) and np.array_equal(two, again)
    assert abs(np.corrcoef(two.ravel(), encode_final(mel).ravel())[0, 1]) < 0.9  # not the output again
    with pytest.raises(ValueError, match="layers 1 to 4"):
        encode_taps(mel, (5,))


def test_a_front_end_with_taps_puts_the_output_first(arctic):
    plain, tapped = FeatureConfig(kind="whisper"), FeatureConfig(kind="whisper", taps=(2,))
    assert tapped.dim == 768 and tapped.output == plain and plain.key() != tapped.key()
    assert "taps" not in plain.key()  # caches made before taps existed are still found
    a, b = extract(arctic, plain), extract(arctic, tapped)
    assert b.shape == (len(a), 768) and torch.allclose(b[:, :384], a)
    assert silence_row(tapped).shape == (768,) and torch.allclose(silence_row(tapped)[:384], silence_row(plain))
    stream = FeatureStream(tapped, block_s=1.0, context_s=0.5)  # a live caller's blocks carry the taps too
    assert torch.cat([stream.push(arctic), stream.flush()]).shape == b.shape
    with pytest.raises(ValueError, match="taps"):
        FeatureConfig(kind="logmel", taps=(2,))


def test_the_reader_names_a_file_it_cannot_read(tmp_path):
    bad = tmp_path / "model.bin"
    bad.write_bytes((3).to_bytes(4, "little") + b"\0" * 16)
    with pytest.raises(ValueError, match="older format"):
        read_ct2(bad)
