"""Distillation on a tiny teacher: a progressive round lowers its loss; students carry their grids."""

from __future__ import annotations

import numpy as np

from talkhead.checkpoint import load_checkpoint
from talkhead.motion.model import load
from talkhead.train.data import WindowSampler, load_clips
from talkhead.train.distill import DistillConfig, consistency_distill, distill, progressive_round


def test_one_progressive_round_lowers_its_loss(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    grid = teacher.schedule.timesteps(4)
    student, losses = progressive_round(teacher, grid, sampler, DistillConfig(iters=60, batch=16, lr=1e-3))
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    assert student.sampling["timesteps"] == grid[::2]


def test_chain_writes_self_describing_students_and_resumes(tiny_teacher, tiny_corpus, tmp_path):
    cfg = DistillConfig(start_steps=4, to=1, iters=3, batch=4)
    paths = distill(str(tiny_teacher), tiny_corpus, tmp_path, cfg, progress=False)
    assert [p.name for p in paths] == ["student-2.safetensors", "student-1.safetensors"]
    _, meta = load_checkpoint(paths[-1])
    assert meta["kind"] == "student" and meta["sampling"]["timesteps"] == [999]
    assert meta["distill"]["method"] == "progressive"
    before = paths[0].stat().st_mtime_ns
    distill(str(tiny_teacher), tiny_corpus, tmp_path, cfg, progress=False)
    assert paths[0].stat().st_mtime_ns == before  # finished students are not redone


def test_consistency_student_is_one_step(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    student, losses = consistency_distill(teacher, teacher.schedule.timesteps(8), sampler,
                                          DistillConfig(method="consistency", iters=4, batch=4))
    assert len(student.timesteps()) == 1 and all(np.isfinite(losses))
