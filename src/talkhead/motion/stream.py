"""Speech in chunks -> motion frames as soon as they are final: the front end and the window runner in series."""

from __future__ import annotations

import numpy as np
import torch

from talkhead.audio.features import FeatureStream
from talkhead.motion.model import MotionModel


class MotionStream:
    """Push 16 kHz audio as it arrives, get motion [m, 58] in rig units; ``flush`` at the end of speech.

    Offline motion is this stream fed the whole recording, so for the same seed a stream gives the
    same frames however the audio is chunked. Latency: a frame is out once its window's 80 frames of
    features are (3.2 s of speech), and features wait for ``block_s`` + ``context_s`` of audio.
    """

    def __init__(self, model: MotionModel, seed: int = 0, steps: int | None = None, sampler: str | None = None,
                 guidance: float = 1.0, block_s: float = 28.0, context_s: float = 1.0) -> None:
        self.model = model
        self.features = FeatureStream(model.features, block_s, context_s)
        # Initial noise from the seed, window by window; stochastic samplers get their own stream.
        noise = torch.Generator().manual_seed(seed)
        extra = torch.Generator().manual_seed(seed + 1_000_003)
        self.runner = model.runner(noise, steps, sampler, guidance, generator=extra)

    def push(self, samples: np.ndarray) -> np.ndarray:
        return self._motion(self.runner.push(self._rows(self.features.push(samples))))

    def flush(self) -> np.ndarray:
        last = self.runner.push(self._rows(self.features.flush()))
        return self._motion(torch.cat([last, self.runner.flush()], 1))

    def _rows(self, feats: torch.Tensor) -> torch.Tensor:
        return self.model.norm.audio(feats)[None]

    def _motion(self, frames: torch.Tensor) -> np.ndarray:
        return self.model.norm.motion_inverse(frames)[0].numpy()
