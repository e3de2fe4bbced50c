"""The one training loop: every objective (teacher training, each distillation method) runs through ``fit``.

As in EDM, the loop receives the module to train and the objective already built: the objective is
a callable ``loss(module, generator, step) -> scalar`` that draws its own batch, and the loop owns
everything else, once: AdamW, gradient clipping, warm-up and cosine learning rate, weight averaging
(EMA), DDP, periodic hooks, and atomic checkpoints with exact resume (weights, average, optimiser,
random state and the objective's own state, e.g. a consistency target network).
"""

from __future__ import annotations

import copy
import io
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
import torch.distributed as dist
from torch import Tensor, nn
from tqdm import tqdm

from talkhead.errors import InputError
from talkhead.util import atomic_write


class Objective(Protocol):
    """A training objective: its loss for one freshly drawn batch. ``after_step``/``state_dict`` are optional."""

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor: ...


@dataclass(frozen=True)
class FitConfig:
    """Optimisation settings every objective shares."""

    steps: int
    lr: float
    weight_decay: float = 0.0
    warmup: int = 0
    clip: float = 1.0
    # EMA decay of the weights the run returns (0: the last weights). ``ema_warmup``: the decay
    # ramps up as (1 + step) / (10 + step), so an early average tracks the weights closely.
    ema: float = 0.0
    ema_warmup: bool = False
    seed: int = 0
    ckpt_every: int = 0  # > 0 with a state path: checkpoint every this many steps (and at the end)
    stop_at: int = 0  # > 0: checkpoint and stop at this step; the LR schedule still spans ``steps``


def cosine_decay(lr: float, progress: float) -> float:
    """lr at ``progress`` in [0, 1] along a cosine from lr down to a tenth of it."""
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def lr_at(step: int, cfg: FitConfig) -> float:
    """Linear warm-up, then cosine decay to a tenth at the last step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cosine_decay(cfg.lr, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup - 1))


def optimizer_step(opt: torch.optim.Optimizer, loss: Tensor, params, lr: float, clip: float = 1.0) -> Tensor:
    """One update of ``loss`` at learning rate ``lr``, gradients clipped to norm ``clip``; returns the unclipped norm."""
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(params, clip)
    opt.step()
    return gnorm


class EMA:
    """An exponential moving average of a module's weights; the first update copies them."""

    def __init__(self, module: nn.Module, decay: float, warmup: bool = False) -> None:
        if not 0 <= decay < 1:
            raise InputError(f"an EMA decay is at least 0 and below 1, e.g. 0.995 (got {decay})")
        self.module = copy.deepcopy(module).requires_grad_(False)
        self.decay, self.warmup, self.updates = decay, warmup, 0

    @torch.no_grad()
    def update(self, module: nn.Module, step: int) -> None:
        d = min(self.decay, (1 + step) / (10 + step)) if self.warmup else (self.decay if self.updates else 0.0)
        for pe, p in zip(self.module.parameters(), module.parameters()):
            pe.lerp_(p.detach().to(pe.device), 1 - d)
        self.updates += 1


def dist_info() -> tuple[int, int]:
    """(rank, world size), starting the process group when launched by torchrun."""
    if "RANK" in os.environ and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() and os.environ.get("TALKHEAD_DEVICE", "") == "cuda" else "gloo"
        dist.init_process_group(backend)
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


Hook = Callable[[int, float, nn.Module], None]  # (step done, loss, averaged-or-current module)


@dataclass
class FitResult:
    module: nn.Module  # the averaged weights (or the last ones without EMA)
    losses: list[float]
    step: int


def fit(module: nn.Module, objective: Objective, cfg: FitConfig, state: Path | None = None,
        on_step: Hook | None = None, on_checkpoint: Hook | None = None, resume: bool = False,
        desc: str = "train", progress: bool = True) -> FitResult:
    """Minimise ``objective`` over ``module``'s parameters (in place); returns its average and the losses.

    ``state`` (a file) makes the run resumable: with ``resume`` it continues from that file exactly.
    ``on_checkpoint`` runs before each state write (write the model file there), so whenever a state
    exists, a model from the same step or a later one does too. ``on_step`` runs after every step.
    """
    rank, world = dist_info()
    params = [p for p in module.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    ema = EMA(module, cfg.ema, cfg.ema_warmup) if cfg.ema else None
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    step = _restore(state, module, opt, ema, gen, objective) if resume else 0
    train_mod = torch.nn.parallel.DistributedDataParallel(module) if world > 1 else module
    end = min(cfg.steps, cfg.stop_at) if cfg.stop_at > 0 else cfg.steps
    losses: list[float] = []
    bar = tqdm(total=cfg.steps, initial=step, desc=desc, disable=not progress or rank != 0)
    while step < end:
        loss = objective(train_mod, gen, step)
        optimizer_step(opt, loss, params, lr_at(step, cfg), cfg.clip)
        if ema is not None:
            ema.update(module, step)
        if hasattr(objective, "after_step"):
            objective.after_step(module)
        step += 1
        losses.append(loss.item())
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.4f}")
        avg = module if ema is None else ema.module
        if rank == 0 and on_step is not None:
            on_step(step, losses[-1], avg)
        if rank == 0 and state is not None and ((cfg.ckpt_every and step % cfg.ckpt_every == 0) or step == end):
            if on_checkpoint is not None:
                on_checkpoint(step, losses[-1], avg)
            _save_state(state, step, module, opt, ema, gen, objective)
    bar.close()
    if world > 1:
        dist.barrier()
    return FitResult(module if ema is None else ema.module, losses, step)


def _save_state(path: Path, step: int, module: nn.Module, opt, ema: EMA | None, gen: torch.Generator,
                objective: Objective) -> None:
    state = {"step": step, "net": module.state_dict(), "ema": None if ema is None else ema.module.state_dict(),
             "ema_updates": 0 if ema is None else ema.updates, "opt": opt.state_dict(), "gen": gen.get_state(),
             "objective": objective.state_dict() if hasattr(objective, "state_dict") else None}
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write(path, buf.getvalue())


def _restore(path: Path | None, module: nn.Module, opt, ema: EMA | None, gen: torch.Generator,
             objective: Objective) -> int:
    if path is None or not path.is_file():
        raise InputError(f"--resume: {path.parent if path else 'this run'} has no {path.name if path else 'state'} "
                         "to resume from")
    state = torch.load(path, weights_only=False)
    module.load_state_dict(state["net"])
    opt.load_state_dict(state["opt"])
    gen.set_state(state["gen"])
    if ema is not None and state["ema"] is not None:
        ema.module.load_state_dict(state["ema"])
        ema.updates = state.get("ema_updates", 1)
    if state.get("objective") is not None and hasattr(objective, "load_state_dict"):
        objective.load_state_dict(state["objective"])
    return int(state["step"])
