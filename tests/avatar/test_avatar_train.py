"""``talkhead avatar train``: one person's video -> one self-describing .avatar; resumable; bad input refused."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from talkhead.avatar.file import load_avatar
from talkhead.cli import main
from talkhead.latent.engine import load_engine
from talkhead.latent.vae import load_vae
from talkhead.rig.spec import SPEC


def test_trained_avatar_describes_itself(tiny_avatar):
    av = load_avatar(tiny_avatar)
    work = tiny_avatar.with_name(tiny_avatar.name + ".work")
    info = json.loads((work / "train.json").read_text())
    assert av.meta["kind"] == "talkhead-avatar" and av.meta["train"]["engine"] == "teacher-bridge.safetensors"
    assert av.engine.cfg.context == 4 and av.engine.cfg.geometry == 2
    assert av.engine.bridge and av.engine.timesteps == [800, 400]  # the default: a 2-step bridge from the reference
    student = load_engine(work / "student-1.safetensors")
    assert student.bridge and student.timesteps == [800] and student.cfg.prediction == "v"
    assert av.side % 16 == 0 and av.reference.shape == (av.side, av.side, 3)
    assert len(av.base) == 25 and av.base_affine.shape == (25, 2, 3) and av.base_motion.shape == (25, 58)
    assert set(info["wall_s"]) >= {"ingest_s", "vae_s", "decoder_s", "teacher_s", "bank_s", "bridge_s", "student1_s",
                                     "total_s"}
    # The mouth bank: every training frame's latent and motion; the shipped teacher was tuned on it.
    frames = info["report"]["talk.mp4"]["kept"]
    g = av.side // av.engine.vae.down
    assert av.bank["latent"].shape == (frames, 4, g, g) and av.bank["motion"].shape == (frames, 58)
    assert av.bank["ends"].sum() >= 1 and av.bank["jump"] == 10.0
    tuned = load_engine(work / "teacher-bank.safetensors")
    assert tuned.meta["train"]["bank"] and tuned.meta["train"]["init"] == "teacher.safetensors"
    # Then tuned as its bridge samples it, from bank neighbours; that one ships and teaches the students.
    bridge = load_engine(work / "teacher-bridge.safetensors")
    assert bridge.meta["train"]["objective"] == "bridge" and bridge.meta["train"]["init"] == "teacher-bank.safetensors"
    assert bridge.meta["train"]["moved"]  # from bank mouths moved to each frame's (``bridge_move``)
    assert bridge.bridge and bridge.timesteps == [800, 400]
    assert any(not torch.equal(v, tuned.net.state_dict()[k]) for k, v in bridge.net.state_dict().items())
    assert student.meta["train"]["teacher"] == "teacher-bridge.safetensors"
    # The shipped VAE: the critic-sharpened decoder over the first stage's (frozen) encoder.
    first, sharp = load_vae(work / "vae.safetensors").state_dict(), load_vae(work / "decoder.safetensors").state_dict()
    shipped = av.engine.vae.state_dict()
    assert all(torch.equal(shipped[k], first[k]) for k in first if k.startswith("encoder."))
    assert all(torch.equal(shipped[k], sharp[k]) for k in sharp)
    assert any(not torch.equal(first[k], sharp[k]) for k in first if k.startswith("decoder."))
    assert info["report"]["talk.mp4"]["lost"] == []


def _cli_args(video, out):
    return ["avatar", "train", str(video), "--out", str(out), "--min-seconds", "3", "--fit-iters", "100",
            "--vae-widths", "8,16", "--vae-batch", "4", "--vae-patch", "48", "--widths", "8,16,16",
            "--batch", "4", "--students", "1", "--ship", "1", "--base-seconds", "1",
            "--student-steps", "10", "--teacher-steps", "30", "--critic", "0.2", "--critic-steps", "8",
            "--bridge-steps", "10", "--quiet"]


def test_train_resumes_after_sigkill(talking_video, tmp_path):
    video, _ = talking_video
    out = tmp_path / "me.avatar"
    args = _cli_args(video, out) + ["--vae-steps", "400"]  # checkpoints every 100 steps
    proc = subprocess.Popen([sys.executable, "-m", "talkhead.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    state = tmp_path / "me.avatar.work" / "vae.state.pt"
    deadline = time.time() + 240
    while not state.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.5)
    assert state.exists(), "the VAE stage never checkpointed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not out.exists()  # nothing half-written
    args = _cli_args(video, out) + ["--vae-steps", "150"]  # the rerun continues (to a shorter count)
    assert main(args) == 0
    av = load_avatar(out)
    assert av.meta["train"]["engine"] == "student-1.safetensors"
    assert "ingest_s" in av.meta["train"]["wall_s"]


def test_a_renamed_copy_of_the_video_resumes_the_run_and_reads_its_base_from_the_new_name(tiny_avatar, tiny_avatar_cfg,
                                                                                           talking_video, tmp_path):
    import shutil

    from talkhead.avatar.train import train_avatar

    work = tiny_avatar.with_name(tiny_avatar.name + ".work")
    out = tmp_path / "again.avatar"
    shutil.copytree(work, out.with_name(out.name + ".work"))
    copy = shutil.copy(talking_video[0], tmp_path / "renamed.mp4")
    train_avatar([copy], out, tiny_avatar_cfg, progress=False, log=lambda *a: None)  # every stage resumed, none run
    av, before = load_avatar(out), load_avatar(tiny_avatar)
    assert av.meta["base"]["video"] == "renamed.mp4" and before.meta["base"]["video"] == "talk.mp4"
    assert np.array_equal(av.base, before.base)


@pytest.mark.parametrize("case", ["short", "noface", "corrupt", "missing"])
def test_bad_videos_are_refused_in_one_line(case, talking_video, tmp_path, capsys):
    from talkhead.video import write_mp4

    video = tmp_path / f"{case}.mp4"
    if case == "short":
        video = talking_video[0]
    elif case == "noface":
        write_mp4(video, [np.full((96, 96, 3), 100, np.uint8)] * 30, None)
    elif case == "corrupt":
        video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(4000))
    out = tmp_path / "x.avatar"
    argv = ["avatar", "train", str(video), "--out", str(out), "--quiet"]  # the default: 10 s at least
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("talkhead: error:")
    word = {"short": "too short", "noface": "no face", "corrupt": "cannot read", "missing": "no such video"}[case]
    assert word in err[0]
    assert not out.exists()


def test_a_bank_over_its_budget_keeps_whole_seconds_and_large_base_frames_are_made_smaller(tiny_avatar, tiny_avatar_cfg, talking_video,
                                                                         tmp_path):
    import shutil
    from dataclasses import replace

    from talkhead.avatar.renderer import AvatarRenderer
    from talkhead.avatar.train import train_avatar

    def bank_bytes(av) -> int:
        return av.bank["detail"][0].nbytes + av.bank["latent"].numel() * 2 + av.bank["motion"].nbytes

    full = load_avatar(tiny_avatar)
    n = len(full.bank["motion"])
    budget_mb = 0.5 * bank_bytes(full) / 1e6  # half the bank
    out = tmp_path / "small.avatar"  # the same trained stages, saved again under a budget, base frames at most 128 px
    shutil.copytree(tiny_avatar.with_name(tiny_avatar.name + ".work"), tmp_path / "small.avatar.work")
    train_avatar([talking_video[0]], out, replace(tiny_avatar_cfg, bank_mb=budget_mb, base_side=128), progress=False,
                 log=lambda *a: None)
    small = load_avatar(out)
    m = len(small.bank["motion"])
    assert 0.3 * n < m < 0.6 * n and bank_bytes(small) <= budget_mb * 1e6
    assert small.meta["bank"]["budget_mb"] == budget_mb
    # Whole seconds, from all of the video, each its own stretch (played forward only within it).
    rows = {full.bank["motion"][i].tobytes(): i for i in range(n)}
    kept = np.array([rows[r.tobytes()] for r in small.bank["motion"]])
    assert kept[0] == 0 and kept[-1] > 0.6 * n and np.all(np.diff(kept) > 0)
    gaps = np.flatnonzero(np.diff(kept) != 1)
    assert len(gaps) >= 1 and small.bank["ends"][gaps].all() and small.bank["ends"][-1]
    runs = np.diff(np.concatenate([[-1], gaps, [m - 1]]))
    assert runs.max() <= 25 and np.median(runs) == 25
    # The base: half the size, the crop maps scaled with it, so each crop is the same face.
    h, w = full.base.shape[1:3]
    assert max(h, w) > 128 and small.base.shape[1:3] == (h // 2, w // 2)
    np.testing.assert_allclose(small.base_affine, full.base_affine * 0.5, rtol=1e-6)
    crops_full, crops_small = full.crops_of(full.base[:4], full.base_affine[:4]), small.crops_of(small.base[:4],
                                                                                                 small.base_affine[:4])
    assert np.abs(crops_full.astype(float) - crops_small).mean() < 8  # the same face, a little softer
    frames = list(AvatarRenderer(small, seed=0).frames(full.base_motion[:6]))
    assert len(frames) == 6 and frames[0].shape == small.base[0].shape


def test_avatar_info_says_what_the_file_holds(tiny_avatar, capsys):
    assert main(["avatar", "info", str(tiny_avatar)]) == 0
    info = json.loads(capsys.readouterr().out)
    av = load_avatar(tiny_avatar)
    assert info["format"] == av.meta["version"] and info["crop_px"] == av.side and info["steps"] == [800, 400]
    assert info["base"]["frames"] == len(av.base) == 25 and info["base"]["video"] == "talk.mp4"
    assert info["bank"]["frames"] == len(av.bank["motion"]) and info["bank"]["stretches"] >= 1
    assert info["videos"]["talk.mp4"]["kept"] == len(av.bank["motion"]) and info["file_mb"] > info["bank"]["mb"]
    assert main(["avatar", "info", str(tiny_avatar.with_name("absent.avatar"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such avatar file" in err[0]


def test_an_avatar_conditioned_on_the_warped_mouth_and_finer_maps_trains_and_draws(tiny_avatar, tiny_avatar_cfg,
                                                                                    talking_video, tmp_path):
    # Issue 48: the denoiser may also see its reference warped by the motion, and the mouth maps drawn finer.
    import shutil
    from dataclasses import replace

    from talkhead.avatar.renderer import AvatarRenderer
    from talkhead.avatar.train import train_avatar

    work = tmp_path / "warped.avatar.work"  # the same ingested data and VAE; new denoisers
    work.mkdir()
    for f in tiny_avatar.with_name(tiny_avatar.name + ".work").glob("*"):
        if f.name.startswith(("data.", "vae.")):
            shutil.copy(f, work / f.name)
    cfg = replace(tiny_avatar_cfg, structure=True, map_detail=2, students=(), critic=0.0)
    train_avatar([talking_video[0]], tmp_path / "warped.avatar", cfg, progress=False, log=lambda *a: None)
    av, plain = load_avatar(tmp_path / "warped.avatar"), load_avatar(tiny_avatar)
    assert av.structured and not plain.structured
    assert av.engine.cfg.context == 2 * av.engine.cfg.latent and av.engine.cfg.geometry == 8
    shut, wide = av.base_motion[:1].copy(), av.base_motion[:1].copy()
    wide[0, SPEC["jawOpen"]] = 1.0  # the warped reference opens its mouth
    s = av.structure(np.concatenate([shut, wide]))
    assert s.shape == (2, av.engine.cfg.latent, av.grid, av.grid) and not torch.allclose(s[0], s[1])
    assert av.maps(shut).shape == (1, 8, av.grid, av.grid)
    frames = list(AvatarRenderer(av, seed=0).frames(av.base_motion[:6]))
    assert len(frames) == 6 and frames[0].shape == av.base[0].shape


def test_the_vae_is_4x_down_up_to_its_setting_and_a_bad_map_detail_or_bridge_move_is_refused():
    from talkhead.avatar.train import AvatarTrainConfig, vae_widths
    from talkhead.errors import InputError

    assert len(vae_widths(128, AvatarTrainConfig())) == 2 and len(vae_widths(160, AvatarTrainConfig())) == 3
    assert len(vae_widths(160, AvatarTrainConfig(vae_4x_up_to=256))) == 2
    with pytest.raises(InputError, match="map-detail"):
        AvatarTrainConfig(map_detail=0)
    with pytest.raises(InputError, match="bridge-move"):
        AvatarTrainConfig(bridge_move="cells")


def test_a_work_folder_is_not_reused_with_the_bridge_moved_otherwise(tiny_avatar, tiny_avatar_cfg, talking_video):
    # The bridge stage's file says only its step: tuned from starts moved otherwise, it would be reused as it is.
    from dataclasses import replace

    from talkhead.avatar.train import train_avatar
    from talkhead.errors import InputError

    before = tiny_avatar.stat().st_mtime_ns
    with pytest.raises(InputError, match="other videos or settings"):
        train_avatar([talking_video[0]], tiny_avatar, replace(tiny_avatar_cfg, bridge_move="latent"), progress=False,
                     log=lambda *a: None)
    assert tiny_avatar.stat().st_mtime_ns == before
