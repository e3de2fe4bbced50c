"""Audio in and out: any file PyAV can decode (WAV, FLAC, MP3, a video's audio track) to mono 16 kHz."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile as sf

from talkhead.config import SAMPLE_RATE
from talkhead.errors import InputError
from talkhead.util import atomic_path


def load_audio(path: str | Path, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Decode, downmix and resample an audio or video file: float32 [N] at ``sample_rate``."""
    import av

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such audio file: {path}")
    try:
        with av.open(str(path)) as container:
            if not container.streams.audio:
                raise InputError(f"{path} has no audio track")
            stream = container.streams.audio[0]
            # Resample with the channels kept, then average them: FFmpeg's own stereo->mono
            # downmix adds +3 dB (L and R at 0.707 each), so a stereo copy came out louder.
            resampler = av.AudioResampler(format="fltp", rate=sample_rate)
            chunks = []
            for frame in container.decode(stream):
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray().mean(0))
            for out in resampler.resample(None):
                chunks.append(out.to_ndarray().mean(0))
    except InputError:
        raise
    except (av.error.FFmpegError, ValueError, OSError) as e:
        raise InputError(f"cannot decode audio {path}: {e}") from None
    wav = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
    if len(wav) < sample_rate // 25:
        raise InputError(f"{path} holds no audio (empty or shorter than one frame)")
    if not np.isfinite(wav).all():
        raise InputError(f"{path} holds corrupt samples (NaN or inf)")
    return wav


def write_wav(path: str | Path, wav: np.ndarray, sample_rate: int) -> None:
    """Write mono float audio as 16-bit PCM WAV, atomically."""
    with atomic_path(path) as tmp:
        sf.write(str(tmp), np.asarray(wav, np.float32), sample_rate, subtype="PCM_16", format="WAV")
