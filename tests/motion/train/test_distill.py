"""Distillation on a tiny teacher: a progressive round lowers its loss; students carry their grids."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from talkhead.checkpoint import load_checkpoint
from talkhead.cli import main
from talkhead.diffusion.losses import segment_targets
from talkhead.diffusion.samplers import sample_ddim
from talkhead.errors import InputError
from talkhead.motion.data.windows import WindowSampler, load_clips
from talkhead.motion.model import load, with_depth, with_experts
from talkhead.motion.train.configs import ConsistencyConfig, ProgressiveConfig
from talkhead.motion.train.consistency import consistency_distill
from talkhead.motion.train.distill import distill
from talkhead.motion.train.progressive import draw_steps, progressive_round, segment_bounds
from talkhead.util import file_sha256


def test_one_progressive_round_lowers_its_loss(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    sampler = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    grid = teacher.schedule.timesteps(4)
    student, losses = progressive_round(teacher, grid, sampler, ProgressiveConfig(iters=60, batch=16, lr=1e-3))
    assert np.mean(losses[-10:]) < np.mean(losses[:10])
    assert student.sampling["timesteps"] == grid[::2]


def test_average_returns_the_ema_of_the_rounds_weights_without_changing_its_training(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    grid, sampler = teacher.schedule.timesteps(4), WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm)
    snaps = []  # the student's weights after each optimiser step, as the optimiser holds them
    hook = register_optimizer_step_post_hook(
        lambda opt, *_: snaps.append([p.detach().clone() for g in opt.param_groups for p in g["params"]]))
    try:
        run = [progressive_round(teacher, grid, sampler, ProgressiveConfig(iters=6, batch=8, lr=1e-3, average=avg),
                                 progress=False) for avg in (0.0, 0.7)]
    finally:
        hook.remove()
    (last, last_losses), (averaged, avg_losses) = run
    assert avg_losses == last_losses  # the average is only read out; training is the same run
    plain_steps, averaged_steps = snaps[:6], snaps[6:]  # the two runs of 6 steps, in order
    ema = averaged_steps[0]
    for step in averaged_steps[1:]:
        ema = [0.7 * e + 0.3 * w for e, w in zip(ema, step)]
    for p, e, w, w_end in zip(averaged.denoiser.net.parameters(), ema, last.denoiser.net.parameters(), plain_steps[-1]):
        torch.testing.assert_close(p.detach(), e)
        assert torch.equal(w.detach(), w_end)  # without --average the round returns its last weights
    assert not all(torch.equal(p, q) for p, q in zip(averaged.denoiser.net.parameters(), last.denoiser.net.parameters()))
    with pytest.raises(InputError, match="--average"):
        progressive_round(teacher, grid, sampler, ProgressiveConfig(iters=1, batch=4, average=1.0), progress=False)


def test_chain_writes_self_describing_students_and_resumes(tiny_teacher, tiny_corpus, tmp_path):
    cfg = ProgressiveConfig(start_steps=4, to=1, iters=3, batch=4)
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
                                          ConsistencyConfig(iters=4, batch=4))
    assert len(student.timesteps()) == 1 and all(np.isfinite(losses))


def test_merged_steps_target_is_the_teachers_own_ddim_run(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    batch = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm).sample(3, torch.Generator().manual_seed(0))
    cond = {k: v for k, v in batch.items() if k != "x0"}
    grid = teacher.schedule.timesteps(8)
    x_t = teacher.schedule.add_noise(batch["x0"], torch.randn(batch["x0"].shape), torch.tensor([grid[4]] * 3))
    ts = grid[4:] + [-1]  # the last four steps, down to the clean end
    target, _ = segment_targets(teacher.denoiser, teacher.schedule, x_t, torch.zeros(3, dtype=torch.long), [ts], cond)
    with torch.no_grad():
        own = sample_ddim(lambda x, t: teacher.denoiser(x, t, cond), x_t, teacher.schedule, grid[4:])
    torch.testing.assert_close(target, own, atol=1e-5, rtol=1e-4)


def test_a_round_can_merge_four_steps_from_a_given_start(tiny_teacher, tiny_corpus, tmp_path, capsys):
    first = distill(str(tiny_teacher), tiny_corpus, tmp_path / "a", ProgressiveConfig(start_steps=8, to=4, iters=2, batch=4),
                    progress=False)[0]
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path / "b"),
            "--start-steps", "8", "--to", "2", "--factor", "4", "--iters", "40", "--batch", "16", "--lr", "1e-3",
            "--init", str(first), "--quiet"]
    assert main([*args[:-1], "--factor", "3"]) == 2  # 8 steps do not split into threes: refused before training
    assert "multiple of 3" in capsys.readouterr().err
    assert main([*args[:-3], "--init", "student-1", "--quiet"]) == 2  # the shipped student was normalised on another corpus
    assert "another normalisation" in capsys.readouterr().err
    assert main(args) == 0
    assert sorted(p.name for p in (tmp_path / "b").glob("*.safetensors")) == ["student-2.safetensors"]
    student, grid = load(tmp_path / "b" / "student-2.safetensors"), load(tiny_teacher).schedule.timesteps(8)
    info = student.meta["distill"]
    assert student.timesteps() == grid[::4] and info["config"]["init"] == str(first)
    assert info["data"] == str(tiny_corpus)  # the corpus it learned from travels with it
    # so do the exact files it learned from, which a shipped name alone would not pin down
    assert info["teacher_sha256"] == file_sha256(tiny_teacher) and info["init_sha256"] == file_sha256(first)
    assert info["teacher_sha256"] != info["init_sha256"]
    assert info["loss_last"] < info["loss_first"]


def test_step_weights_choose_which_student_steps_train(tiny_teacher, tiny_corpus, tmp_path, capsys):
    gen = torch.Generator().manual_seed(0)
    assert set(draw_steps(4, ProgressiveConfig(batch=64, step_weights=(0, 0, 0, 1)), gen).tolist()) == {3}
    drawn = draw_steps(4, ProgressiveConfig(batch=4000, step_weights=(3, 1, 1, 5)), gen)
    assert abs((drawn == 3).float().mean().item() - 0.5) < 0.03 and abs((drawn == 1).float().mean().item() - 0.1) < 0.03
    same = draw_steps(4, ProgressiveConfig(batch=16), torch.Generator().manual_seed(1))
    assert same.tolist() == torch.randint(0, 4, (16,), generator=torch.Generator().manual_seed(1)).tolist()
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path),
            "--start-steps", "8", "--factor", "2", "--iters", "2", "--batch", "4", "--quiet"]
    assert main([*args, "--to", "1", "--step-weights", "1,1,1,1"]) == 2  # a chain: weights for which round?
    assert "--to 4" in capsys.readouterr().err
    assert main([*args, "--to", "4", "--step-weights", "1,1,-1,1"]) == 2
    assert "non-negative" in capsys.readouterr().err
    assert main([*args, "--to", "4", "--step-weights", "1,0,0,1"]) == 0
    assert load(tmp_path / "student-4.safetensors").meta["distill"]["config"]["step_weights"] == [1, 0, 0, 1]


def test_uneven_segments_give_the_student_its_own_timesteps(tiny_teacher, tiny_corpus, tmp_path, capsys):
    assert segment_bounds(32, ProgressiveConfig(segments=(8, 12, 8, 4))) == [0, 8, 20, 28, 32]
    assert segment_bounds(8, ProgressiveConfig(factor=4)) == [0, 4, 8]
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path),
            "--start-steps", "8", "--iters", "2", "--batch", "4", "--quiet"]
    assert main([*args, "--to", "2", "--segments", "4,2,1,1"]) == 2  # four steps, but --to asks for two
    assert "--to 4" in capsys.readouterr().err
    assert main([*args, "--to", "3", "--segments", "4,2,1"]) == 2
    assert "add up to the 8-step grid" in capsys.readouterr().err
    assert main([*args, "--to", "2", "--segments", "4,x"]) == 2
    assert "whole numbers" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.safetensors"))
    assert main([*args, "--to", "4", "--segments", "4,2,1,1"]) == 0
    student, grid = load(tmp_path / "student-4.safetensors"), load(tiny_teacher).schedule.timesteps(8)
    assert student.timesteps() == [grid[0], grid[4], grid[6], grid[7]]
    assert student.meta["distill"]["config"]["segments"] == [4, 2, 1, 1]
    # As a teacher, the uneven student is run on its own grid, not on a fresh even one.
    assert main(["distill", "progressive", "--teacher", str(tmp_path / "student-4.safetensors"), "--data", str(tiny_corpus),
                 "--out", str(tmp_path / "next"), "--start-steps", "4", "--to", "2", "--iters", "2", "--batch", "4",
                 "--quiet"]) == 0
    nxt = load(tmp_path / "next" / "student-2.safetensors")
    assert nxt.meta["distill"]["from_grid"] == student.timesteps() and nxt.timesteps() == [grid[0], grid[6]]


def test_grouped_segment_targets_match_each_windows_own_teacher_run(tiny_teacher, tiny_corpus):
    teacher = load(tiny_teacher)
    batch = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm).sample(4, torch.Generator().manual_seed(2))
    cond = {k: v for k, v in batch.items() if k != "x0"}
    full = teacher.schedule.timesteps(8) + [-1]
    paths, idx = [full[0:4], full[3:8], full[7:9]], torch.tensor([1, 0, 2, 1])
    starts = torch.tensor([paths[i][0] for i in idx])
    x_t = teacher.schedule.add_noise(batch["x0"], torch.randn(batch["x0"].shape, generator=torch.Generator().manual_seed(3)), starts)
    target, a_t = segment_targets(teacher.denoiser, teacher.schedule, x_t, idx, paths, cond)
    for j, i in enumerate(idx.tolist()):
        one = {k: v[j:j + 1] for k, v in cond.items()}
        own, a = segment_targets(teacher.denoiser, teacher.schedule, x_t[j:j + 1], torch.zeros(1, dtype=torch.long),
                                 [paths[i]], one)
        torch.testing.assert_close(target[j:j + 1], own, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(a_t[j:j + 1], a)


def test_expert_student_starts_as_its_init_and_keeps_one_network_per_step(tiny_teacher, tiny_corpus, tmp_path):
    teacher = load(tiny_teacher)
    grid = teacher.schedule.timesteps(8)
    split = with_experts(teacher, grid[::2])
    batch = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm).sample(4, torch.Generator().manual_seed(0))
    cond, t = {k: v for k, v in batch.items() if k != "x0"}, torch.tensor(grid[::2])
    with torch.no_grad():  # before training, each copy is the network it came from
        torch.testing.assert_close(split.denoiser(batch["x0"], t, cond), teacher.denoiser(batch["x0"], t, cond))
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path),
            "--start-steps", "8", "--to", "2", "--segments", "6,2", "--experts", "--iters", "30", "--batch", "8",
            "--lr", "1e-3", "--quiet"]
    assert main(args) == 0
    student = load(tmp_path / "student-2.safetensors")
    assert student.cfg.experts == (grid[0], grid[6]) and student.timesteps() == [grid[0], grid[6]]
    tensors, _ = load_checkpoint(tmp_path / "student-2.safetensors")
    assert len(tensors) == 2 * len(teacher.denoiser.net.state_dict())
    first, second = student.denoiser.net.experts
    assert any(not torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    noise = student.init_noise(1, 100, torch.Generator().manual_seed(0))
    audio = torch.zeros(1, 100, teacher.cfg.audio_dim)
    assert torch.isfinite(student.sample(audio, noise)).all()  # plain load + sample runs it


def test_deeper_student_starts_as_its_init_and_learns(tiny_teacher, tiny_corpus, tmp_path, capsys):
    teacher = load(tiny_teacher)
    deep = with_depth(teacher, teacher.cfg.depth + 2)
    assert len(deep.denoiser.net.blocks.layers) == teacher.cfg.depth + 2
    batch = WindowSampler(load_clips(tiny_corpus, "train"), teacher.norm).sample(4, torch.Generator().manual_seed(0))
    cond, t = {k: v for k, v in batch.items() if k != "x0"}, torch.tensor([999, 600, 200, 10])
    with torch.no_grad():  # the added layers start as the identity
        torch.testing.assert_close(deep.denoiser(batch["x0"], t, cond), teacher.denoiser(batch["x0"], t, cond))
    args = ["distill", "progressive", "--teacher", str(tiny_teacher), "--data", str(tiny_corpus), "--out", str(tmp_path),
            "--start-steps", "8", "--to", "4", "--depth", "3", "--iters", "40", "--batch", "16", "--lr", "1e-3",
            "--quiet"]
    assert main(args) == 0
    student = load(tmp_path / "student-4.safetensors")
    assert student.cfg.depth == 3 and student.meta["distill"]["config"]["depth"] == 3
    assert student.meta["distill"]["loss_last"] < student.meta["distill"]["loss_first"]
    added = student.denoiser.net.blocks.layers[2].linear2.weight
    assert added.abs().max() > 0  # the identity layers trained
    shallow = [*args[:7], str(tmp_path / "c"), "--init", str(tmp_path / "student-4.safetensors"),
               "--start-steps", "4", "--to", "2", "--depth", "2", "--quiet"]
    assert main(shallow) == 2  # a student only grows
    assert "can only grow" in capsys.readouterr().err
