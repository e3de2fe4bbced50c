"""Trajectory refinement on a tiny teacher: stored teacher samples resume, and refining moves a student onto them."""

from __future__ import annotations

import copy

import pytest
import torch

from talkhead.checkpoint import load_checkpoint
from talkhead.cli import main
from talkhead.diffusion.pairs import PairsConfig
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import load
from talkhead.motion.train.configs import ProgressiveConfig
from talkhead.motion.train.distill import distill
from talkhead.motion.train.trajectory import pairs_mse, student_run, teacher_pairs, trajectory_refine
from talkhead.util import file_sha256


@pytest.fixture(scope="module")
def teacher_and_sampler(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    return teacher, WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm, teacher.cfg.window, teacher.cfg.tail)


def test_stored_samples_are_the_teachers_ddim_and_resume(teacher_and_sampler, tmp_path):
    teacher, sampler = teacher_and_sampler
    cfg = PairsConfig(windows=12, teacher_steps=4, chunk=8)
    pairs = teacher_pairs(teacher, sampler, tmp_path, cfg, progress=False)
    assert pairs["noise"].shape == pairs["target"].shape == (12, teacher.cfg.window, 58)
    first = sorted(tmp_path.glob("train-*.safetensors"))
    assert len(first) == 2
    # The stored target is what the teacher's own sampler makes from the stored noise.
    as_student = copy.deepcopy(teacher)
    as_student.sampling = {"sampler": "ddim", "timesteps": teacher.schedule.timesteps(4, "trailing")}
    with torch.no_grad():
        again = student_run(as_student, pairs, torch.arange(12))
    torch.testing.assert_close(again, pairs["target"], atol=1e-5, rtol=1e-5)
    # A kill after the first chunk: the rerun remakes only the missing one, identically.
    mtime = first[0].stat().st_mtime_ns
    first[1].unlink()
    resumed = teacher_pairs(teacher, sampler, tmp_path, cfg, progress=False)
    assert first[0].stat().st_mtime_ns == mtime
    for k in pairs:
        assert torch.equal(resumed[k], pairs[k])
    with pytest.raises(InputError, match="other settings"):
        teacher_pairs(teacher, sampler, tmp_path, PairsConfig(windows=12, teacher_steps=8, chunk=8), progress=False)
    other = copy.deepcopy(teacher)
    with torch.no_grad():
        next(other.denoiser.net.parameters()).add_(0.01)
    with pytest.raises(InputError, match="other settings"):
        teacher_pairs(other, sampler, tmp_path, cfg, progress=False)
    # Windows from other clips (here the first half of the corpus) must not reuse them either.
    fewer = copy.copy(sampler)
    fewer.motion = sampler.motion[: len(sampler.motion) // 2]
    with pytest.raises(InputError, match="other settings"):
        teacher_pairs(teacher, fewer, tmp_path, cfg, progress=False)


def test_refining_a_one_step_student_moves_it_onto_the_teacher(teacher_and_sampler, tmp_path):
    teacher, sampler = teacher_and_sampler
    pairs = teacher_pairs(teacher, sampler, tmp_path, PairsConfig(windows=32, teacher_steps=8, chunk=32), progress=False)
    one_step = copy.deepcopy(teacher)
    one_step.sampling = {"sampler": "ddim", "timesteps": [999]}
    before = pairs_mse(one_step, pairs)
    refined, losses = trajectory_refine(one_step, pairs, iters=40, batch=16, lr=1e-3, progress=False)
    assert pairs_mse(refined, pairs) < 0.8 * before
    assert refined.timesteps() == [999] and pairs_mse(one_step, pairs) == before  # the input is left alone


def test_distill_trajectory_cli_writes_a_refined_student(tiny_teacher, tiny_corpus, tmp_path, capsys):
    chain = distill(str(tiny_teacher), tiny_corpus, tmp_path / "chain", ProgressiveConfig(start_steps=4, to=2, iters=2, batch=4),
                    progress=False)
    args = ["distill", "trajectory", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path / "t"),
            "--iters", "3", "--batch", "4", "--pairs", "8", "--teacher-steps", "4", "--quiet"]
    assert main(args) == 2 and "--init" in capsys.readouterr().err
    assert main(args + ["--init", str(chain[-1])]) == 0
    path = tmp_path / "t" / "student-2.safetensors"
    _, meta = load_checkpoint(path)
    refined = meta["distill"]["refined"]
    assert meta["distill"]["method"] == "trajectory" and refined["init_distill"]["method"] == "progressive"
    assert set(refined["heldout_mse_to_teacher"]) == {"before", "after"}
    assert meta["distill"]["data"] == str(tiny_corpus)
    assert (meta["distill"]["teacher_sha256"], meta["distill"]["init_sha256"]) == (file_sha256(tiny_teacher), file_sha256(chain[-1]))
    assert meta["sampling"]["timesteps"] == load(chain[-1]).timesteps()
