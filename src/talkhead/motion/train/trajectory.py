"""Trajectory distillation: a student's whole N-step run regressed onto the teacher's S = 50 output.

Progressive rounds each match two steps of the previous model, so their small errors compound
down the chain, and every round targets the teacher's start grid, not its S = 50 sampler. Here
the end point itself is the target (Luhman & Luhman 2021, generalised from one step to N): the
teacher samples windows from fixed noise once (stored, ``diffusion.pairs``), and the student's
N-step DDIM run from the same noise is back-propagated through all N steps onto the teacher's
motion. It refines a progressive student rather than starting cold.
"""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import Tensor, nn

from talkhead.diffusion.losses import trajectory_loss
from talkhead.diffusion.pairs import PairsConfig, fingerprint, stored_samples
from talkhead.diffusion.samplers import sample_ddim
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler
from talkhead.motion.model import MotionModel
from talkhead.train.loop import FitConfig, fit

COND_KEYS = ("audio", "ref", "tail", "has_tail")


def teacher_pairs(teacher: MotionModel, sampler: WindowSampler, directory: str | Path, cfg: PairsConfig,
                  tag: str = "train", progress: bool = True) -> dict[str, Tensor]:
    """``cfg.windows`` corpus windows with fresh noise and the teacher's S-step DDIM output, stored under ``directory``."""
    def make_chunk(n: int, seed: int) -> dict[str, Tensor]:
        gen = torch.Generator().manual_seed(seed)
        batch = sampler.sample(n, gen)
        noise = torch.randn(batch["x0"].shape, generator=gen)
        cond = {k: batch[k] for k in COND_KEYS}
        with torch.no_grad():
            target = teacher.ddim(cond, noise, teacher.schedule.timesteps(cfg.teacher_steps, "trailing"))
        return {"noise": noise, "target": target, **cond}

    meta = {"teacher": fingerprint(teacher.denoiser.net.state_dict().values()), "data": fingerprint(sampler.motion)}
    return stored_samples(make_chunk, directory, cfg, meta, tag, progress)


def _run(denoiser: nn.Module, schedule, timesteps: list[int], pairs: dict[str, Tensor], idx: Tensor) -> Tensor:
    cond = {k: pairs[k][idx] for k in COND_KEYS}
    return sample_ddim(lambda x, t: denoiser(x, t, cond), pairs["noise"][idx], schedule, timesteps)


def student_run(student: MotionModel, pairs: dict[str, Tensor], idx: Tensor) -> Tensor:
    """The student's own N-step DDIM from the stored noise of windows ``idx``: [len(idx), W, 58]."""
    return _run(student.denoiser, student.schedule, student.timesteps(), pairs, idx)


@torch.no_grad()
def pairs_mse(student: MotionModel, pairs: dict[str, Tensor], batch: int = 256) -> float:
    """Mean squared error of the student's output against the stored teacher output, all windows."""
    student.denoiser.eval()
    total, n = 0.0, len(pairs["noise"])
    for s in range(0, n, batch):
        idx = torch.arange(s, min(n, s + batch))
        total += (student_run(student, pairs, idx) - pairs["target"][idx]).pow(2).sum().item()
    return total / pairs["target"].numel()


class TrajectoryObjective:
    def __init__(self, student: MotionModel, pairs: dict[str, Tensor], batch: int, velocity: float) -> None:
        self.schedule, self.timesteps = student.schedule, student.timesteps()
        self.pairs, self.batch, self.velocity = pairs, batch, velocity

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        idx = torch.randint(0, len(self.pairs["noise"]), (self.batch,), generator=gen)
        out = _run(module, self.schedule, self.timesteps, self.pairs, idx)
        return trajectory_loss(out, self.pairs["target"][idx], self.velocity)


def trajectory_refine(student: MotionModel, pairs: dict[str, Tensor], iters: int, batch: int, lr: float,
                      velocity: float = 0.0, seed: int = 0, progress: bool = True, state=None
                      ) -> tuple[MotionModel, list[float]]:
    """Fine-tune a copy of ``student`` so its N-step output matches the stored teacher output."""
    if iters < 1:
        raise InputError("trajectory distillation needs --iters >= 1")
    student = copy.deepcopy(student)
    student.denoiser.train()
    fit_cfg = FitConfig(steps=iters, lr=lr, seed=seed + 11, ckpt_every=50)
    result = fit(student.denoiser, TrajectoryObjective(student, pairs, batch, velocity), fit_cfg, state,
                 resume=state is not None and state.is_file(), desc=f"trajectory {len(student.timesteps())}-step",
                 progress=progress)
    student.denoiser.eval()
    return student, result.losses
