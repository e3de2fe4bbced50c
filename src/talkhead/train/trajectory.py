"""Trajectory distillation: a student's whole N-step run regressed onto the teacher's S = 50 output.

Progressive rounds each match two steps of the previous model, so their small errors compound
down the chain, and every round targets the teacher's start grid, not its S = 50 sampler. Here
the end point itself is the target (Luhman & Luhman 2021, "Knowledge distillation in iterative
generative models", generalised from one step to N): the teacher samples windows from fixed
noise once, those (noise, conditioning, motion) triples are stored, and the student's N-step
DDIM run from the same noise is back-propagated through all N steps onto the teacher's motion.
It refines a progressive student rather than starting cold: the progressive chain supplies a
good initial map, this stage removes its accumulated drift.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save
from torch import Tensor
from tqdm import tqdm

from talkhead.errors import InputError
from talkhead.motion.losses import trajectory_loss
from talkhead.motion.model import MotionModel
from talkhead.motion.samplers import sample_ddim
from talkhead.train.data import WindowSampler
from talkhead.train.loop import cosine_decay, optimizer_step
from talkhead.util import atomic_write

COND_KEYS = ("audio", "ref", "tail", "has_tail")


@dataclass(frozen=True)
class PairsConfig:
    """The stored teacher samples: how many windows, from which grid, in chunks of what size."""

    windows: int = 8192
    teacher_steps: int = 50
    chunk: int = 256
    seed: int = 0


def _chunk(teacher: MotionModel, sampler: WindowSampler, n: int, steps: int, seed: int) -> dict[str, Tensor]:
    """``n`` windows: the teacher's DDIM output from fresh noise, with that noise and its conditioning."""
    gen = torch.Generator().manual_seed(seed)
    batch = sampler.sample(n, gen)
    noise = torch.randn(batch["x0"].shape, generator=gen)
    cond = {k: batch[k] for k in COND_KEYS}
    with torch.no_grad():
        target = _ddim(teacher, cond, noise, teacher.schedule.timesteps(steps, "trailing"))
    return {"noise": noise, "target": target, **cond}


def teacher_pairs(teacher: MotionModel, sampler: WindowSampler, directory: str | Path, cfg: PairsConfig,
                  tag: str = "train", progress: bool = True) -> dict[str, Tensor]:
    """Make (or resume) ``cfg.windows`` stored teacher samples under ``directory``; returns them all.

    Each chunk is its own atomically written file named by its seed, so a killed run keeps what
    it finished, and the set is the same whatever point it was resumed from.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    n_chunks = math.ceil(cfg.windows / cfg.chunk)
    meta = {"teacher": _fingerprint(teacher.denoiser.net.state_dict().values()), "data": _fingerprint(sampler.motion),
            "teacher_steps": str(cfg.teacher_steps), "chunk": str(cfg.chunk), "seed": str(cfg.seed)}
    parts = []
    for c in tqdm(range(n_chunks), desc=f"teacher S={cfg.teacher_steps} samples ({tag})", disable=not progress):
        path = directory / f"{tag}-{c:04d}.safetensors"
        if not path.exists():
            chunk = _chunk(teacher, sampler, cfg.chunk, cfg.teacher_steps, cfg.seed * 100_003 + c)
            atomic_write(path, save({k: v.contiguous() for k, v in chunk.items()}, metadata=meta))
        parts.append(_load_chunk(path, meta))
    return {k: torch.cat([p[k] for p in parts])[: cfg.windows] for k in parts[0]}


def _fingerprint(tensors: Iterable[Tensor]) -> str:
    """A digest of tensors' values. Stored samples record one of the teacher's weights and one of the
    clips the windows are drawn from, so a folder never mixes in another teacher's or corpus' samples."""
    h = hashlib.sha1()
    for v in tensors:
        h.update(v.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def _load_chunk(path: Path, meta: dict[str, str]) -> dict[str, Tensor]:
    with safe_open(str(path), framework="pt") as f:
        if f.metadata() != meta:
            raise InputError(f"{path} was made with other settings ({f.metadata()}, not {meta}); "
                             f"remove {path.parent} or use another folder")
        return {k: f.get_tensor(k) for k in f.keys()}


def student_run(student: MotionModel, pairs: dict[str, Tensor], idx: Tensor) -> Tensor:
    """The student's own N-step DDIM from the stored noise of windows ``idx``: [len(idx), W, 58]."""
    return _ddim(student, {k: pairs[k][idx] for k in COND_KEYS}, pairs["noise"][idx], student.timesteps())


def _ddim(model: MotionModel, cond: dict[str, Tensor], noise: Tensor, timesteps: list[int]) -> Tensor:
    return sample_ddim(lambda x, t: model.denoiser(x, t, cond), noise, model.schedule, timesteps)


@torch.no_grad()
def pairs_mse(student: MotionModel, pairs: dict[str, Tensor], batch: int = 256) -> float:
    """Mean squared error of the student's output against the stored teacher output, all windows."""
    student.denoiser.eval()
    total, n = 0.0, len(pairs["noise"])
    for s in range(0, n, batch):
        idx = torch.arange(s, min(n, s + batch))
        total += (student_run(student, pairs, idx) - pairs["target"][idx]).pow(2).sum().item()
    return total / pairs["target"].numel()


def trajectory_refine(student: MotionModel, pairs: dict[str, Tensor], iters: int, batch: int, lr: float,
                      velocity: float = 0.0, seed: int = 0, progress: bool = True) -> tuple[MotionModel, list[float]]:
    """Fine-tune a copy of ``student`` so its N-step output matches the stored teacher output."""
    if iters < 1:
        raise InputError("trajectory distillation needs --iters >= 1")
    student = copy.deepcopy(student)
    student.denoiser.train()
    params = list(student.denoiser.net.parameters())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed + 11)
    n, losses = len(pairs["noise"]), []
    steps = len(student.timesteps())
    for it in tqdm(range(iters), desc=f"trajectory {steps}-step", disable=not progress):
        idx = torch.randint(0, n, (batch,), generator=gen)
        loss = trajectory_loss(student_run(student, pairs, idx), pairs["target"][idx], velocity)
        optimizer_step(opt, loss, params, cosine_decay(lr, it / max(1, iters - 1)))
        losses.append(loss.item())
    student.denoiser.eval()
    return student, losses
