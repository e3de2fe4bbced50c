"""Per-step attribution of a student's error, on a tiny teacher and a student distilled from it."""

from __future__ import annotations

import json

import pytest

from talkhead.bench.steps import StepsConfig, run_steps_bench, step_attribution
from talkhead.cli import main
from talkhead.diffusion.pairs import PairsConfig
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import load
from talkhead.motion.train.configs import ProgressiveConfig
from talkhead.motion.train.distill import distill
from talkhead.motion.train.trajectory import teacher_pairs


@pytest.fixture(scope="module")
def pairs(tiny_teacher, tiny_corpus, tmp_path_factory):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "heldout"), teacher.norm)
    return teacher_pairs(teacher, sampler, tmp_path_factory.mktemp("pairs"), PairsConfig(windows=6, chunk=6),
                         progress=False)


def test_the_teacher_as_its_own_student_adds_nothing(tiny_teacher, pairs):
    teacher = load(tiny_teacher)
    grid = teacher.schedule.timesteps(8)
    teacher.sampling = {"sampler": "ddim", "timesteps": grid}
    r = step_attribution(teacher, teacher, pairs, grid)
    assert len(r["step_excess"]) == 8 and max(abs(e) for e in r["step_excess"]) < 1e-6
    assert r["student_mse"] == pytest.approx(r["teacher_grid_mse"], abs=1e-6)
    assert r["teacher_grid_mse"] > 0  # 8 steps are not the S = 50 run the samples came from


def test_a_student_off_the_grid_is_refused(tiny_teacher, pairs):
    teacher = load(tiny_teacher)
    teacher.sampling = {"sampler": "ddim", "timesteps": teacher.schedule.timesteps(3)}
    with pytest.raises(InputError, match="not on the teacher's 8-step grid"):
        step_attribution(teacher, teacher, pairs, teacher.schedule.timesteps(8))


def test_steps_bench_writes_json_and_plot(tiny_teacher, tiny_corpus, tmp_path, capsys):
    student = distill(str(tiny_teacher), tiny_corpus, tmp_path / "s", ProgressiveConfig(start_steps=8, to=4, iters=4, batch=4),
                      progress=False)[0]
    out = tmp_path / "bench"
    r = run_steps_bench(tiny_corpus, out, StepsConfig(student=str(student), teacher=str(tiny_teacher), teacher_grid=8,
                                                       windows=6), progress=False)
    assert json.loads((out / "steps.json").read_text()) == json.loads(json.dumps(r))
    assert r["timesteps"] == load(student).timesteps() and len(r["only_step_mse"]) == 4
    assert (out / "steps.png").stat().st_size > 5_000
    args = ["bench", "steps", "--student", str(student), "--teacher", str(tiny_teacher), "--data", str(tiny_corpus),
            "--windows", "6", "--out", str(out)]
    assert main([*args, "--teacher-grid", "5"]) == 2  # the student's steps are not on a 5-step grid
    assert "--teacher-grid" in capsys.readouterr().err
    assert main([*args, "--teacher-grid", "8"]) == 0  # reuses the stored teacher samples
    assert "adds" in capsys.readouterr().out
    # Another output folder can share those samples instead of making its own.
    stored = {p.name: p.stat().st_mtime_ns for p in (out / "pairs").iterdir()}
    other = tmp_path / "other"
    args[-1] = str(other)
    assert main([*args, "--teacher-grid", "8", "--pairs", str(out / "pairs")]) == 0
    assert {p.name: p.stat().st_mtime_ns for p in (out / "pairs").iterdir()} == stored
    assert not (other / "pairs").exists()
    assert json.loads((other / "steps.json").read_text())["student_mse"] == r["student_mse"]
