"""The teacher's training loop: AdamW, EMA, gradient clipping, validation, atomic checkpoints, resume, DDP.

A run directory holds ``config.json``, ``metrics.jsonl``, ``last.safetensors`` (EMA weights, a
self-describing checkpoint that ``talkhead.motion.model.load`` reads) and ``state.pt`` (everything
``--resume`` needs: raw weights, EMA, optimiser, step, random state). Both files are replaced
atomically, so a kill at any moment leaves the previous checkpoint intact.
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

from talkhead.audio.features import FeatureConfig
from talkhead.bench.metrics import lipsync_r
from talkhead.errors import InputError
from talkhead.motion.denoiser import DenoiserConfig, count_parameters
from talkhead.motion.losses import diffusion_loss
from talkhead.motion.model import MotionModel, build
from talkhead.train.data import Clips, WindowSampler, fit_normalizer, load_clips, load_corpora
from talkhead.util import atomic_write, clear_stale_parts


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings of a training run."""

    steps: int = 4000
    batch: int = 64
    lr: float = 4e-4
    weight_decay: float = 0.01
    warmup: int = 200
    ema: float = 0.999
    clip: float = 1.0
    audio_drop: float = 0.1
    snr_min: float = 0.0  # > 0: weight the x0 loss by SNR clipped to [snr_min, snr_max]
    snr_max: float = 5.0
    velocity: float = 0.0  # weight of the frame-difference (temporal) loss term
    val_every: int = 500
    ckpt_every: int = 200
    val_clips: int = 16
    seed: int = 0
    device: str = "cpu"
    stop_at: int = 0  # > 0: checkpoint and stop at this step (the LR schedule still spans ``steps``)
    augmented: int = 0  # augmented copies of each clip's audio (telephone, room, noise, level), cached


def cosine_decay(lr: float, progress: float) -> float:
    """lr at ``progress`` in [0, 1] along a cosine from lr down to a tenth of it."""
    return lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def optimizer_step(opt: torch.optim.Optimizer, loss: torch.Tensor, params, lr: float, clip: float = 1.0) -> torch.Tensor:
    """One update of ``loss`` at learning rate ``lr``, gradients clipped to norm ``clip``; returns the unclipped norm."""
    for group in opt.param_groups:
        group["lr"] = lr
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gnorm = torch.nn.utils.clip_grad_norm_(params, clip)
    opt.step()
    return gnorm


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up, then cosine decay to a tenth."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    return cosine_decay(cfg.lr, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))


def _dist_info() -> tuple[int, int]:
    if "RANK" in os.environ and not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() and os.environ.get("TALKHEAD_DEVICE", "") == "cuda" else "gloo"
        dist.init_process_group(backend)
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


@torch.no_grad()
def validate(model: MotionModel, val: Clips, batch: dict, steps: int = 10, seed: int = 0) -> dict[str, float]:
    """Held-out loss at fixed noise and timesteps, and lip-sync r of DDIM samples."""
    g = torch.Generator().manual_seed(seed)
    loss = float(diffusion_loss(model.denoiser, batch, g, audio_drop=0.0))
    gens, targets = [], []
    for audio, motion in zip(val.audio, val.motion):
        a = ((audio - model.norm.audio_mean) / model.norm.audio_std)[None]
        noise = model.init_noise(1, len(audio), torch.Generator().manual_seed(seed))
        gens.append(model.sample(a, noise, steps=steps, sampler="ddim")[0].numpy())
        targets.append(motion.numpy())
    return {"val_loss": loss, "val_lipsync_r": lipsync_r(gens, targets)}


def _save(out: Path, model: MotionModel, ema_net: torch.nn.Module, opt: torch.optim.Optimizer,
          step: int, gen: torch.Generator, meta: dict) -> None:
    # The model file first, the resume state last: whenever state.pt exists, a loadable
    # last.safetensors from the same step or a later one exists too.
    ema_model = MotionModel(copy.deepcopy(model.denoiser), model.features, model.norm, model.sampling)
    ema_model.denoiser.net.load_state_dict(ema_net.state_dict())
    ema_model.save(out / "last.safetensors", {**meta, "train": {**meta["train"], "step": step}})
    state = {"step": step, "net": model.denoiser.net.state_dict(), "ema": ema_net.state_dict(),
             "opt": opt.state_dict(), "gen": gen.get_state()}
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write(out / "state.pt", buf.getvalue())


def _log(out: Path, row: dict) -> None:
    with open(out / "metrics.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def _setup(data: list[Path], out: Path, model_cfg: DenoiserConfig, cfg: TrainConfig, features: FeatureConfig,
           resume: bool, rank: int):
    """Load data, build or restore the model; returns what the loop needs."""
    train_clips = load_corpora(data, "train", features, augmented=cfg.augmented)
    val_clips = load_clips(data[0], "heldout", features, limit=cfg.val_clips)
    norm = fit_normalizer(train_clips)
    torch.manual_seed(cfg.seed)  # the initial weights are part of the run's determinism
    model = build(model_cfg, features, norm)
    state = None
    if resume:
        if not (out / "state.pt").is_file():
            raise InputError(f"--resume: {out} has no state.pt to resume from")
        state = torch.load(out / "state.pt", weights_only=False)
        model.denoiser.net.load_state_dict(state["net"])
    elif (out / "state.pt").exists() and rank == 0:
        raise InputError(f"{out} already holds a run; pass --resume to continue it or choose a new --out")
    return train_clips, val_clips, norm, model, state


def train(data: str | Path | list[str | Path], out: str | Path, model_cfg: DenoiserConfig = DenoiserConfig(),
          cfg: TrainConfig = TrainConfig(), resume: bool = False, progress: bool = True,
          features: FeatureConfig = FeatureConfig()) -> Path:
    """Train a teacher on one corpus or several (validated on the first one's held-out voices); returns the EMA checkpoint."""
    rank, world = _dist_info()
    out = Path(out)
    data = [Path(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    out.mkdir(parents=True, exist_ok=True)
    if rank == 0:
        clear_stale_parts(out)
    train_clips, val_clips, norm, model, state = _setup(data, out, model_cfg, cfg, features, resume, rank)
    device = torch.device(cfg.device)
    net = model.denoiser.to(device)
    ema_net = copy.deepcopy(model.denoiser.net).requires_grad_(False)
    opt = torch.optim.AdamW(net.net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    gen = torch.Generator().manual_seed(cfg.seed * 1000 + rank)
    step = 0
    if state is not None:
        ema_net.load_state_dict(state["ema"])
        opt.load_state_dict(state["opt"])
        gen.set_state(state["gen"])
        step = state["step"]
    ddp = _DDPDenoiser(torch.nn.parallel.DistributedDataParallel(net), net.schedule) if world > 1 else net
    sampler = WindowSampler(train_clips, norm, model_cfg.window, model_cfg.tail)
    val_batch = WindowSampler(val_clips, norm, model_cfg.window, model_cfg.tail).sample(
        64, torch.Generator().manual_seed(1234))
    meta = _run_meta(data, train_clips, cfg, count_parameters(net.net), world)
    if rank == 0:
        atomic_write(out / "config.json", json.dumps({"model": asdict(model_cfg), "train": asdict(cfg),
                                                      "features": asdict(features)}, indent=1).encode())
        _log(out, {"event": "resume" if resume else "start", "step": step, "params": meta["train"]["params"]})
    bar = tqdm(total=cfg.steps, initial=step, desc="train", disable=not progress or rank != 0)
    t0 = time.time()
    end = min(cfg.steps, cfg.stop_at) if cfg.stop_at > 0 else cfg.steps
    while step < end:
        batch = {k: v.to(device) for k, v in sampler.sample(cfg.batch // world, gen).items()}
        loss = diffusion_loss(ddp, batch, gen, cfg.audio_drop,
                              (cfg.snr_min, cfg.snr_max) if cfg.snr_min > 0 else None, cfg.velocity)
        gnorm = optimizer_step(opt, loss, net.net.parameters(), lr_at(step, cfg), cfg.clip)
        with torch.no_grad():
            decay = min(cfg.ema, (1 + step) / (10 + step))  # warm-up: early EMA tracks the weights closely
            for pe, p in zip(ema_net.parameters(), net.net.parameters()):
                pe.lerp_(p.detach().to(pe.device), 1 - decay)
        step += 1
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.4f}")
        if rank == 0:
            _after_step(out, step, loss, gnorm, cfg, model, ema_net, opt, gen, meta, val_clips, val_batch, t0)
    bar.close()
    if world > 1:
        dist.barrier()
    return out / "last.safetensors"


def _run_meta(data: list[Path], clips: Clips, cfg: TrainConfig, params: int, world: int) -> dict:
    """What the checkpoint says about how it was made; with Whisper features, which encoder weights."""
    train = {"data": ",".join(map(str, data)), "clips": len(clips.rows),
             "minutes": round(sum(r["duration"] for r in clips.rows) / 60, 1), "config": asdict(cfg),
             "params": params, "world": world}
    if clips.features.kind == "whisper":
        from talkhead.audio.whisper import weights_info

        train["front_end"] = weights_info()
    return {"kind": "teacher", "train": train}


class _DDPDenoiser(torch.nn.Module):
    """DDP must see the forward call to sync gradients; this keeps the Denoiser's call signature."""

    def __init__(self, ddp: torch.nn.Module, schedule) -> None:
        super().__init__()
        self.ddp, self.schedule = ddp, schedule

    def forward(self, x, t, cond):
        return self.ddp(x, t, cond)


def _after_step(out: Path, step: int, loss, gnorm, cfg: TrainConfig, model: MotionModel, ema_net, opt, gen,
                meta: dict, val_clips: Clips, val_batch: dict, t0: float) -> None:
    if step % 20 == 0 or step == cfg.steps:
        _log(out, {"step": step, "loss": round(loss.item(), 5), "grad_norm": round(float(gnorm), 4),
                   "lr": lr_at(step, cfg), "elapsed_s": round(time.time() - t0, 1)})
    if step % cfg.val_every == 0 or step == cfg.steps:
        ema_model = MotionModel(copy.deepcopy(model.denoiser).cpu(), model.features, model.norm, model.sampling)
        ema_model.denoiser.net.load_state_dict(ema_net.state_dict())
        _log(out, {"step": step, **validate(ema_model, val_clips, val_batch)})
    if step % cfg.ckpt_every == 0 or step in (cfg.steps, cfg.stop_at):
        _save(out, model, ema_net, opt, step, gen, meta)
