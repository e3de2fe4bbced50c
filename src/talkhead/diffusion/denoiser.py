"""The parameterisation wrapper (as EDM's preconditioner): any network in, an x0 predictor out.

The network is called as ``net(x_t, t, cond)`` with ``cond`` a mapping of whatever conditioning it
reads (audio and reference motion for the motion model; reference latents for a face model); the
wrapper never looks inside it. Whatever the network outputs (x0, eps or v), callers get x0, so
samplers, losses and distillation are written once in x0 form.
"""

from __future__ import annotations

from collections.abc import Mapping

from torch import Tensor, nn

from talkhead.diffusion.schedule import NoiseSchedule

PREDICTIONS = ("x0", "eps", "v")


class Denoiser(nn.Module):
    """``net`` wrapped so that ``denoiser(x_t, t, cond)`` returns x0, whatever ``prediction`` it outputs."""

    def __init__(self, net: nn.Module, schedule: NoiseSchedule, prediction: str | None = None) -> None:
        super().__init__()
        self.net = net
        self.schedule = schedule
        # Default: what the network's own config says it outputs (checkpoints record it there).
        self.prediction = prediction or getattr(getattr(net, "cfg", None), "prediction", "x0")
        if self.prediction not in PREDICTIONS:
            raise ValueError(f"unknown prediction type {self.prediction!r}; expected one of {PREDICTIONS}")

    def forward(self, x: Tensor, t: Tensor, cond: Mapping[str, Tensor]) -> Tensor:
        """Predict x0 (x's shape) from x_t at integer (or fractional) timesteps t [B]."""
        out = self.net(x, t, cond)
        if self.prediction == "x0":
            return out
        abar = self.schedule.abar(t).to(x).reshape((-1,) + (1,) * (x.dim() - 1))
        alpha, sigma = abar.sqrt(), (1 - abar).sqrt()
        if self.prediction == "eps":
            return (x - sigma * out) / alpha.clamp_min(1e-4)
        return alpha * x - sigma * out


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())
