"""The frame stage of a stream: motion rows in, video frames out, in batches fixed by frame index.

Batches start at multiples of ``batch`` (in frames, or in keyframes with a cadence), so a stream
renders the same batches, and so the same pixels, however its motion arrived. With ``stride`` K only
every K-th frame (and the last) is rendered and the frames between are blended from their two
keyframes (MuseTalk's cadence; ``rig.cadence``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from talkhead.render import Renderer


class FrameStage:
    def __init__(self, renderer: Renderer, stride: int = 1, batch: int = 32) -> None:
        if stride < 1:
            raise ValueError("cadence stride must be >= 1")
        self.renderer, self.stride = renderer, stride
        self.batch = batch if stride == 1 else max(1, batch // stride)  # keyframes per render call
        self._motion = np.zeros((0, 0), np.float32)  # rows from frame self._base on
        self._base = 0
        self._prev: tuple[int, np.ndarray] | None = None  # the last keyframe rendered: (index, image)

    def push(self, motion: np.ndarray) -> Iterator[np.ndarray]:
        """Motion rows [m, 58] -> the frames that can be drawn now."""
        motion = np.asarray(motion, np.float32)
        self._motion = motion if self._motion.size == 0 else np.concatenate([self._motion, motion])
        span = self.batch * self.stride  # frames one render call covers
        while len(self._motion) > span or (self.stride == 1 and len(self._motion) >= span):
            yield from self._draw(span)

    def flush(self) -> Iterator[np.ndarray]:
        """The end of the motion: draw what is left (the last frame is always a keyframe)."""
        while len(self._motion):
            yield from self._draw(min(len(self._motion), self.batch * self.stride), last=True)

    def _draw(self, n: int, last: bool = False) -> Iterator[np.ndarray]:
        rows = self._motion[:n]
        if self.stride == 1:
            yield from self.renderer.frames(rows, self.batch)
        else:
            yield from self._cadence(rows, final=last and n == len(self._motion))
        self._motion, self._base = self._motion[n:], self._base + n

    def _cadence(self, rows: np.ndarray, final: bool) -> Iterator[np.ndarray]:
        # Keyframes: global multiples of the stride in these rows, and the very last frame at the end.
        idx = [i for i in range(len(rows)) if (self._base + i) % self.stride == 0]
        if final and (not idx or idx[-1] != len(rows) - 1):
            idx.append(len(rows) - 1)
        keys = list(self.renderer.frames(rows[idx], max(1, len(idx))))
        for i, key in zip(idx, keys):
            g = self._base + i
            if self._prev is not None:
                p, prev = self._prev
                a = prev.astype(np.float32)
                for j in range(p + 1, g):
                    w = (j - p) / (g - p)
                    yield np.round(a + w * (key.astype(np.float32) - a)).astype(np.uint8)
            yield key
            self._prev = (g, key)
