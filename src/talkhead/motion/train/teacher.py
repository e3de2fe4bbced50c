"""The motion teacher: the diffusion objective on corpus windows, run by the one training loop.

A run directory holds ``config.json``, ``metrics.jsonl``, ``last.safetensors`` (EMA weights, a
self-describing checkpoint that ``talkhead.motion.model.load`` reads) and ``state.pt`` (everything
``--resume`` needs). Both files are replaced atomically, so a kill at any moment leaves the previous
checkpoint intact.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from torch import nn

from talkhead.audio.features import FeatureConfig
from talkhead.diffusion.denoiser import count_parameters
from talkhead.diffusion.losses import diffusion_loss
from talkhead.diffusion.schedule import NoiseSchedule
from talkhead.errors import InputError
from talkhead.metrics import lipsync_r
from talkhead.motion.data.windows import Clips, WindowSampler, fit_normalizer, load_clips, load_corpora
from talkhead.motion.model import MotionModel, build
from talkhead.motion.net import DenoiserConfig
from talkhead.motion.train.configs import TrainConfig
from talkhead.train.loop import dist_info, fit, lr_at
from talkhead.util import atomic_write, clear_stale_parts


class DiffusionObjective:
    """The teacher's loss on freshly drawn training windows."""

    def __init__(self, sampler: WindowSampler, schedule: NoiseSchedule, cfg: TrainConfig, world: int,
                 device: torch.device) -> None:
        # The schedule comes separately: under DDP the module the loop passes in hides the Denoiser's own.
        self.sampler, self.schedule, self.cfg, self.world, self.device = sampler, schedule, cfg, world, device

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> torch.Tensor:
        cfg = self.cfg
        batch = {k: v.to(self.device) for k, v in self.sampler.sample(cfg.batch // self.world, gen).items()}
        snr = (cfg.snr_min, cfg.snr_max) if cfg.snr_min > 0 else None
        return diffusion_loss(module, batch, gen, cfg.audio_drop, snr, cfg.velocity, schedule=self.schedule)


@torch.no_grad()
def validate(model: MotionModel, val: Clips, batch: dict, steps: int = 10, seed: int = 0) -> dict[str, float]:
    """Held-out loss at fixed noise and timesteps, and lip-sync r of DDIM samples."""
    g = torch.Generator().manual_seed(seed)
    loss = float(diffusion_loss(model.denoiser, batch, g, audio_drop=0.0))
    gens, targets = [], []
    for audio, motion in zip(val.audio, val.motion):
        a = model.norm.audio(audio)[None]
        noise = model.init_noise(1, len(audio), torch.Generator().manual_seed(seed))
        gens.append(model.sample(a, noise, steps=steps, sampler="ddim")[0].numpy())
        targets.append(motion.numpy())
    return {"val_loss": loss, "val_lipsync_r": lipsync_r(gens, targets)}


def _log(out: Path, row: dict) -> None:
    with open(out / "metrics.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def train(data: str | Path | list[str | Path], out: str | Path, model_cfg: DenoiserConfig = DenoiserConfig(),
          cfg: TrainConfig = TrainConfig(), resume: bool = False, progress: bool = True,
          features: FeatureConfig = FeatureConfig()) -> Path:
    """Train a teacher on one corpus or several (validated on the first one's held-out voices); returns the EMA checkpoint."""
    rank, world = dist_info()
    out = Path(out)
    data = [Path(d) for d in (data if isinstance(data, (list, tuple)) else [data])]
    out.mkdir(parents=True, exist_ok=True)
    if rank == 0:
        clear_stale_parts(out)
    if not resume and (out / "state.pt").exists() and rank == 0:
        raise InputError(f"{out} already holds a run; pass --resume to continue it or choose a new --out")
    train_clips = load_corpora(data, "train", features, augmented=cfg.augmented)
    val_clips = load_clips(data[0], "heldout", features, limit=cfg.val_clips)
    norm = fit_normalizer(train_clips)
    torch.manual_seed(cfg.seed)  # the initial weights are part of the run's determinism
    model = build(model_cfg, features, norm)
    device = torch.device(cfg.device)
    model.denoiser.to(device)
    sampler = WindowSampler(train_clips, norm, model_cfg.window, model_cfg.tail)
    objective = DiffusionObjective(sampler, model.schedule, cfg, world, device)
    val_batch = WindowSampler(val_clips, norm, model_cfg.window, model_cfg.tail).sample(64, torch.Generator().manual_seed(1234))
    meta = _run_meta(data, train_clips, cfg, count_parameters(model.denoiser.net), world)
    if rank == 0:
        atomic_write(out / "config.json", json.dumps({"model": asdict(model_cfg), "train": asdict(cfg),
                                                      "features": asdict(features)}, indent=1).encode())
        _log(out, {"event": "resume" if resume else "start", "params": meta["train"]["params"]})
    t0 = time.time()

    def as_model(avg: nn.Module) -> MotionModel:
        return MotionModel(copy.deepcopy(avg).cpu(), model.features, model.norm, model.sampling)

    def on_step(step: int, loss: float, avg: nn.Module) -> None:
        if step % 20 == 0 or step == cfg.steps:
            _log(out, {"step": step, "loss": round(loss, 5), "lr": lr_at(step - 1, cfg.fit_config()),
                       "elapsed_s": round(time.time() - t0, 1)})
        if step % cfg.val_every == 0 or step == cfg.steps:
            _log(out, {"step": step, **validate(as_model(avg), val_clips, val_batch)})

    def on_checkpoint(step: int, loss: float, avg: nn.Module) -> None:
        as_model(avg).save(out / "last.safetensors", {**meta, "train": {**meta["train"], "step": step}})

    fit(model.denoiser, objective, cfg.fit_config(), out / "state.pt", on_step, on_checkpoint, resume,
        "train", progress)
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
