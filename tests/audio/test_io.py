"""audio.io: decode WAV/FLAC/MP3 at any rate and channel count to 16 kHz mono; write WAV atomically."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly

from talkhead.audio.io import SAMPLE_RATE, load_audio, write_wav
from talkhead.audio.tts import synthesize
from talkhead.errors import InputError

TEXT = "Bob bought a blue umbrella; mom wore a warm woolen scarf. Then they walked home together."


@pytest.fixture(scope="module")
def speech():
    return synthesize(TEXT, "us-male")


@pytest.fixture(scope="module")
def stereo44(speech) -> np.ndarray:
    """The speech at 44.1 kHz, stereo: left as spoken, right a quieter copy."""
    w = resample_poly(speech.wav, 441, 160).astype(np.float32)
    return np.stack([w, 0.5 * w], axis=1)


def _check_same_speech(got: np.ndarray, ref: np.ndarray, level: float) -> None:
    assert got.dtype == np.float32 and got.ndim == 1
    assert abs(len(got) - len(ref)) <= 0.01 * len(ref)
    n = min(len(got), len(ref))
    assert np.corrcoef(got[:n], ref[:n])[0, 1] > 0.98  # same signal, not shifted
    ratio = np.sqrt((got**2).mean() / (ref**2).mean())
    assert ratio == pytest.approx(level, rel=0.1)


def _no_leftovers(folder: Path, expected: set[str]) -> None:
    assert {p.name for p in folder.iterdir()} == expected


def test_wav_44k_stereo_to_16k_mono(tmp_path: Path, speech, stereo44) -> None:
    path = tmp_path / "s.wav"
    sf.write(path, stereo44, 44_100)
    wav = load_audio(path)
    # Mono is the channel average: (1 + 0.5) / 2 of the original level.
    _check_same_speech(wav, speech.wav, level=0.75)


def test_stereo_copy_of_mono_loads_at_the_same_level(tmp_path: Path, speech) -> None:
    sf.write(tmp_path / "mono.wav", speech.wav, SAMPLE_RATE)
    sf.write(tmp_path / "dual.wav", np.stack([speech.wav, speech.wav], 1), SAMPLE_RATE)
    mono, dual = load_audio(tmp_path / "mono.wav"), load_audio(tmp_path / "dual.wav")
    assert len(mono) == len(dual) == len(speech.wav)
    np.testing.assert_allclose(mono, speech.wav, atol=1e-4)  # 16 kHz mono passes through
    np.testing.assert_allclose(dual, mono, atol=1e-4)


def test_flac(tmp_path: Path, speech, stereo44) -> None:
    path = tmp_path / "s.flac"
    sf.write(path, stereo44, 44_100, format="FLAC", subtype="PCM_16")
    _check_same_speech(load_audio(path), speech.wav, level=0.75)


def test_mp3(tmp_path: Path, speech, stereo44) -> None:
    av = pytest.importorskip("av")
    try:
        av.codec.Codec("mp3", "w")
    except Exception as e:  # pragma: no cover - depends on the FFmpeg build
        pytest.skip(f"PyAV has no mp3 encoder here: {e}")
    path = tmp_path / "s.mp3"
    with av.open(str(path), "w") as out:
        stream = out.add_stream("mp3", rate=44_100)
        stream.layout = "stereo"
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(stereo44.reshape(1, -1)), format="flt",
                                           layout="stereo")
        frame.sample_rate = 44_100
        for packet in stream.encode(frame):
            out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    _check_same_speech(load_audio(path), speech.wav, level=0.75)


def test_other_target_rate(tmp_path: Path, speech) -> None:
    sf.write(tmp_path / "s.wav", speech.wav, SAMPLE_RATE)
    wav = load_audio(tmp_path / "s.wav", sample_rate=8_000)
    assert abs(len(wav) - len(speech.wav) / 2) <= 0.01 * len(speech.wav) / 2


@pytest.mark.parametrize("content", [b"", np.random.default_rng(0).bytes(4096)],
                         ids=["empty", "random-bytes"])
@pytest.mark.parametrize("name", ["x.wav", "x.mp3", "x.flac"])
def test_empty_or_corrupt_file_is_an_input_error(tmp_path: Path, content: bytes, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError):
        load_audio(path)


def test_wav_without_samples_is_an_input_error(tmp_path: Path) -> None:
    sf.write(tmp_path / "none.wav", np.zeros(0, np.float32), SAMPLE_RATE)
    with pytest.raises(InputError, match="no audio"):
        load_audio(tmp_path / "none.wav")


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such"):
        load_audio(tmp_path / "nope.wav")
    with pytest.raises(InputError):
        load_audio(tmp_path)  # a directory


def test_write_wav_round_trip(tmp_path: Path, speech) -> None:
    path = tmp_path / "out.wav"
    write_wav(path, speech.wav, speech.sample_rate)
    info = sf.info(path)
    assert (info.samplerate, info.channels, info.subtype, info.format) == (16_000, 1, "PCM_16", "WAV")
    back, sr = sf.read(path, dtype="float32")
    assert sr == 16_000 and len(back) == len(speech.wav)
    assert np.abs(back - np.clip(speech.wav, -1, 1)).max() < 2 / 32768
    _no_leftovers(tmp_path, {"out.wav"})
    # Written like any other file: the user's umask applies (not a private 0600 temp file).
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_write_wav_is_atomic_on_failure(tmp_path: Path, speech) -> None:
    path = tmp_path / "out.wav"
    write_wav(path, speech.wav, speech.sample_rate)
    before = path.read_bytes()
    with pytest.raises(Exception):
        write_wav(path, speech.wav[:100], 0)  # the encoder refuses a 0 Hz rate mid-write
    assert path.read_bytes() == before  # the old file survives whole
    _no_leftovers(tmp_path, {"out.wav"})


def test_write_wav_into_missing_or_unwritable_folder(tmp_path: Path, speech) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_wav(tmp_path / "no" / "out.wav", speech.wav, 16_000)
    assert list(tmp_path.iterdir()) == []
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root ignores permission bits: use a folder nobody can write
            locked = Path("/proc")
            if not locked.is_dir():
                pytest.skip("no unwritable folder available")
        with pytest.raises(InputError):
            write_wav(locked / "out.wav", speech.wav, 16_000)
        assert not (locked / "out.wav").exists()
    finally:
        (tmp_path / "locked").chmod(0o700)
