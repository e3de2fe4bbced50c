"""Teacher and students train on real crops through the one loop; files rebuild themselves; runs resume."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from tiny_latent import TINY_NET, TINY_TRAIN

from talkhead.cli import main
from talkhead.latent.data import load_faces
from talkhead.latent.engine import load_engine
from talkhead.latent.train import BridgeObjective, FramePairs, TeacherObjective, face_clips, train_teacher


def test_engine_files_rebuild_and_sample_deterministically(tiny_engine_run, tiny_faces):
    clip = load_faces(tiny_faces, "heldout")[0]
    for name, steps in [("teacher", 50), ("student-1", 1)]:
        eng = load_engine(tiny_engine_run / f"{name}.safetensors")
        assert len(eng.timesteps) == steps and eng.cfg.widths == TINY_NET.widths
        assert eng.cfg.prediction == ("eps" if name == "teacher" else "v")
        ref = eng.encode(clip["reference"][None])
        m = torch.from_numpy(clip["motion"][:6])
        noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(0)).expand(6, -1, -1, -1)
        z = eng.sample(ref, m, noise)
        assert z.shape == (6, 4, 8, 8) and torch.isfinite(z).all()
        assert torch.equal(z, load_engine(tiny_engine_run / f"{name}.safetensors").sample(ref, m, noise))
        frames = eng.decode(z)
        assert frames.shape == (6, 64, 64, 3) and frames.dtype.name == "uint8"
    meta = load_engine(tiny_engine_run / "student-1.safetensors").meta
    assert meta["train"]["teacher"] == "teacher.safetensors" and meta["train"]["wall_s"] > 0


def test_teacher_loss_falls(tiny_vae, tiny_faces, tiny_engine_run):
    # The same fixed batches scored before and after training: the teacher learned them.
    eng = load_engine(tiny_engine_run / "teacher.safetensors")
    data = FramePairs(eng, face_clips(tiny_faces), cache=tiny_engine_run / "latents.pt")
    objective = TeacherObjective(eng, data, TINY_TRAIN)
    fresh = type(eng.net)(eng.cfg)

    def score(net):
        with torch.no_grad():
            return sum(float(objective(net, torch.Generator().manual_seed(s), 0)) for s in range(8))

    assert score(eng.net) < 0.8 * score(fresh)


def test_bridge_training_draws_the_frame_from_another_frame_noised(tiny_engine_run, tiny_faces, tmp_path):
    # Fine-tuned as the bridge samples it (from a frame 6 away noised to t = 800, then 400), the teacher's x0 there
    # is nearer the frame than the eps teacher's, on the same fixed batches, and the file says how it was trained.
    clips, grid = face_clips(tiny_faces), [800, 400]
    n = sum(len(c["frames"]) for c in clips)
    table = np.clip(np.arange(n)[:, None] + np.array([[-6, 6]]), 0, n - 1)
    cfg = replace(TINY_TRAIN, steps=40)
    train_teacher(None, clips, tmp_path, cfg, name="bridge", init=tiny_engine_run / "teacher.safetensors",
                  references=table, timesteps=grid, bridge=True, progress=False)
    tuned, teacher = (load_engine(run / f) for run, f in ((tmp_path, "bridge.safetensors"),
                                                          (tiny_engine_run, "teacher.safetensors")))
    assert tuned.meta["train"]["objective"] == "bridge" and tuned.timesteps == grid
    data = FramePairs(teacher, clips, cache=tiny_engine_run / "latents.pt", references=table)
    objective = BridgeObjective(teacher, data, replace(cfg, pixel=0.0), grid)

    def score(net):
        with torch.no_grad():
            return sum(float(objective(net, torch.Generator().manual_seed(s), 0)) for s in range(8))

    assert score(tuned.net) < 0.8 * score(teacher.net)


def test_cli_trains_resumes_and_refuses(tiny_vae, tiny_faces, tmp_path, capsys):
    run = tmp_path / "run"
    base = ["latent", "train", "--vae", str(tiny_vae), "--faces", str(tiny_faces), "--out", str(run),
            "--widths", "16,16,16", "--batch", "4", "--quiet"]
    assert main([*base, "--steps", "4"]) == 0
    assert main([*base, "--steps", "4"]) == 2  # a finished run is not overwritten
    assert "--resume" in capsys.readouterr().err
    assert main([*base, "--steps", "4", "--resume"]) == 0
    assert main([*base[:-1], "--widths", "12,16,16", "--steps", "4", "--out", str(tmp_path / "b")]) == 2
    assert main(["latent", "distill", "--teacher", str(run / "teacher.safetensors"), "--faces", str(tiny_faces),
                 "--out", str(run), "--to", "50", "--steps", "2", "--quiet"]) == 2  # no fewer steps than the teacher's
    assert "1 to 49" in capsys.readouterr().err


def test_ship_writes_a_loadable_fp16_engine(tiny_engine_run, tmp_path, capsys):
    src = tiny_engine_run / "student-1.safetensors"
    assert main(["latent", "ship", str(src), "--name", "latent-tiny", "--dir", str(tmp_path)]) == 0
    shipped = load_engine(tmp_path / "latent-tiny.safetensors")
    orig = load_engine(src)
    assert shipped.meta["name"] == "latent-tiny" and shipped.timesteps == orig.timesteps
    assert shipped.meta["train"] == orig.meta["train"]  # the provenance travels with the weights
    ref, m = torch.zeros(1, 4, 8, 8), torch.zeros(3, 58)
    noise = torch.randn(3, 4, 8, 8, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(shipped.sample(ref, m, noise), orig.sample(ref, m, noise), atol=0.05)
    assert main(["latent", "ship", str(src), "--name", "../x", "--dir", str(tmp_path)]) == 2


def test_bridge_moves_each_start_from_its_bank_frame_to_the_drawn_frame(tiny_engine_run, tiny_faces):
    # ``move`` is given each reference with the frame it was banked from and the frame drawn (the pair's first):
    # moved all the way (the drawn frame's own latent, what a perfect warp would give), the teacher's x0 along the
    # bridge is nearer the frame than from the bank frame 6 away, on the same batches (the eps teacher, not tuned to
    # trust its start, gains ~12 %).
    clips, grid = face_clips(tiny_faces), [800, 400]
    n = sum(len(c["frames"]) for c in clips)
    table = np.clip(np.arange(n)[:, None] + np.array([[-6, 6]]), 0, n - 1)
    teacher = load_engine(tiny_engine_run / "teacher.safetensors")
    data = FramePairs(teacher, clips, cache=tiny_engine_run / "latents.pt", references=table)
    seen = []

    def to_the_frame(z, src, dst):
        seen.append((src, dst))
        return data.latents[dst]

    cfg = replace(TINY_TRAIN, pixel=0.0)
    plain, moved = (BridgeObjective(teacher, data, cfg, grid, move) for move in (None, to_the_frame))

    def score(objective):
        with torch.no_grad():
            return sum(float(objective(teacher.net, torch.Generator().manual_seed(s), 0)) for s in range(8))

    assert score(moved) < 0.9 * score(plain)  # ignored, it would score the same: the batches are the same
    src, dst = seen[0]
    assert ((src - dst).abs() == 6).all() or bool(((src == 0) | (src == n - 1)).any())
