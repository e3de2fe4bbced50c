"""Teacher training: it learns, checkpoints describe themselves, --resume continues exactly, DDP runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import torch

from talkhead.checkpoint import load_checkpoint
from talkhead.motion.model import load
from talkhead.motion.train.teacher import train


def _metrics(run):
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_training_lowers_loss_and_writes_a_loadable_checkpoint(tiny_teacher, tiny_cfg):
    rows = _metrics(tiny_teacher.parent)
    losses = [r["loss"] for r in rows if "loss" in r]
    assert losses[-1] < losses[0]
    assert any("val_lipsync_r" in r for r in rows)
    _, meta = load_checkpoint(tiny_teacher)
    assert meta["denoiser"]["width"] == tiny_cfg.width and len(meta["norm"]["motion_mean"]) == 58
    assert meta["train"]["step"] == 40
    model = load(tiny_teacher)
    assert model.cfg == tiny_cfg


def _cli_train(corpus, out, steps, *extra):
    return [sys.executable, "-m", "talkhead.cli", "train", "--data", str(corpus), "--out", str(out),
            "--steps", str(steps), "--batch", "8", "--lr", "1e-3", "--width", "32", "--depth", "1",
            "--heads", "2", "--ckpt-every", "2", "--val-every", "1000", "--val-clips", "2", "--quiet",
            "--threads", "1", *extra]


def test_kill_then_resume_matches_an_uninterrupted_run(tiny_corpus, tmp_path):
    steps = 24
    whole = tmp_path / "whole"
    subprocess.run(_cli_train(tiny_corpus, whole, steps), check=True, capture_output=True)
    cut = tmp_path / "cut"
    proc = subprocess.Popen(_cli_train(tiny_corpus, cut, steps), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and not (cut / "state.pt").exists():
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    saved = torch.load(cut / "state.pt", weights_only=False)["step"]
    assert 0 < saved < steps, "the kill should land mid-run"
    load(cut / "last.safetensors")  # the checkpoint on disk is whole
    subprocess.run(_cli_train(tiny_corpus, cut, steps, "--resume"), check=True, capture_output=True)
    a, b = load(whole / "last.safetensors"), load(cut / "last.safetensors")
    assert torch.load(cut / "state.pt", weights_only=False)["step"] == steps
    for (k, va), vb in zip(a.denoiser.net.state_dict().items(), b.denoiser.net.state_dict().values()):
        assert torch.allclose(va, vb, atol=1e-5), k
    assert not list(cut.glob(".*.part*"))


def test_existing_run_needs_resume(tiny_corpus, tmp_path, tiny_cfg, make_train_cfg):
    out = tmp_path / "r"
    train(tiny_corpus, out, tiny_cfg, make_train_cfg(steps=2, ckpt_every=2, val_every=100), progress=False)
    r = subprocess.run(_cli_train(tiny_corpus, out, 4), capture_output=True, text=True)
    assert r.returncode == 2 and "--resume" in r.stderr and "Traceback" not in r.stderr


def test_ddp_with_two_cpu_processes(tiny_corpus, tmp_path):
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "29571",
           "-m", "talkhead.cli", *_cli_train(tiny_corpus, out, 4)[3:]]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    _, meta = load_checkpoint(out / "last.safetensors")
    assert meta["train"]["world"] == 2 and meta["train"]["step"] == 4


def test_stop_at_then_resume_equals_one_run(tiny_corpus, tmp_path, tiny_cfg, make_train_cfg):
    one = train(tiny_corpus, tmp_path / "one", tiny_cfg, make_train_cfg(steps=8, val_every=100), progress=False)
    two = tmp_path / "two"
    train(tiny_corpus, two, tiny_cfg, make_train_cfg(steps=8, val_every=100, stop_at=6), progress=False)
    assert torch.load(two / "state.pt", weights_only=False)["step"] == 6
    train(tiny_corpus, two, tiny_cfg, make_train_cfg(steps=8, val_every=100), resume=True, progress=False)
    a, b = load(one).denoiser.net.state_dict(), load(two / "last.safetensors").denoiser.net.state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)


def test_even_audio_kernel_is_refused(tiny_corpus, tmp_path):
    out = tmp_path / "k"
    r = subprocess.run(_cli_train(tiny_corpus, out, 2, "--audio-kernel", "4"), capture_output=True, text=True)
    assert r.returncode == 2 and "--audio-kernel" in r.stderr and "Traceback" not in r.stderr
    assert not (out / "state.pt").exists()
