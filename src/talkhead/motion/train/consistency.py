"""Consistency distillation (Song et al. 2023): a one-step student whose x0 at t_{n+1} matches its own
EMA target network's at t_n, where x_{t_n} comes from one teacher DDIM step."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from talkhead.diffusion.losses import consistency_loss
from talkhead.diffusion.samplers import ddim_step
from talkhead.motion.data.windows import WindowSampler
from talkhead.motion.model import MotionModel
from talkhead.motion.train.configs import ConsistencyConfig
from talkhead.train.loop import FitConfig, fit


class ConsistencyObjective:
    """Its target network is part of its state: ``fit`` checkpoints and restores it."""

    def __init__(self, teacher: MotionModel, sampler: WindowSampler, grid: list[int], cfg: ConsistencyConfig) -> None:
        self.teacher, self.sampler, self.full, self.cfg = teacher, sampler, grid + [-1], cfg
        self.target = copy.deepcopy(teacher.denoiser).requires_grad_(False)

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        cfg, schedule = self.cfg, self.teacher.schedule
        cond = self.sampler.sample(cfg.batch, gen)
        x0 = cond.pop("x0")
        idx = torch.randint(0, len(self.full) - 1, (cfg.batch,), generator=gen)
        noise = torch.randn(x0.shape, generator=gen)
        t, s = torch.tensor([self.full[i] for i in idx]), torch.tensor([self.full[i + 1] for i in idx])
        x_t = schedule.add_noise(x0, noise, t)
        with torch.no_grad():
            a_t, a_s = schedule.abar(t)[:, None, None], schedule.abar(s)[:, None, None]
            x_s = ddim_step(self.teacher.denoiser(x_t, t, cond), x_t, a_t, a_s)
            # At the clean end the teacher's step is already the answer: the boundary condition.
            target = torch.where((s < 0)[:, None, None], x_s, self.target(x_s, s.clamp_min(0), cond))
        return consistency_loss(module(x_t, t, cond), target)

    @torch.no_grad()
    def after_step(self, module: nn.Module) -> None:
        for pt, p in zip(self.target.parameters(), module.parameters()):
            pt.lerp_(p, 1 - self.cfg.ema)

    def state_dict(self) -> dict:
        return self.target.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.target.load_state_dict(state)


def consistency_distill(teacher: MotionModel, grid: list[int], sampler: WindowSampler, cfg: ConsistencyConfig,
                        progress: bool = True, state=None) -> tuple[MotionModel, list[float]]:
    """A one-step student at ``grid[0]``, trained from the teacher's weights."""
    student = copy.deepcopy(teacher)
    student.denoiser.train()
    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, seed=cfg.seed + 7, ckpt_every=50)
    result = fit(student.denoiser, ConsistencyObjective(teacher, sampler, grid, cfg), fit_cfg, state,
                 resume=state is not None and state.is_file(), desc="consistency", progress=progress)
    student.denoiser.eval()
    student.sampling = {"sampler": "ddim", "timesteps": [grid[0]]}
    return student, result.losses
