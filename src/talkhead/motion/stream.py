"""Speech in chunks -> motion frames as soon as they are final: the front end and the window runner in series."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from talkhead.audio.features import FeatureStream
from talkhead.config import MotionConfig
from talkhead.motion.model import MotionModel

_SILENT_STARTS: dict[tuple, tuple[FeatureStream, torch.Tensor]] = {}


def _after_silence(stream: FeatureStream, frames: int) -> tuple[FeatureStream, torch.Tensor]:
    """``stream`` fed ``frames`` of silence, and the rows that gives: the same every time for one front end and
    blocking, so it is computed once per process (live speech: 5 Whisper runs, 50-80 ms off the first frame)."""
    key = (stream.cfg, stream.block, stream.ctx, stream.right, stream.first, stream.precision, frames)
    if key not in _SILENT_STARTS:
        rows = stream.push(np.zeros(frames * stream.hop, np.float32))
        _SILENT_STARTS[key] = (copy.deepcopy(stream), rows)
    primed, rows = _SILENT_STARTS[key]
    return copy.deepcopy(primed), rows.clone()


@dataclass(frozen=True)
class Ramp:
    """How a say's first frames come out before the offline view takes over (``RampRunner``): the new frames
    of each low-latency window, the frames of features each waits for beyond them, and the audio after
    each window's feature block that the block waits for (all in frames). The steps grow, so that the
    speech synthesised meanwhile keeps ahead of the face.

    The defaults: the first frame is out once 10 frames of speech are in (0.4 s), and the first window
    gives 8 frames, time enough for the next piece of a Piper sentence to come (a first window of 6 frames
    left a 80 ms stall at its end in 2 of 6 says on two busy cores, of 8 in none). jawOpen r against the
    offline motion of the same audio, nine says of joe (1.3-13 s): 0.974, the lowest 0.94; its four says
    of two to six sentences: 0.981 (Piper's noise differs run to run: 0.976-0.981 over three runs), where
    4 s blocks without a ramp gave 0.988-0.993 but their first frame only after 5 s of speech or the whole
    say. us-female, the same four: 0.961 against 0.980."""

    steps: tuple[int, ...] = (8, 8, 16, 38)  # sum 70: the full windows then sit where offline ones do
    lookaheads: tuple[int, ...] = (1, 2, 4, 10)
    rights: tuple[int, ...] = (1, 2, 4, 12)

    def blocks(self, start: int) -> tuple[tuple[int, int], ...]:
        """The feature blocks the windows need, (end, context after), for speech from frame ``start`` on."""
        out, done = [], start
        for step, ahead, right in zip(self.steps, self.lookaheads, self.rights):
            done += step
            out.append((done + ahead, right))
        return tuple(out)


@dataclass(frozen=True)
class Hearing:
    """How a motion stream hears speech. The defaults are offline: 28 s feature blocks with 1 s of context each
    side, whole windows. Live speech hears short blocks (``block_s``, ``context_s`` before, ``right_s`` after)
    and samples low-latency windows (``lookahead`` frames of features past the ``step`` new frames of each,
    ``window`` frames long; ``motion.model.LowLatencyRunner``); a live student's own view is
    ``serve.session.live_hearing``. ``precision``: the Whisper encoder's ("float32" or "int8"). ``ramp``: speech
    that arrives faster than it is spoken (a say being synthesised), its first frames from short windows over
    short blocks (``Ramp``); it continues from motion shown before."""

    block_s: float = 28.0
    context_s: float = 1.0
    right_s: float | None = None
    lookahead: int | None = None
    step: int = 2
    window: int | None = None
    precision: str = "float32"
    ramp: Ramp | None = None


OFFLINE = Hearing()


class MotionStream:
    """Push 16 kHz audio as it arrives, get motion [m, 58] in rig units; ``flush`` at the end of speech.

    Offline motion is this stream fed the whole recording, so for the same seed a stream gives the
    same frames however the audio is chunked. Latency: a frame is out once its window's 80 frames of
    features are (3.2 s of speech), and features wait for ``block_s`` + ``context_s`` of audio (``Hearing``).
    """

    def __init__(self, model: MotionModel, cfg: MotionConfig = MotionConfig(), hearing: Hearing = OFFLINE,
                 tail: np.ndarray | None = None) -> None:
        """``cfg``: the sampling (seed, steps, sampler, guidance); ``tail``: motion shown just before this speech,
        which it continues from (a live face)."""
        h = hearing
        if h.ramp is not None and (tail is None or h.lookahead is not None):
            raise ValueError("a ramp continues from a tail, and is not a lookahead runner")
        self.model = model
        first = () if h.ramp is None else h.ramp.blocks(model.cfg.tail)
        self.features = FeatureStream(model.hearing, h.block_s, h.context_s, h.right_s, first, h.precision)
        # Initial noise from the seed, window by window; stochastic samplers get their own stream.
        noise = torch.Generator().manual_seed(cfg.seed)
        extra = torch.Generator().manual_seed(cfg.seed + 1_000_003)
        self.runner = model.runner(noise, cfg.steps, cfg.sampler, cfg.guidance, generator=extra, lookahead=h.lookahead,
                                   step=h.step, window=h.window,
                                   ramp=None if h.ramp is None else (h.ramp.steps, h.ramp.lookaheads))
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
        s = 0
        while s < rows.shape[1]:  # at most one window per slice (a ramp's windows grow)
            hop = self.runner.hop
            out = self.runner.push(rows[:, s:s + hop])
            s += hop
            if out.shape[1]:
                yield self._motion(out)

    def _motion(self, frames: torch.Tensor) -> np.ndarray:
        drop = min(self._skip, frames.shape[1])  # the frames of the tail's own time (see __init__)
        self._skip -= drop
        return self.model.norm.motion_inverse(frames[:, drop:])[0].numpy()

    def _rows(self, feats: torch.Tensor) -> torch.Tensor:
        return self.model.norm.audio(feats)[None]


def motion_from_audio(model: MotionModel, wav: np.ndarray, cfg: MotionConfig = MotionConfig(),
                      chunk: int | None = None, hearing: Hearing = OFFLINE) -> np.ndarray:
    """Mono 16 kHz audio [N] -> motion [T, 58] at 25 fps, T = ceil(N / 640): a motion stream fed all at once,
    or ``chunk`` samples at a time as ``hearing`` hears it (e.g. a live session's, ``serve.session.live_hearing``)."""
    stream = MotionStream(model, cfg, hearing)
    step = chunk or max(1, len(wav))
    return np.concatenate([b for i in range(0, len(wav), step) for b in stream.push(wav[i:i + step])]
                          + list(stream.flush()))
