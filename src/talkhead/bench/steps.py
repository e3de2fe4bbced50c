"""Which step of a few-step student costs the most: its error to the teacher, one step at a time.

A student's N-step run is compared with hybrids in which the teacher does everything (on its
fine grid, which contains the student's timesteps) except student step i. The extra error of
hybrid i over the teacher's own grid is what step i alone adds; comparing it across steps says
where distillation iterations are best spent (``talkhead distill progressive --step-weights``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from talkhead.config import option
from talkhead.diffusion.pairs import PairsConfig
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import MotionModel, learns_from, load
from talkhead.motion.train.trajectory import COND_KEYS, teacher_pairs
from talkhead.util import atomic_write


@dataclass(frozen=True)
class StepsConfig:
    """The attribution run: models, the teacher grid the student was distilled from, the sample set."""

    student: str = option("student-4", "the few-step student")
    teacher: str = option("teacher", "its teacher")
    teacher_grid: int = option(32, "the teacher DDIM grid the student was distilled from (contains its timesteps)")
    windows: int = option(256, "held-out-voice windows, scored against the teacher's S = 50 output (kept in pairs/)")
    seed: int = option(1, "noise seed of the teacher's samples")
    pairs: str | None = option(None, "folder for the teacher's samples (default OUT/pairs); give several runs the "
                                     "same one to make them once (they depend on the teacher, corpus and seed only)")


@torch.no_grad()
def step_attribution(student: MotionModel, teacher: MotionModel, pairs: dict[str, torch.Tensor],
                     teacher_grid: list[int]) -> dict[str, float | list[float]]:
    """MSE to the stored teacher samples of: the teacher on ``teacher_grid``, the student, and each one-student-step hybrid."""
    grid, steps = teacher_grid + [-1], student.timesteps() + [-1]
    missing = [t for t in steps[:-1] if t not in grid]
    if missing:
        raise InputError(f"the student's timesteps {missing} are not on the teacher's {len(teacher_grid)}-step grid; "
                         "give the grid it was distilled from (--teacher-grid)")
    cond, noise, target = {k: pairs[k] for k in COND_KEYS}, pairs["noise"], pairs["target"]

    def mse(x: torch.Tensor) -> float:
        return round(float((x - target).pow(2).mean()), 6)

    def ddim_path(model: MotionModel, x: torch.Tensor, ts: list[int]) -> torch.Tensor:  # ts[-1] = -1: clean
        return model.ddim(cond, x, ts[:-1], to=ts[-1]) if len(ts) > 1 else x

    # One teacher run, cut at the student's timesteps: the state each hybrid starts its student step from.
    marks = [0] + [grid.index(t) for t in steps]
    states = [noise]
    for a, b in zip(marks[:-1], marks[1:]):
        states.append(ddim_path(teacher, states[-1], grid[a:b + 1]))
    base = mse(states[-1])
    only = [mse(ddim_path(teacher, ddim_path(student, x, [t, s]), grid[grid.index(s):]))
            for x, t, s in zip(states[1:], steps[:-1], steps[1:])]
    return {"timesteps": steps[:-1], "teacher_grid_mse": base, "student_mse": mse(ddim_path(student, noise, steps)),
            "only_step_mse": only, "step_excess": [round(m - base, 6) for m in only]}


def run_steps_bench(data: str | Path, out: str | Path, cfg: StepsConfig = StepsConfig(),
                    progress: bool = True) -> dict:
    """Write ``out/steps.json`` and ``out/steps.png``; the teacher's samples go to ``cfg.pairs`` or ``out/pairs``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    teacher, student = load(cfg.teacher), load(cfg.student)
    if not learns_from(student, teacher):
        raise InputError(f"{cfg.student} is not a student of {cfg.teacher} (other inputs or another normalisation)")
    clips = load_clips(data, "heldout", teacher.features)
    sampler = WindowSampler(clips, teacher.norm, teacher.cfg.window, teacher.cfg.tail)
    pcfg = PairsConfig(windows=cfg.windows, chunk=min(256, cfg.windows), seed=cfg.seed)
    pairs = teacher_pairs(teacher, sampler, cfg.pairs or out / "pairs", pcfg, "heldout", progress)
    result = {"config": asdict(cfg), **step_attribution(student, teacher, pairs,
                                                        teacher.schedule.timesteps(cfg.teacher_grid, "trailing"))}
    atomic_write(out / "steps.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "steps.png")
    return result


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((5, 3.2), dpi=100)
    labels = [f"step {i + 1}\nt={t}" for i, t in enumerate(result["timesteps"])]
    ax.bar(labels, result["step_excess"], color="#4c72b0")
    ax.set_ylabel("MSE added to the teacher's grid")
    ax.set_title(f"{Path(result['config']['student']).stem}: {result['student_mse']:.5f} in all, "
                 f"teacher grid {result['teacher_grid_mse']:.5f}", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
