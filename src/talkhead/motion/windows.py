"""Sliding windows over speech: 80 frames with a 10-frame overlap, fused with a cross-fade.

Each window is conditioned on the first frames of itself as the previous window generated them,
so it continues that motion; windows are therefore sequential. ``WindowRunner`` runs them as the
conditioning arrives: a window runs once its 80 frames of features are in (or, at the end, padded
with silence), and the 70 frames before its overlap are final from then on. Offline sampling is the
same runner fed everything at once, so a stream and a whole clip give the same motion.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def window_starts(n_frames: int, window: int = 80, overlap: int = 10) -> list[int]:
    """Start frame of each window; the last one may run past the clip (padded)."""
    hop = window - overlap
    starts = [0]
    while starts[-1] + window < n_frames:
        starts.append(starts[-1] + hop)
    return starts


def crossfade_weights(overlap: int) -> Tensor:
    """Weight of the new window over the overlap: rises from ~0 to ~1, [overlap]."""
    return (torch.arange(overlap, dtype=torch.float32) + 0.5) / overlap


# window_fn(start, conditioning window [B, W, A], tail [B, overlap, D] or None, noise [B, W, D]) -> [B, W, D]
WindowFn = Callable[[int, Tensor, Tensor | None, Tensor], Tensor]


class WindowRunner:
    """Conditioning rows in (any chunking), final motion frames out, window by window."""

    def __init__(self, window_fn: WindowFn, noise_fn: Callable[[int], Tensor], pad_row: Tensor, dim: int,
                 window: int = 80, overlap: int = 10) -> None:
        # pad_row [A]: the conditioning past the end (silence); dim: the motion channels.
        self.window_fn, self.noise_fn, self.pad_row, self.dim = window_fn, noise_fn, pad_row, dim
        self.window, self.overlap, self.hop = window, overlap, window - overlap
        self._cond: Tensor | None = None  # rows from frame self._start on
        self._start = 0  # the frame the next window starts at
        self._k = 0  # the next window's index
        self._tail: Tensor | None = None  # the previous window's overlap, not yet final
        self._received = 0
        self._emitted = 0

    def continue_from(self, tail: Tensor) -> None:
        """Before the first window: ``tail`` [B, overlap, D] stands for a previous window's end, so the
        first window is conditioned on it and cross-fades out of it (a live face going from idle to speech)."""
        if self._k:
            raise ValueError("continue_from goes before the first window")
        self._tail = tail

    def push(self, rows: Tensor) -> Tensor:
        """Conditioning rows [B, n, A] -> the motion frames they complete, [B, m, D] (m may be 0)."""
        self._cond = rows if self._cond is None else torch.cat([self._cond, rows], 1)
        self._received += rows.shape[1]
        out = []
        while self._cond.shape[1] >= self.window:
            out.append(self._run(self._cond[:, : self.window]))
        return self._emit(out)

    def flush(self) -> Tensor:
        """The end of the conditioning: the remaining windows (padded), then the last overlap, cut to length."""
        if self._cond is None:
            raise ValueError("no conditioning was pushed")
        out, n = [], self._received
        while self._k == 0 or self._start - self.hop + self.window < n:  # the windows window_starts(n) lists
            have = self._cond[:, : self.window]
            pad = self.pad_row.to(have).expand(have.shape[0], self.window - have.shape[1], -1)
            out.append(self._run(torch.cat([have, pad], 1)))
        out.append(self._tail)
        return self._emit(out, limit=n - self._emitted)

    def _run(self, cond: Tensor) -> Tensor:
        y = self.window_fn(self._start, cond, self._tail, self.noise_fn(self._k))
        if self._tail is not None:
            ramp = crossfade_weights(self.overlap).to(y)[None, :, None]
            y = y.clone()
            y[:, : self.overlap] = (1 - ramp) * self._tail + ramp * y[:, : self.overlap]
        self._tail = y[:, self.hop :].clone()
        self._cond = self._cond[:, self.hop :]
        self._start += self.hop
        self._k += 1
        return y[:, : self.hop]

    def _emit(self, out: list[Tensor], limit: int | None = None) -> Tensor:
        if out:
            frames = torch.cat(out, 1)[:, :limit]
        else:
            b = 1 if self._cond is None else self._cond.shape[0]
            frames = torch.zeros(b, 0, self.dim)
        self._emitted += frames.shape[1]
        return frames


def run_windows(rows: Tensor, window_fn: WindowFn, noise: Tensor, pad_row: Tensor, window: int = 80,
                overlap: int = 10) -> Tensor:
    """A whole clip at once: conditioning [B, T, A] and per-window noise [B, K, W, D] -> motion [B, T, D]."""
    k = len(window_starts(rows.shape[1], window, overlap))
    if noise.shape[1] < k:
        raise ValueError(f"need noise for {k} windows, got {noise.shape[1]}")
    runner = WindowRunner(window_fn, lambda i: noise[:, i], pad_row, noise.shape[-1], window, overlap)
    return torch.cat([runner.push(rows), runner.flush()], 1)


class LowLatencyRunner(WindowRunner):
    """Live client speech: a window every ``step`` frames, each emitting ``step`` new frames after its tail.

    Each window is conditioned on the ``overlap`` frames emitted just before its new ones and runs once
    ``lookahead`` frames of conditioning beyond them have arrived; the rest of its 80 frames is padded
    with silence. A frame is then out ``lookahead`` + ``step`` frames after its audio instead of up to
    a whole window (3.2 s) later, for a window per ``step`` frames and less future context for the
    lips. (With no tail, the first window emits ``overlap`` frames.) Same interface as ``WindowRunner``.
    """

    def __init__(self, window_fn: WindowFn, noise_fn: Callable[[int], Tensor], pad_row: Tensor, dim: int,
                 window: int = 80, overlap: int = 10, lookahead: int = 4, step: int = 2) -> None:
        super().__init__(window_fn, noise_fn, pad_row, dim, window, overlap)
        self.lookahead, self.step, self.hop = lookahead, step, step  # hop: rows a caller may push at once

    def _new(self) -> tuple[int, int]:
        """The frames the next window emits, [lo, hi) relative to its start."""
        return (0, self.overlap) if self._tail is None else (self.overlap, self.overlap + self.step)

    def push(self, rows: Tensor) -> Tensor:
        self._cond = rows if self._cond is None else torch.cat([self._cond, rows], 1)
        self._received += rows.shape[1]
        out = []
        while self._cond.shape[1] >= self._new()[1] + self.lookahead:
            out.append(self._run())
        return self._emit(out)

    def flush(self) -> Tensor:
        if self._cond is None:
            raise ValueError("no conditioning was pushed")
        out = []
        while self._emitted + sum(o.shape[1] for o in out) < self._received:
            out.append(self._run())
        return self._emit(out, limit=self._received - self._emitted)

    def _span(self) -> int:
        """The frames the next window covers (those past the conditioning that is in are silence)."""
        return self.window

    def _run(self) -> Tensor:
        span = self._span()
        have = self._cond[:, :span]
        pad = self.pad_row.to(have).expand(have.shape[0], span - have.shape[1], -1)
        lo, hi = self._new()
        y = self.window_fn(self._start, torch.cat([have, pad], 1), self._tail, self.noise_fn(self._k))
        new = y[:, lo:hi]
        if self._k == 0 and self._tail is not None:  # a given tail counts as frames [0, overlap), as in WindowRunner
            new = torch.cat([self._tail, new], 1)
        self._tail = y[:, hi - self.overlap: hi].clone()
        # The next window starts where this one's new frames end, minus the tail it is conditioned on.
        advance = hi - self.overlap
        self._cond, self._start, self._k = self._cond[:, advance:], self._start + advance, self._k + 1
        return new


class RampRunner(LowLatencyRunner):
    """A say spoken as it is synthesised: low-latency windows for its first frames, then full windows.

    Window k of the ramp emits ``steps[k]`` new frames once ``lookaheads[k]`` frames of conditioning
    beyond them are in (as ``LowLatencyRunner``), so the first frames are out a few frames after their
    audio; the steps grow, and after the last one every window is ``WindowRunner``'s: 80 frames, 70 new,
    cross-faded, the view the motion is sampled with offline. The first full window is conditioned on
    the ramp's last (already emitted) frames, so the frames of its overlap are not emitted again.

    Noise: steps summing to the hop (70) put the full windows where offline sampling has its windows, and
    each full window takes the noise the offline window there takes (the k-th draw); the ramp's windows take,
    frame by frame, the noise of the offline windows their frames fall in. With the same audio the motion
    then meets the offline motion again after the ramp: jawOpen r 0.98 over four says of joe, against
    0.93-0.94 with noise drawn window by window, about what another seed of the offline motion gives
    (0.93-0.955).
    """

    def __init__(self, window_fn: WindowFn, noise_fn: Callable[[int], Tensor], pad_row: Tensor, dim: int,
                 window: int = 80, overlap: int = 10, steps: tuple[int, ...] = (8, 8, 16, 38),
                 lookaheads: tuple[int, ...] = (1, 2, 4, 10)) -> None:
        if not steps or len(steps) != len(lookaheads) or sum(steps) > window - overlap:
            raise ValueError(f"a ramp needs as many lookaheads as steps, and steps that sum to at most "
                             f"{window - overlap}: got {steps}, {lookaheads}")
        super().__init__(window_fn, noise_fn, pad_row, dim, window, overlap, lookaheads[0], steps[0])
        self.steps, self.lookaheads = tuple(steps), tuple(lookaheads)
        self._ramp = 0  # low-latency windows run so far
        self._handover = False  # the next full window's overlap was emitted by the ramp
        # The offline windows' first two noise draws, as one track over frames [0, window + hop).
        first, second = noise_fn(0), noise_fn(1)
        self._track, self._second = torch.cat([first, second[:, overlap:]], 1), second
        self.noise_fn = lambda k: self._noise(k, noise_fn)

    def _noise(self, k: int, draw: Callable[[int], Tensor]) -> Tensor:
        if self.ramping:
            return self._track[:, self._start:self._start + self._span()]
        if self._handover:  # the first full window: the second offline window's draw
            return self._second
        return draw(k - len(self.steps) + 1)  # the offline index of this window

    @property
    def ramping(self) -> bool:
        return self._ramp < len(self.steps)

    def _span(self) -> int:
        # A ramp window covers the rows it waits for and no more, so its frames depend on the speech alone,
        # not on how far the synthesis has got (how the rows arrived). Not padding it to 80 frames with
        # silence gave the same lips (jawOpen r 0.980 over four says of joe) at less compute: 17 frames
        # for the first window.
        return min(self.window, self._new()[1] + self.lookahead)

    def push(self, rows: Tensor) -> Tensor:
        self._cond = rows if self._cond is None else torch.cat([self._cond, rows], 1)
        self._received += rows.shape[1]
        out = []
        while (self._cond.shape[1] >= self._new()[1] + self.lookahead if self.ramping
               else self._cond.shape[1] >= self.window):
            out.append(self._run())
        return self._emit(out)

    def flush(self) -> Tensor:
        if self._cond is None:
            raise ValueError("no conditioning was pushed")
        out, n = [], self._received
        while self.ramping and self._emitted + sum(o.shape[1] for o in out) < n:
            out.append(self._run())  # the speech ended within the ramp: its windows pad with silence
        while not self.ramping and self._start + self.overlap < n:  # frames past the last tail
            have = self._cond[:, : self.window]
            pad = self.pad_row.to(have).expand(have.shape[0], self.window - have.shape[1], -1)
            out.append(self._run(torch.cat([have, pad], 1)))
        if not self.ramping and not self._handover:
            out.append(self._tail)  # a full window's tail is not out yet (the ramp's last one is)
        return self._emit(out, limit=n - self._emitted)

    def _run(self, cond: Tensor | None = None) -> Tensor:
        if self.ramping:
            new = LowLatencyRunner._run(self)
            self._ramp += 1
            if self.ramping:
                self.step, self.lookahead = self.steps[self._ramp], self.lookaheads[self._ramp]
                self.hop = self.step
            else:
                self.hop, self._handover = self.window - self.overlap, True
            return new
        y = WindowRunner._run(self, self._cond[:, : self.window] if cond is None else cond)
        if self._handover:  # its first frames are the ramp's last, shown already
            self._handover = False
            return y[:, self.overlap:]
        return y
