"""Few-step students: progressive distillation (Salimans & Ho 2022), consistency distillation (Song et al. 2023)
and trajectory refinement (see ``trajectory.py``).

Progressive and consistency students start from the teacher's weights (or, with ``init``, a
trained student's) and train on corpus windows; trajectory refinement starts from a student. Each
finished student is a self-describing checkpoint whose metadata carries its own
timestep grid, so ``load`` + ``sample`` run it with plain DDIM. A rerun skips students already written (each written atomically).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
from tqdm import tqdm

from talkhead.errors import InputError
from talkhead.motion.losses import consistency_loss, ddim_step, progressive_loss, progressive_target
from talkhead.motion.model import MotionModel, learns_from, load, resolve, with_depth, with_experts
from talkhead.train.data import WindowSampler, load_clips, warp_audio
from talkhead.train.loop import cosine_decay, optimizer_step
from talkhead.train.trajectory import PairsConfig, pairs_mse, teacher_pairs, trajectory_refine
from talkhead.util import clear_stale_parts, file_sha256


@dataclass(frozen=True)
class DistillConfig:
    """One distillation run: method, the teacher grid it starts from, and optimisation."""

    method: str = "progressive"  # "progressive", "consistency" or "trajectory"
    start_steps: int = 16  # the teacher's DDIM grid (trailing) that the first student halves
    to: int = 1
    iters: int = 400  # optimiser steps per progressive round, or in total for consistency
    batch: int = 64
    lr: float = 2e-4
    ema: float = 0.99  # consistency target network
    velocity: float = 0.0  # progressive: weight of the frame-difference term (see progressive_loss)
    factor: int = 2  # progressive: teacher steps per student step (2: Salimans & Ho; more: fewer rounds)
    seed: int = 0
    init: str | None = None  # trajectory: the student to refine; progressive: the first round's start
    pairs: int = 8192  # trajectory: stored teacher windows to regress onto
    teacher_steps: int = 50  # trajectory: the teacher's DDIM grid that makes them
    # progressive, one round: how often each student step is drawn (default: evenly). Lets a run
    # spend its iterations on the steps that cost the most at the end (see bench.steps.step_attribution).
    step_weights: tuple[float, ...] | None = None
    # progressive, one round: teacher grid steps per student step, first step first (default: ``factor``
    # each). Uneven splits put short student steps where the teacher's path bends most, e.g. 8,12,8,4.
    segments: tuple[int, ...] | None = None
    experts: bool = False  # progressive: the student gets one network per step (see StepExperts)
    warp: float = 0.0  # progressive: stretch each window's mel axis by up to this share (see warp_audio)
    depth: int = 0  # progressive: the student's transformer layers (0: as its starting weights; see with_depth)
    # progressive: the round returns an exponential moving average of its weights with this decay
    # (0: the last weights). Averaging along the run smooths the minibatch noise that the last step keeps.
    average: float = 0.0
    # augmented copies of each clip's audio (telephone, room, noise, level): the student matches the
    # teacher on the channels real recordings come through, not only on clean TTS.
    augmented: int = 0


def _abar(model: MotionModel, t: list[int] | int, batch: int) -> torch.Tensor:
    """abar at listed timesteps, with -1 standing for the clean end point (abar = 1): [B, 1, 1]."""
    ts = torch.as_tensor(t).expand(batch) if isinstance(t, int) else torch.as_tensor(t)
    a = model.schedule.alphas_cumprod.float()[ts.clamp_min(0)]
    return torch.where(ts < 0, torch.ones_like(a), a)[:, None, None]


def _lr(it: int, cfg: DistillConfig) -> float:
    """Cosine decay from cfg.lr to a tenth over the round: the last iterations settle instead of wander."""
    return cosine_decay(cfg.lr, it / max(1, cfg.iters - 1))


def _cond(batch: dict) -> dict:
    return {k: v for k, v in batch.items() if k != "x0"}


def _round_batch(sampler, n_steps, cfg, gen):
    batch = sampler.sample(cfg.batch, gen)
    x0 = batch["x0"]
    return batch, x0, draw_steps(n_steps, cfg, gen), torch.randn(x0.shape, generator=gen)


def segment_bounds(n_grid: int, cfg: DistillConfig) -> list[int]:
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


def draw_steps(n: int, cfg: DistillConfig, gen: torch.Generator) -> torch.Tensor:
    """Which of a student's ``n`` steps each window of a batch trains: uniform, or by ``cfg.step_weights``."""
    w = _step_weights(n, cfg)
    if w is None:
        return torch.randint(0, n, (cfg.batch,), generator=gen)
    return torch.multinomial(w, cfg.batch, replacement=True, generator=gen)


def _step_weights(n: int, cfg: DistillConfig) -> torch.Tensor | None:
    if cfg.step_weights is None:
        return None
    w = torch.tensor(cfg.step_weights, dtype=torch.float64)
    if len(w) != n or (w < 0).any() or w.sum() <= 0:
        raise InputError(f"--step-weights needs {n} non-negative weights, one per student step, "
                         f"not all zero (got {list(cfg.step_weights)})")
    return w


def ddim_path(model: MotionModel, x: torch.Tensor, ts: list, cond: dict) -> torch.Tensor:
    """``model``'s deterministic DDIM from x at ts[0] through ts[1:], -1 meaning clean: [B, W, 58] -> same.

    Each entry of ``ts`` is one timestep for the whole batch (int) or one per sample ([B] tensor).
    """
    b = x.shape[0]
    a = _abar(model, ts[0], b)
    for t, s in zip(ts[:-1], ts[1:]):
        a_s = _abar(model, s, b)
        t = torch.as_tensor(t).expand(b) if isinstance(t, int) else t
        x, a = ddim_step(model.denoiser(x, t, cond), x, a, a_s), a_s
    return x


@torch.no_grad()
def _teacher_steps(teacher: MotionModel, x_t: torch.Tensor, ts: list, cond: dict):
    """The teacher's DDIM run through ts[0] -> ts[-1] (as in ``ddim_path``), as (one-step x0 target, abar at ts[0])."""
    b = x_t.shape[0]
    a_t = _abar(teacher, ts[0], b)
    return progressive_target(x_t, ddim_path(teacher, x_t, ts, cond), a_t, _abar(teacher, ts[-1], b)), a_t


def progressive_round(teacher: MotionModel, grid: list[int], sampler: WindowSampler, cfg: DistillConfig,
                      progress: bool = True, init: MotionModel | None = None) -> tuple[MotionModel, list[float]]:
    """Train a student that does in one DDIM step what ``teacher`` does in ``cfg.factor`` on ``grid``.

    ``factor`` 2 is progressive distillation; a larger factor reaches few steps in fewer rounds,
    so less student-on-student error compounds, at ``factor`` teacher calls per iteration.
    ``cfg.segments`` splits the grid unevenly instead. ``init`` (default: the teacher) is the
    student's starting point, grown to ``cfg.depth`` layers if given; with ``cfg.experts`` each of its
    steps gets its own copy of it.
    """
    bounds = segment_bounds(len(grid), cfg)
    full = grid + [-1]
    starts = torch.tensor([full[b] for b in bounds[:-1]])
    paths = [full[a:b + 1] for a, b in zip(bounds, bounds[1:])]  # each student step's teacher run
    base = with_depth(init or teacher, cfg.depth) if cfg.depth else copy.deepcopy(init or teacher)
    student = with_experts(base, starts.tolist()) if cfg.experts else base
    student.denoiser.train()
    opt = torch.optim.AdamW(student.denoiser.net.parameters(), lr=cfg.lr, weight_decay=0.0)
    avg = _weight_average(student.denoiser.net, cfg.average)
    gen = torch.Generator().manual_seed(cfg.seed + len(grid))
    losses = []
    for it in tqdm(range(cfg.iters), desc=f"distill {len(grid)}->{len(bounds) - 1}", disable=not progress):
        batch, x0, idx, noise = _round_batch(sampler, len(bounds) - 1, cfg, gen)
        if cfg.warp:
            batch["audio"] = warp_audio(batch["audio"], teacher.norm, teacher.features, cfg.warp, gen)
        x_t, cond = teacher.schedule.add_noise(x0, noise, starts[idx]), _cond(batch)
        target, a_t = _segment_targets(teacher, x_t, idx, paths, cond)
        loss = progressive_loss(student.denoiser(x_t, starts[idx], cond), target, a_t, cfg.velocity)
        optimizer_step(opt, loss, student.denoiser.net.parameters(), _lr(it, cfg))
        if avg is not None:
            avg.update_parameters(student.denoiser.net)
        losses.append(loss.item())
    if avg is not None:
        student.denoiser.net.load_state_dict(avg.module.state_dict())
    student.denoiser.eval()
    student.sampling = {"sampler": "ddim", "timesteps": starts.tolist()}
    return student, losses


def _weight_average(net: torch.nn.Module, decay: float) -> AveragedModel | None:
    """An EMA copy of ``net`` (its first update copies the weights), or None for ``decay`` 0."""
    if not 0 <= decay < 1:
        raise InputError(f"--average is an EMA decay, at least 0 and below 1, e.g. 0.995 (got {decay})")
    return AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(decay)) if decay else None


def _segment_targets(teacher: MotionModel, x_t: torch.Tensor, idx: torch.Tensor, paths: list[list[int]],
                     cond: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """One-step targets for windows that each train student step ``idx``, whose teacher run is ``paths[idx]``.

    Windows are grouped by step, so each teacher call covers one group: the teacher's work is the
    windows' own segment lengths, whether the split is even or not.
    """
    target, a_t = torch.empty_like(x_t), torch.empty(x_t.shape[0], 1, 1)
    for i in idx.unique().tolist():
        m = idx == i
        target[m], a_t[m] = _teacher_steps(teacher, x_t[m], paths[i], {k: v[m] for k, v in cond.items()})
    return target, a_t


def consistency_distill(teacher: MotionModel, grid: list[int], sampler: WindowSampler, cfg: DistillConfig,
                        progress: bool = True) -> tuple[MotionModel, list[float]]:
    """A one-step student: f(x_{t_{n+1}}) matches the EMA student's f at the teacher's DDIM step to t_n."""
    student = copy.deepcopy(teacher)
    target_net = copy.deepcopy(teacher.denoiser).requires_grad_(False)
    opt = torch.optim.AdamW(student.denoiser.net.parameters(), lr=cfg.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(cfg.seed + 7)
    full = grid + [-1]
    losses = []
    for it in tqdm(range(cfg.iters), desc="consistency", disable=not progress):
        batch, x0, idx, noise = _round_batch(sampler, len(grid), cfg, gen)
        cond = _cond(batch)
        t, s = torch.tensor([full[i] for i in idx]), torch.tensor([full[i + 1] for i in idx])
        x_t = teacher.schedule.add_noise(x0, noise, t)
        with torch.no_grad():
            a_t, a_s = _abar(teacher, t, cfg.batch), _abar(teacher, s, cfg.batch)
            x_s = ddim_step(teacher.denoiser(x_t, t, cond), x_t, a_t, a_s)
            # At the clean end the teacher's step is already the answer: the boundary condition.
            target = torch.where((s < 0)[:, None, None], x_s, target_net(x_s, s.clamp_min(0), cond))
        loss = consistency_loss(student.denoiser(x_t, t, cond), target)
        optimizer_step(opt, loss, student.denoiser.net.parameters(), _lr(it, cfg))
        with torch.no_grad():
            for pt, p in zip(target_net.net.parameters(), student.denoiser.net.parameters()):
                pt.lerp_(p, 1 - cfg.ema)
        losses.append(loss.item())
    student.denoiser.eval()
    student.sampling = {"sampler": "ddim", "timesteps": [grid[0]]}
    return student, losses


def distill(teacher_name: str, data: str | Path, out: str | Path, cfg: DistillConfig,
            progress: bool = True) -> list[Path]:
    """Run the chain (progressive) or the one-step student (consistency); returns the checkpoints written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clear_stale_parts(out)  # a student write cut short by a kill: that round is simply run again
    source = _source(teacher_name, data, cfg)
    teacher = load(teacher_name)
    if cfg.method == "trajectory":
        return [_trajectory(teacher, teacher_name, source, out, cfg, progress)]
    sampler = _sampler(teacher, data, "train", cfg.augmented)
    grid = teacher.schedule.timesteps(cfg.start_steps, "trailing")
    own = teacher.sampling.get("timesteps")
    if own and len(own) == cfg.start_steps:  # a student as teacher: its own (maybe uneven) grid
        grid = list(own)
    written: list[Path] = []
    log = out / "distill.jsonl"
    if cfg.method == "consistency":
        path = out / "student-consistency.safetensors"
        if not path.exists():
            t0 = time.time()
            student, losses = consistency_distill(teacher, grid, sampler, cfg, progress)
            _finish(student, path, cfg, teacher_name, grid, losses, t0, log, source)
        return [path]
    if cfg.method != "progressive":
        raise InputError(f"unknown method {cfg.method!r}; use progressive, consistency or trajectory")
    current, init = teacher, (_load_init(cfg.init, teacher) if cfg.init else None)
    if not 0 <= cfg.warp < 0.5:
        raise InputError(f"--warp is a share of the mel axis, at least 0 and below 0.5 (got {cfg.warp})")
    n_first = len(segment_bounds(len(grid), cfg)) - 1
    one_round = [flag for flag, v in (("--step-weights", cfg.step_weights), ("--segments", cfg.segments)) if v]
    if one_round and n_first != max(cfg.to, 1):
        raise InputError(f"{' and '.join(one_round)} describe the steps of one round's student: give --to {n_first}")
    _step_weights(n_first, cfg)
    while len(grid) > cfg.to:
        n_steps = len(segment_bounds(len(grid), cfg)) - 1
        path = out / f"student-{n_steps}.safetensors"
        if path.exists():  # finished by an earlier run: resume after it
            current = load(path)
        else:
            t0 = time.time()
            current, losses = progressive_round(current, grid, sampler, cfg, progress, init)
            _finish(current, path, cfg, teacher_name, grid, losses, t0, log, source)
        grid, init = current.timesteps(), None
        written.append(path)
    return written


def _trajectory(teacher: MotionModel, teacher_name: str, source: dict, out: Path, cfg: DistillConfig,
                progress: bool) -> Path:
    """Refine ``cfg.init`` against stored teacher samples; held-out voices score it before and after."""
    if cfg.init is None:
        raise InputError("--method trajectory refines an existing student: give --init NAME_OR_PATH")
    init = _load_init(cfg.init, teacher)
    path = out / f"student-{len(init.timesteps())}.safetensors"
    if path.exists():
        return path
    t_pairs, data = time.time(), source["data"]
    pcfg = PairsConfig(windows=cfg.pairs, teacher_steps=cfg.teacher_steps, seed=cfg.seed)
    train = teacher_pairs(teacher, _sampler(teacher, data, "train"), out / "pairs", pcfg, "train", progress)
    val = teacher_pairs(teacher, _sampler(teacher, data, "heldout"), out / "pairs",
                        PairsConfig(windows=256, teacher_steps=cfg.teacher_steps, seed=cfg.seed + 1), "heldout", progress)
    t0, before = time.time(), pairs_mse(init, val)
    student, losses = trajectory_refine(init, train, cfg.iters, cfg.batch, cfg.lr, cfg.velocity, cfg.seed, progress)
    mse = {"before": round(before, 6), "after": round(pairs_mse(student, val), 6)}
    extra = {**source, "pairs_wall_s": round(t0 - t_pairs, 1),
             "refined": {"init": cfg.init, "init_distill": init.meta.get("distill"), "heldout_mse_to_teacher": mse}}
    _finish(student, path, cfg, teacher_name, student.timesteps(), losses, t0, out / "distill.jsonl", extra)
    return path


def _source(teacher_name: str, data: str | Path, cfg: DistillConfig) -> dict:
    """What a run learns from, for its students' metadata: the corpus, and the teacher and starting files' SHA-256.

    Shipped names are re-pointed when a better file ships, so the digests (taken as the run starts)
    say which weights it saw.
    """
    source = {"data": str(data), "teacher_sha256": file_sha256(resolve(teacher_name))}
    if cfg.init:
        source["init_sha256"] = file_sha256(resolve(cfg.init))
    return source


def _load_init(name: str, teacher: MotionModel) -> MotionModel:
    """The student to start from; it must share the teacher's inputs, outputs and normalisation to learn its outputs."""
    init = load(name)
    if not learns_from(init, teacher):
        raise InputError(f"--init {name} takes other inputs or another normalisation than the teacher; "
                         "start from a student of this teacher")
    return init


def _sampler(teacher: MotionModel, data: str | Path, split: str, augmented: int = 0) -> WindowSampler:
    clips = load_clips(data, split, teacher.features, augmented=augmented)
    return WindowSampler(clips, teacher.norm, teacher.cfg.window, teacher.cfg.tail)


def _finish(student: MotionModel, path: Path, cfg: DistillConfig, teacher: str, grid: list[int],
            losses: list[float], t0: float, log: Path, extra: dict | None = None) -> None:
    steps = len(student.sampling["timesteps"])
    info = {"method": cfg.method, "teacher": teacher, "from_grid": grid, "config": asdict(cfg),
            "loss_first": sum(losses[:20]) / max(1, len(losses[:20])), "loss_last": sum(losses[-20:]) / max(1, len(losses[-20:])),
            "wall_s": round(time.time() - t0, 1), **(extra or {})}
    student.meta = {**student.meta, "kind": "student", "name": path.stem, "distill": info}
    student.save(path)
    with open(log, "a") as f:
        f.write(json.dumps({"student": path.name, "steps": steps, **info}) + "\n")
