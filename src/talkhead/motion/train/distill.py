"""Few-step students: ``distill(teacher, data, out, cfg)`` runs the method ``cfg``'s type names.

Progressive and consistency students start from the teacher's weights (or, with ``init``, a
trained student's) and train on corpus windows; trajectory refinement starts from a student. Each
finished student is a self-describing checkpoint whose metadata carries its own timestep grid, so
``load`` + ``sample`` run it with plain DDIM. A rerun skips students already written (each written
atomically) and resumes a round cut short from its last checkpoint (``student-N.state.pt``).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

from talkhead.diffusion.pairs import PairsConfig
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import MotionModel, learns_from, load, resolve
from talkhead.motion.train.configs import METHODS, ConsistencyConfig, DistillBase, ProgressiveConfig, TrajectoryConfig
from talkhead.motion.train.consistency import consistency_distill
from talkhead.motion.train.progressive import progressive_round, segment_bounds, step_weights
from talkhead.motion.train.trajectory import pairs_mse, teacher_pairs, trajectory_refine
from talkhead.util import clear_stale_parts, file_sha256


def distill(teacher_name: str, data: str | Path, out: str | Path, cfg: DistillBase,
            progress: bool = True) -> list[Path]:
    """Run the method ``cfg`` configures; returns the student checkpoints written (or found done)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clear_stale_parts(out)  # a student write cut short by a kill: that round resumes from its state
    source = _source(teacher_name, data, cfg)
    teacher = load(teacher_name)
    if isinstance(cfg, TrajectoryConfig):
        return [_trajectory(teacher, teacher_name, source, out, cfg, progress)]
    sampler = _sampler(teacher, data, "train", cfg.augmented)
    grid = teacher.schedule.timesteps(cfg.start_steps, "trailing")
    own = teacher.sampling.get("timesteps")
    if own and len(own) == cfg.start_steps:  # a student as teacher: its own (maybe uneven) grid
        grid = list(own)
    if isinstance(cfg, ConsistencyConfig):
        path = out / "student-consistency.safetensors"
        if not path.exists():
            t0 = time.time()
            student, losses = consistency_distill(teacher, grid, sampler, cfg, progress, _state(path))
            _finish(student, path, cfg, teacher_name, grid, losses, t0, source)
        return [path]
    if not isinstance(cfg, ProgressiveConfig):
        raise InputError(f"unknown distillation method {cfg.method!r}; use one of {', '.join(METHODS)}")
    return _progressive(teacher, teacher_name, grid, sampler, source, out, cfg, progress)


def _progressive(teacher: MotionModel, teacher_name: str, grid: list[int], sampler: WindowSampler, source: dict,
                 out: Path, cfg: ProgressiveConfig, progress: bool) -> list[Path]:
    """The chain of rounds down to ``cfg.to`` steps; each round's student is the next one's teacher."""
    current, init = teacher, (_load_init(cfg.init, teacher) if cfg.init else None)
    if not 0 <= cfg.warp < 0.5:
        raise InputError(f"--warp is a share of the mel axis, at least 0 and below 0.5 (got {cfg.warp})")
    n_first = len(segment_bounds(len(grid), cfg)) - 1
    one_round = [flag for flag, v in (("--step-weights", cfg.step_weights), ("--segments", cfg.segments)) if v]
    if one_round and n_first != max(cfg.to, 1):
        raise InputError(f"{' and '.join(one_round)} describe the steps of one round's student: give --to {n_first}")
    step_weights(n_first, cfg)
    written: list[Path] = []
    while len(grid) > cfg.to:
        n_steps = len(segment_bounds(len(grid), cfg)) - 1
        path = out / f"student-{n_steps}.safetensors"
        if path.exists():  # finished by an earlier run: resume after it
            current = load(path)
        else:
            t0 = time.time()
            current, losses = progressive_round(current, grid, sampler, cfg, progress, init, _state(path))
            _finish(current, path, cfg, teacher_name, grid, losses, t0, source)
        grid, init = current.timesteps(), None
        written.append(path)
    return written


def _trajectory(teacher: MotionModel, teacher_name: str, source: dict, out: Path, cfg: TrajectoryConfig,
                progress: bool) -> Path:
    """Refine ``cfg.init`` against stored teacher samples; held-out voices score it before and after."""
    if cfg.init is None:
        raise InputError("distill trajectory refines an existing student: give --init NAME_OR_PATH")
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
    student, losses = trajectory_refine(init, train, cfg.iters, cfg.batch, cfg.lr, cfg.velocity, cfg.seed, progress,
                                        _state(path))
    mse = {"before": round(before, 6), "after": round(pairs_mse(student, val), 6)}
    extra = {**source, "pairs_wall_s": round(t0 - t_pairs, 1),
             "refined": {"init": cfg.init, "init_distill": init.meta.get("distill"), "heldout_mse_to_teacher": mse}}
    _finish(student, path, cfg, teacher_name, student.timesteps(), losses, t0, extra)
    return path


def _state(student_path: Path) -> Path:
    """Where a run's resume state lives until its student is written."""
    return student_path.with_suffix(".state.pt")


def _source(teacher_name: str, data: str | Path, cfg: DistillBase) -> dict:
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


def _finish(student: MotionModel, path: Path, cfg: DistillBase, teacher: str, grid: list[int],
            losses: list[float], t0: float, extra: dict) -> None:
    """Write the student (atomically), log the run, and drop its resume state."""
    steps = len(student.sampling["timesteps"])
    info = {"method": cfg.method, "teacher": teacher, "from_grid": grid, "config": asdict(cfg),
            "loss_first": sum(losses[:20]) / max(1, len(losses[:20])), "loss_last": sum(losses[-20:]) / max(1, len(losses[-20:])),
            "wall_s": round(time.time() - t0, 1), **extra}
    student.meta = {**student.meta, "kind": "student", "name": path.stem, "distill": info}
    student.save(path)
    with open(path.parent / "distill.jsonl", "a") as f:
        f.write(json.dumps({"student": path.name, "steps": steps, **info}) + "\n")
    _state(path).unlink(missing_ok=True)
