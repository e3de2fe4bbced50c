"""mp4 writing: streams, codecs, durations within a frame, and no partial files."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.video import probe, write_mp4

SR = 16000
FPS = 25


def tone(seconds: float, sr: int = SR) -> np.ndarray:
    t = np.arange(round(seconds * sr)) / sr
    return (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)


def frames(n: int, h: int = 49, w: int = 67):
    """n moving-gradient frames, odd sizes on purpose (yuv420p needs even ones)."""
    base = np.linspace(0, 255, w, dtype=np.float32)[None, :, None]
    for i in range(n):
        img = np.broadcast_to((base + 7 * i) % 256, (h, w, 3)).astype(np.uint8)
        yield img


@pytest.mark.parametrize("audio_s", [1.6, 1.43, 2.2], ids=["equal", "short", "long"])
def test_streams_codecs_and_durations(tmp_path, audio_s):
    path = tmp_path / "out.mp4"
    seen = []
    assert write_mp4(path, frames(40), tone(audio_s), SR, progress=seen.append) == path
    info = probe(path)
    assert info["video_codec"] == "h264" and info["audio_codec"] == "aac"
    assert (info["width"], info["height"]) == (66, 48)
    assert info["video_frames"] == 40 and info["fps"] == pytest.approx(FPS)
    assert info["video_duration"] == pytest.approx(40 / FPS, abs=1e-3)
    assert abs(info["audio_duration"] - info["video_duration"]) <= 1 / FPS
    assert seen == list(range(1, 41))
    assert [p.name for p in tmp_path.iterdir()] == ["out.mp4"]


def test_odd_sample_rate_is_resampled(tmp_path):
    path = tmp_path / "r.mp4"
    write_mp4(path, frames(10), tone(0.4, 22222), 22222)
    info = probe(path)
    assert info["audio_codec"] == "aac" and abs(info["audio_duration"] - 0.4) <= 1 / FPS


def test_failure_midway_leaves_no_file(tmp_path):
    path = tmp_path / "clip.mp4"

    def broken():
        yield from frames(5)
        raise RuntimeError("renderer died")

    with pytest.raises(RuntimeError, match="renderer died"):
        write_mp4(path, broken(), tone(1.0), SR)
    assert list(tmp_path.iterdir()) == []


def test_failed_rewrite_keeps_the_old_file(tmp_path):
    path = tmp_path / "clip.mp4"
    write_mp4(path, frames(5), tone(0.2), SR)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="no frames"):
        write_mp4(path, iter([]), tone(0.2), SR)
    with pytest.raises(ValueError, match="uint8"):
        write_mp4(path, iter([np.zeros((8, 8, 3), np.float32)]), tone(0.2), SR)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["clip.mp4"]
