"""The discrete-time noise schedule shared by training, sampling and distillation, whatever the data."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from torch import Tensor

_SPACINGS = ("trailing", "leading", "linspace")


def _cosine_alpha_bar(u: float) -> float:
    # Nichol & Dhariwal 2021, eq. 17 with s = 0.008; the 1.008 denominator makes f(0) = 1.
    return math.cos((u + 0.008) / 1.008 * math.pi / 2) ** 2


@dataclass(frozen=True)
class NoiseSchedule:
    """Variance-preserving DDPM schedule q(x_t | x0) = N(alpha_t x0, sigma_t^2 I) (Ho et al. 2020)."""

    num_train_timesteps: int = 1000
    kind: str = "cosine"

    def __post_init__(self) -> None:
        if self.kind != "cosine":
            raise ValueError(f"unknown schedule kind {self.kind!r}; only 'cosine' is supported")
        if not 1 <= self.num_train_timesteps <= 100_000:  # a file's metadata sets it: bounded before it sizes tensors
            raise ValueError(f"num_train_timesteps must be 1..100000, not {self.num_train_timesteps}")

    # cached_property writes into the instance __dict__, which a frozen dataclass still has,
    # so the tensors are built once per schedule instead of once per sampler step.
    @cached_property
    def betas(self) -> Tensor:
        """Per-step betas, float64 [T]; identical to diffusers' "squaredcos_cap_v2"."""
        n = self.num_train_timesteps
        # Computed in Python floats like diffusers' betas_for_alpha_bar, so that casting to
        # float32 reproduces its betas bit for bit; 0.999 caps the singular last step.
        b = [min(1.0 - _cosine_alpha_bar((i + 1) / n) / _cosine_alpha_bar(i / n), 0.999) for i in range(n)]
        return torch.tensor(b, dtype=torch.float64)

    @cached_property
    def alphas_cumprod(self) -> Tensor:
        """abar_t = prod_{s<=t} (1 - beta_s), float64 [T]."""
        return torch.cumprod(1.0 - self.betas, dim=0)

    @cached_property
    def _abar_f32(self) -> Tensor:
        return self.alphas_cumprod.float()

    def abar(self, t: Tensor | int | list[int]) -> Tensor:
        """abar at timesteps ``t`` [B], float32 on t's device: what denoisers and distillation targets use
        (``alpha_sigma``/``snr`` keep float64 at integer steps for the forward process).

        Fractional t (a student between grid points) interpolates linearly between neighbours;
        t < 0 stands for the clean end point, abar = 1, where a sampler's last step lands.
        """
        t = torch.as_tensor(t)
        table = self._abar_f32.to(t.device)
        tc = t.float().clamp(0, len(table) - 1)
        lo = tc.floor().long()
        hi = (lo + 1).clamp_max(len(table) - 1)
        w = tc - lo.float()
        a = table[lo] * (1 - w) + table[hi] * w
        return torch.where(t < 0, torch.ones_like(a), a)

    def _abar(self, t: Tensor | int) -> Tensor:
        t = torch.as_tensor(t, dtype=torch.long)
        if (t < 0).any() or (t >= self.num_train_timesteps).any():
            raise ValueError(f"timesteps must lie in [0, {self.num_train_timesteps - 1}]")
        return self.alphas_cumprod[t.cpu()]

    def alpha_sigma(self, t: Tensor | int) -> tuple[Tensor, Tensor]:
        """(alpha_t, sigma_t) = (sqrt(abar_t), sqrt(1 - abar_t)) for integer timesteps, float64."""
        abar = self._abar(t)
        return abar.sqrt(), (1.0 - abar).sqrt()

    def snr(self, t: Tensor | int) -> Tensor:
        """Signal-to-noise ratio abar_t / (1 - abar_t), float64."""
        abar = self._abar(t)
        return abar / (1.0 - abar)

    def add_noise(self, x0: Tensor, noise: Tensor, t: Tensor) -> Tensor:
        """Sample q(x_t | x0) = alpha_t x0 + sigma_t noise; t is [B] and broadcasts over x0's trailing dims."""
        alpha, sigma = self.alpha_sigma(t)
        shape = (-1,) + (1,) * (x0.dim() - 1)
        alpha = alpha.to(device=x0.device, dtype=x0.dtype).reshape(shape)
        sigma = sigma.to(device=x0.device, dtype=x0.dtype).reshape(shape)
        return alpha * x0 + sigma * noise

    def timesteps(self, steps: int, spacing: str = "trailing") -> list[int]:
        """Descending inference timesteps, spaced as in diffusers' DDIMScheduler (Lin et al. 2024, table 2)."""
        n = self.num_train_timesteps
        if not 1 <= steps <= n:
            raise ValueError(f"steps must be in [1, {n}], got {steps}")
        if spacing == "trailing":
            # Starts at T-1, so the first step sees (almost) pure noise, as at training time.
            # np.arange itself (not n - i*n/steps) so .5 ties round exactly as in diffusers; the
            # [:steps] drops the spurious trailing -1 that float round-off gives for e.g. steps=61.
            ts = np.round(np.arange(n, 0, -n / steps)[:steps]).astype(np.int64) - 1
        elif spacing == "leading":
            ts = (np.arange(0, steps) * (n // steps))[::-1].astype(np.int64)
        elif spacing == "linspace":
            ts = np.linspace(0, n - 1, steps).round()[::-1].astype(np.int64)
        else:
            raise ValueError(f"unknown spacing {spacing!r}; expected one of {_SPACINGS}")
        return [int(t) for t in ts]
