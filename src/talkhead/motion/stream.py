"""Speech in chunks -> motion frames as soon as they are final: the front end and the window runner in series."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import numpy as np
import torch

from talkhead.audio.features import FeatureStream
from talkhead.motion.model import MotionModel


_SILENT_STARTS: dict[tuple, tuple[FeatureStream, torch.Tensor]] = {}


def _after_silence(stream: FeatureStream, frames: int) -> tuple[FeatureStream, torch.Tensor]:
    """``stream`` fed ``frames`` of silence, and the rows that gives: the same every time for one front end and
    blocking, so it is computed once per process (live speech: 5 Whisper runs, 50-80 ms off the first frame)."""
    key = (stream.cfg, stream.block, stream.ctx, stream.right, frames)
    if key not in _SILENT_STARTS:
        rows = stream.push(np.zeros(frames * stream.hop, np.float32))
        _SILENT_STARTS[key] = (copy.deepcopy(stream), rows)
    primed, rows = _SILENT_STARTS[key]
    return copy.deepcopy(primed), rows.clone()


class MotionStream:
    """Push 16 kHz audio as it arrives, get motion [m, 58] in rig units; ``flush`` at the end of speech.

    Offline motion is this stream fed the whole recording, so for the same seed a stream gives the
    same frames however the audio is chunked. Latency: a frame is out once its window's 80 frames of
    features are (3.2 s of speech), and features wait for ``block_s`` + ``context_s`` of audio.
    """

    def __init__(self, model: MotionModel, seed: int = 0, steps: int | None = None, sampler: str | None = None,
                 guidance: float = 1.0, block_s: float = 28.0, context_s: float = 1.0,
                 tail: np.ndarray | None = None, lookahead: int | None = None, right_s: float | None = None,
                 step: int = 2, window: int | None = None) -> None:
        self.model = model
        self.features = FeatureStream(model.features, block_s, context_s, right_s)
        # Initial noise from the seed, window by window; stochastic samplers get their own stream.
        noise = torch.Generator().manual_seed(seed)
        extra = torch.Generator().manual_seed(seed + 1_000_003)
        self.runner = model.runner(noise, steps, sampler, guidance, generator=extra, lookahead=lookahead, step=step,
                                   window=window)
        self._skip, self._early = 0, None
        if tail is not None:
            # Motion already shown (rig units, at least the window overlap) before this speech. It becomes
            # the first window's tail, standing for the frames just before the speech, as in training:
            # the window starts that many frames early, over silence, and those frames are not output.
            n = model.cfg.tail
            t = torch.as_tensor(np.asarray(tail, np.float32)[-n:])
            self.runner.continue_from(model.norm.motion(t)[None])
            self.features, self._early = _after_silence(self.features, n)
            self._skip = n

    def push(self, samples: np.ndarray) -> Iterator[np.ndarray]:
        """More audio -> motion blocks [m, 58], one per window as it is sampled (so a caller can draw it)."""
        yield from self._windows(self._rows(self.features.push(samples)))

    def flush(self) -> Iterator[np.ndarray]:
        """The end of speech: the remaining motion."""
        yield from self._windows(self._rows(self.features.flush()))
        yield self._motion(self.runner.flush())

    def _windows(self, rows: torch.Tensor) -> Iterator[np.ndarray]:
        if self._early is not None:  # feature rows the silent lead-in completed (short blocks)
            rows, self._early = torch.cat([self._rows(self._early), rows], 1), None
        hop = self.runner.hop  # at most one window per slice
        for s in range(0, rows.shape[1], hop):
            out = self.runner.push(rows[:, s:s + hop])
            if out.shape[1]:
                yield self._motion(out)

    def _motion(self, frames: torch.Tensor) -> np.ndarray:
        drop = min(self._skip, frames.shape[1])  # the frames of the tail's own time (see __init__)
        self._skip -= drop
        return self.model.norm.motion_inverse(frames[:, drop:])[0].numpy()

    def _rows(self, feats: torch.Tensor) -> torch.Tensor:
        return self.model.norm.audio(feats)[None]

