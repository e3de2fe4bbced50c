"""Progressive distillation (Salimans & Ho 2022), generalised: one student step does what ``factor``
(or an uneven list of) teacher steps do on the teacher's grid; rounds repeat down to ``to`` steps."""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

from talkhead.diffusion.losses import progressive_loss, segment_targets
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, warp_audio
from talkhead.motion.model import MotionModel, with_depth, with_experts
from talkhead.motion.train.configs import ProgressiveConfig
from talkhead.train.loop import FitConfig, fit


def segment_bounds(n_grid: int, cfg: ProgressiveConfig) -> list[int]:
    """Where each student step starts on the teacher's ``n_grid``-step grid, plus the end: [0, ..., n_grid]."""
    if cfg.segments is None:
        if cfg.factor < 2:
            raise InputError(f"a round merges at least 2 teacher steps into one (--factor {cfg.factor})")
        if n_grid % cfg.factor:
            raise InputError(f"a round merges {cfg.factor} steps into one; the {n_grid}-step grid is not a "
                             f"multiple of {cfg.factor}")
    segs = cfg.segments or (cfg.factor,) * (n_grid // cfg.factor)
    if min(segs) < 1 or sum(segs) != n_grid or len(segs) >= n_grid:
        raise InputError(f"--segments needs positive teacher step counts that add up to the {n_grid}-step grid "
                         f"in fewer student steps than that (got {list(segs)})")
    return [sum(segs[:i]) for i in range(len(segs) + 1)]


def step_weights(n: int, cfg: ProgressiveConfig) -> Tensor | None:
    if cfg.step_weights is None:
        return None
    w = torch.tensor(cfg.step_weights, dtype=torch.float64)
    if len(w) != n or (w < 0).any() or w.sum() <= 0:
        raise InputError(f"--step-weights needs {n} non-negative weights, one per student step, "
                         f"not all zero (got {list(cfg.step_weights)})")
    return w


def draw_steps(n: int, cfg: ProgressiveConfig, gen: torch.Generator) -> Tensor:
    """Which of a student's ``n`` steps each window of a batch trains: uniform, or by ``cfg.step_weights``."""
    w = step_weights(n, cfg)
    if w is None:
        return torch.randint(0, n, (cfg.batch,), generator=gen)
    return torch.multinomial(w, cfg.batch, replacement=True, generator=gen)


class ProgressiveObjective:
    """The student's x0 at each step's start matches the teacher's multi-step run, as one DDIM step."""

    def __init__(self, teacher: MotionModel, sampler: WindowSampler, starts: Tensor, paths: list[list[int]],
                 cfg: ProgressiveConfig) -> None:
        self.teacher, self.sampler, self.starts, self.paths, self.cfg = teacher, sampler, starts, paths, cfg

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        cfg, teacher = self.cfg, self.teacher
        cond = self.sampler.sample(cfg.batch, gen)
        x0 = cond.pop("x0")
        idx = draw_steps(len(self.paths), cfg, gen)
        noise = torch.randn(x0.shape, generator=gen)
        if cfg.warp:
            cond["audio"] = warp_audio(cond["audio"], teacher.norm, teacher.features, cfg.warp, gen)
        x_t = teacher.schedule.add_noise(x0, noise, self.starts[idx])
        target, a_t = segment_targets(teacher.denoiser, teacher.schedule, x_t, idx, self.paths, cond)
        return progressive_loss(module(x_t, self.starts[idx], cond), target, a_t, cfg.velocity)


def progressive_round(teacher: MotionModel, grid: list[int], sampler: WindowSampler, cfg: ProgressiveConfig,
                      progress: bool = True, init: MotionModel | None = None, state=None
                      ) -> tuple[MotionModel, list[float]]:
    """Train a student that does in one DDIM step what ``teacher`` does in ``cfg.factor`` on ``grid``.

    ``cfg.segments`` splits the grid unevenly instead. ``init`` (default: the teacher) is the
    student's starting point, grown to ``cfg.depth`` layers if given; with ``cfg.experts`` each of its
    steps gets its own copy of it. ``state`` (a file) makes the round resumable after a kill.
    """
    if not 0 <= cfg.average < 1:
        raise InputError(f"--average is an EMA decay, at least 0 and below 1, e.g. 0.995 (got {cfg.average})")
    bounds = segment_bounds(len(grid), cfg)
    full = grid + [-1]
    starts = torch.tensor([full[b] for b in bounds[:-1]])
    paths = [full[a:b + 1] for a, b in zip(bounds, bounds[1:])]  # each student step's teacher run
    base = with_depth(init or teacher, cfg.depth) if cfg.depth else copy.deepcopy(init or teacher)
    student = with_experts(base, starts.tolist()) if cfg.experts else base
    student.denoiser.train()
    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, ema=cfg.average, seed=cfg.seed + len(grid), ckpt_every=50)
    objective = ProgressiveObjective(teacher, sampler, starts, paths, cfg)
    result = fit(student.denoiser, objective, fit_cfg, state, resume=state is not None and state.is_file(),
                 desc=f"distill {len(grid)}->{len(bounds) - 1}", progress=progress)
    student.denoiser.load_state_dict(result.module.state_dict())
    student.denoiser.eval()
    student.sampling = {"sampler": "ddim", "timesteps": starts.tolist()}
    return student, result.losses
