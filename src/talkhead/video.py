"""Video in and out: frames read from any container PyAV decodes, bounded in length; frames + speech
-> .mp4 (H.264 + AAC), written atomically.

Reading: ``iter_frames`` resamples to a frame rate, one frame at a time (a long video is never held
whole), upright, and refuses a video past ``video_limit`` (the commands' --max-seconds).

Writing: frames + speech -> .mp4 (H.264 + AAC) with PyAV, written atomically.

The video is the master clock: the audio is trimmed or padded with silence to
exactly ``n_frames / fps`` seconds, so both streams end within one frame.
Without audio (``audio=None``) the file has a video track only. The
file appears under its name only once complete: it is written to a hidden
temporary file in the same directory and renamed; any failure removes it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.util import atomic_path

# libx264's threads (0: its own choice, about 1.5 per core). A batch worker sets 1: its parallelism is the
# worker processes, and an encoder that spreads over every core would make one worker look like two.
ENCODER_THREADS = 0
AAC_RATES = (96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000)

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v"}
MAX_SECONDS = 3600.0  # a video's frames are read up to an hour: past it, a named error, not hours of filling
_limit = [MAX_SECONDS]  # the process's limit: ``video_limit`` (the commands' --max-seconds) sets it


@contextmanager
def video_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, videos whose frame times run past ``seconds`` are refused (None: keep the limit)."""
    if seconds is not None and not 0 < seconds <= 24 * 3600:
        raise InputError(f"--max-seconds must be above 0 and at most 86400, got {seconds:g}")
    old = _limit[0]
    _limit[0] = old if seconds is None else float(seconds)
    try:
        yield
    finally:
        _limit[0] = old


def _too_long(path: Path, seconds: float, limit: float) -> InputError:
    return InputError(f"{path.name} runs past {limit:g} s (to {seconds:.0f} s): cut it shorter or raise --max-seconds")


def iter_frames(path: str | Path, fps: int = FPS, max_seconds: float | None = None) -> Iterator[np.ndarray]:
    """The video's frames resampled to ``fps`` (each time takes the nearest earlier frame), uint8 [H, W, 3]
    one at a time, so a long video is never held whole, and upright (a display rotation applied). Any
    container and frame rate PyAV decodes; the audio is not looked at. A missing, corrupt or frameless
    file, or one that runs past ``max_seconds`` (default the ``video_limit``, an hour), is an InputError
    naming it: by the container's stated length before a frame is decoded, and by the frames' own times
    (a few frames hours apart would otherwise be repeated for hours)."""
    import av

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such video: {path}")
    limit = _limit[0] if max_seconds is None else max_seconds
    step, k, prev, t_prev, last_gap = 1.0 / fps, 0, None, 0.0, 1.0 / fps
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise InputError(f"{path.name} has no video track")
            if c.duration is not None and c.duration / 1e6 > limit:
                raise _too_long(path, c.duration / 1e6, limit)
            for f in c.decode(video=0):
                t = float(f.time or 0.0)
                if t > limit:
                    raise _too_long(path, t, limit)
                while prev is not None and k * step < t - 1e-6:  # times before this frame show the previous one
                    yield prev
                    k += 1
                if prev is not None and t > t_prev:
                    last_gap = t - t_prev
                prev, t_prev = _upright(f), t
    except InputError:
        raise
    except (av.error.FFmpegError, OSError, ValueError) as e:  # not a video, or broken part-way
        raise InputError(f"cannot read video {path.name}: {e}") from None
    if prev is None:
        raise InputError(f"{path.name} has no frames")
    # The last frame lasts as long as the one before it did: 2 s at 60 fps are 50 frames at 25, not 51.
    while k * step < t_prev + last_gap - 1e-6:
        yield prev
        k += 1


def _upright(frame) -> np.ndarray:
    """A decoded frame as shown: a phone's portrait video is stored on its side with a display rotation."""
    img = frame.to_ndarray(format="rgb24")
    quarter = round((getattr(frame, "rotation", 0) or 0) / 90) % 4  # counter-clockwise, as np.rot90 turns
    return np.ascontiguousarray(np.rot90(img, quarter)) if quarter else img


def read_frames(path: Path, fps: int = FPS) -> np.ndarray:
    """The video's frames resampled to ``fps`` (nearest earlier frame), uint8 [T, H, W, 3]."""
    return np.stack(list(iter_frames(path, fps)))


def frame_estimate(path: str | Path, fps: int = FPS) -> int | None:
    """How many frames ``iter_frames`` will yield, from the container's duration (for a progress bar)."""
    import av

    try:
        with av.open(str(path)) as c:
            v = c.streams.video[0]
            secs = float(v.duration * v.time_base) if v.duration else (c.duration or 0) / 1e6
    except (av.error.FFmpegError, OSError, ValueError, IndexError):
        return None
    return round(secs * fps) or None


def frame_runs(frames: np.ndarray) -> list[tuple[int, int]]:
    """Sorted frame numbers -> runs of consecutive ones as (first, last)."""
    runs: list[tuple[int, int]] = []
    for f in (int(v) for v in frames):
        if runs and f == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], f)
        else:
            runs.append((f, f))
    return runs


def _even_frame(frame: np.ndarray, shape: tuple[int, int] | None) -> np.ndarray:
    """Crop a frame [H, W, 3] to even sides (yuv420p halves chroma) and check it matches."""
    f = np.asarray(frame)
    if f.dtype != np.uint8 or f.ndim != 3 or f.shape[2] != 3:
        raise ValueError(f"frames must be uint8 [H, W, 3], got {f.dtype} {f.shape}")
    f = f[: f.shape[0] // 2 * 2, : f.shape[1] // 2 * 2]
    if shape is not None and f.shape[:2] != shape:
        raise ValueError(f"frame size changed from {shape} to {f.shape[:2]}")
    if min(f.shape[:2]) < 2:
        raise ValueError(f"frame too small: {frame.shape}")
    return np.ascontiguousarray(f)


class _AudioFeed:
    """Feeds the mono track to the AAC encoder in step with the video frames."""

    def __init__(self, container, audio: np.ndarray, sample_rate: int) -> None:
        self.audio = np.ascontiguousarray(np.asarray(audio, dtype=np.float32).reshape(-1))
        self.rate = int(sample_rate)
        out_rate = self.rate if self.rate in AAC_RATES else 48000  # encoder resamples
        self.stream = container.add_stream("aac", rate=out_rate, layout="mono")
        self.stream.bit_rate = 128_000
        self.sent = 0

    def until(self, seconds: float) -> None:
        """Encode samples up to ``seconds``, silence past the end of the audio."""
        end = round(seconds * self.rate)
        if end <= self.sent:
            return
        chunk = np.zeros(end - self.sent, dtype=np.float32)
        have = self.audio[self.sent:end]
        chunk[: len(have)] = have
        frame = av.AudioFrame.from_ndarray(chunk[None, :], format="flt", layout="mono")
        frame.sample_rate = self.rate
        frame.pts = self.sent
        frame.time_base = Fraction(1, self.rate)
        self.sent = end
        self._mux(frame)

    def close(self) -> None:
        self._mux(None)

    def _mux(self, frame) -> None:
        for packet in self.stream.encode(frame):
            self.stream.container.mux(packet)


def _encode(tmp: Path, frames: Iterable[np.ndarray], audio: np.ndarray | None, sample_rate: int,
            fps: int, progress: Callable[[int], None] | None, codec: str = "libx264", rotation: int = 0) -> int:
    """Write the streams into tmp; returns the number of video frames."""
    n = 0
    with av.open(str(tmp), mode="w", format="mp4") as container:
        video = None
        feed = None
        shape = None
        for frame in frames:
            f = _even_frame(frame, shape)
            if video is None:
                shape = f.shape[:2]
                video = container.add_stream(codec, rate=fps)
                video.width, video.height = shape[1], shape[0]
                video.pix_fmt = "yuv420p"
                if rotation:
                    video.set_display_rotation(rotation)
                video.options = {"preset": "veryfast", "crf": "20", "threads": str(ENCODER_THREADS)}
                feed = _AudioFeed(container, audio, sample_rate) if audio is not None else None
            vf = av.VideoFrame.from_ndarray(f, format="rgb24")
            vf.pts = n
            for packet in video.encode(vf):
                container.mux(packet)
            n += 1
            if feed is not None:
                feed.until(n / fps)  # interleave: audio up to the end of this frame
            if progress is not None:
                progress(n)
        if video is None:
            raise ValueError("no frames to write")
        for packet in video.encode(None):
            container.mux(packet)
        if feed is not None:
            feed.close()
    return n


def write_mp4(path: str | os.PathLike, frames: Iterable[np.ndarray], audio: np.ndarray | None,
              sample_rate: int = 16_000, fps: int = FPS, progress: Callable[[int], None] | None = None,
              codec: str = "libx264", rotation: int = 0) -> Path:
    """Encode frames (uint8 [H, W, 3] each) and mono float32 audio to an mp4; returns the path.

    ``audio=None``: a silent video, no audio track. ``progress(n)`` is called after each frame with
    the number written so far. ``codec``: libx264 (H.264) or libx265 (HEVC); ``rotation``: degrees
    counter-clockwise a player turns the picture to show it (a phone's portrait video is stored on its side).
    """
    path = Path(path)
    if sample_rate <= 0 or fps <= 0:
        raise ValueError("sample_rate and fps must be positive")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create output directory {path.parent}: {e.strerror}") from None
    with atomic_path(path) as tmp:  # the temporary name keeps .mp4, so PyAV picks the container from it
        _encode(tmp, frames, audio, sample_rate, fps, progress, codec, rotation)
    return path


def probe(path: str | os.PathLike) -> dict:
    """Streams of an mp4: frame count, fps, durations (s), size and codec names."""
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        a = c.streams.audio[0] if c.streams.audio else None
        n = v.frames or sum(1 for _ in c.demux(v) if _.size)
        fps = float(v.average_rate) if v.average_rate else float(v.guessed_rate)
        info = {"video_frames": int(n), "fps": fps,
                "video_duration": float(v.duration * v.time_base) if v.duration else n / fps,
                "width": v.codec_context.width, "height": v.codec_context.height,
                "video_codec": v.codec_context.name,
                "audio_duration": None, "audio_codec": None, "sample_rate": None}
        if a is not None:
            info.update(audio_duration=float(a.duration * a.time_base) if a.duration else None,
                        audio_codec=a.codec_context.name, sample_rate=a.codec_context.sample_rate)
    return info
