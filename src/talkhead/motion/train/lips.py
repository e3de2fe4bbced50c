"""Real lips: a motion model (teacher or student) fine-tuned on people filmed talking.

The synthetic corpus teaches lips as a viseme rig draws them; captured real video (``data talking``)
shows how people's lips move with their own speech. Fine-tuning learns the mouth from the real clips and
keeps everything else as it was:

- on real windows, the mouth channels (``SPEC.mouth``) regress onto the motion captured from the frames,
  only where the lips were seen (``valid``); the other channels (blinks, brows, head), which real video
  would teach as one person's habits, are held to the starting model's own prediction;
- on synthetic windows (optional ``synthetic``), the whole prediction is held to the starting model's,
  the mouth with weight ``synthetic_mouth``: a student stays near its teacher where real video is silent.

Inputs are drawn as the model meets them: a student's own timesteps (its grid; an expert per step learns
its step), a teacher's uniformly; x_t is the real motion noised to t. One loss, one loop (``train.loop``),
the checkpoint saved with its ``sampling`` (a student stays a student) and ``lips`` metadata: which
people it learnt from, so that ``bench lips`` never scores it on them.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.motion.data.windows import Clips, WindowSampler, load_clips
from talkhead.motion.model import MotionModel, load
from talkhead.rig.spec import SPEC
from talkhead.train.loop import FitConfig, fit


@dataclass(frozen=True)
class LipsConfig:
    """A real-lips fine-tuning run."""

    iters: int = field(default=400, metadata={"help": "optimiser steps"})
    batch: int = field(default=32, metadata={"help": "real windows per step (and as many synthetic ones)"})
    lr: float = field(default=1e-4, metadata={"help": "learning rate (cosine to a tenth)"})
    keep: float = field(default=1.0, metadata={"help": "weight of holding what real video does not teach to the "
                                                       "starting model"})
    synthetic_mouth: float = field(default=0.1, metadata={"help": "weight of the starting model's mouth on synthetic "
                                                                  "speech, against the real mouth"})
    velocity: float = field(default=1.0, metadata={"help": "weight of the frame-difference error of the mouth"})
    points: float = field(default=1.0, metadata={"help": "weight of the lip-shape error: the 20 lip points the "
                                                         "motion draws on the person's own face, in 0.02 face widths"})
    augmented: int = field(default=2, metadata={"help": "augmented copies of each real clip's audio (telephone, "
                                                         "room, noise, level)", "flag": "--augment"})
    smooth: float = field(default=0.0, metadata={"help": "Gaussian smoothing of the captured real motion over frames "
                                                        "(sigma in frames, within each stretch of seen lips; 0: off)"})
    jaw: float = field(default=0.0, metadata={"help": "weight of holding jawOpen on real speech to the starting "
                                                      "model's (the phone-rig guard)"})
    ema: float = field(default=0.99, metadata={"help": "EMA decay of the saved weights"})
    hold_out: tuple[str, ...] = field(default=(), metadata={"help": "people never learnt from (comma-separated)",
                                                            "metavar": "P1,P2,..."})
    seed: int = 0


def smooth_seen(motion: Tensor, valid: Tensor, sigma: float) -> Tensor:
    """``motion`` [T, D] smoothed over frames by a Gaussian of ``sigma`` frames within each run of ``valid``
    frames (the kernel renormalised at a run's ends, so a constant stays constant and no unseen frame leaks
    in); unseen frames are returned as they were. Why: dlib's landmarks jitter from frame to frame, and a
    model fine-tuned on the raw capture learnt that jitter (1.48x the teacher's, docs/lips.md)."""
    if sigma <= 0:
        return motion
    radius = max(1, int(np.ceil(3 * sigma)))
    kernel = torch.exp(-0.5 * (torch.arange(-radius, radius + 1, dtype=torch.float64) / sigma) ** 2)
    out = motion.clone()
    seen = valid[: len(motion)].bool().tolist() + [False]
    start = None
    for i, s in enumerate(seen):
        if s and start is None:
            start = i
        elif not s and start is not None:
            out[start:i] = _gaussian(motion[start:i], kernel).to(motion.dtype)
            start = None
    return out


def _gaussian(x: Tensor, kernel: Tensor) -> Tensor:
    """[n, D] convolved over frames with ``kernel``, weights renormalised over the frames inside."""
    r = len(kernel) // 2

    def conv(y: Tensor) -> Tensor:  # zeros outside the run: they add nothing to the sum nor to the weights
        return nn.functional.conv1d(nn.functional.pad(y.T[:, None], (r, r)), kernel.view(1, 1, -1))[:, 0].T

    x = x.double()
    return conv(x) / conv(torch.ones(len(x), 1, dtype=torch.float64))


def real_clips(corpus: str | Path, model: MotionModel, hold_out: tuple[str, ...],
               augmented: int = 0, smooth: float = 0.0) -> tuple[Clips, list[Tensor]]:
    """The trainable clips of a ``data talking`` corpus whose person is not held out, and their masks;
    ``smooth`` > 0 smooths their captured motion (``smooth_seen``)."""
    from talkhead.motion.data.talking import clip_arrays

    clips = load_clips(corpus, "train", model.features, augmented=augmented)
    keep = [i for i, r in enumerate(clips.rows) if r["person"] not in hold_out]
    if not keep:
        raise InputError(f"{corpus}: every trainable person is held out")
    picked = Clips([clips.audio[i] for i in keep], [clips.motion[i] for i in keep], [clips.rows[i] for i in keep],
                   features=clips.features, variants=[clips.variants[i] for i in keep] if augmented else None)
    masks = [torch.from_numpy(clip_arrays(corpus, r)["valid"][: len(m)]) for r, m in zip(picked.rows, picked.motion)]
    picked.motion = [smooth_seen(m, k, smooth) for m, k in zip(picked.motion, masks)]
    return picked, masks


class LipsObjective:
    """Real mouth where seen, the starting model elsewhere (and on synthetic speech)."""

    def __init__(self, base: MotionModel, real: WindowSampler, synthetic: WindowSampler | None,
                 cfg: LipsConfig, rigs: list | None = None) -> None:
        self.base, self.real, self.synthetic, self.cfg = base.denoiser, real, synthetic, cfg
        self.norm, self.rigs = base.norm, rigs
        self.schedule = base.schedule
        grid = base.sampling.get("timesteps")
        self.grid = torch.tensor(grid) if grid else None  # a student's own steps; None: a teacher's, all of them
        mouth = torch.zeros(SPEC.dim, dtype=torch.bool)
        mouth[SPEC.mouth] = True
        self.mouth = mouth
        self.jaw = SPEC["jawOpen"]

    def _timesteps(self, b: int, gen: torch.Generator) -> Tensor:
        if self.grid is None:
            return torch.randint(0, self.schedule.num_train_timesteps, (b,), generator=gen)
        return self.grid[torch.randint(0, len(self.grid), (b,), generator=gen)]

    def _predict(self, module: nn.Module, batch: dict[str, Tensor], gen: torch.Generator) -> tuple[Tensor, Tensor]:
        x0 = batch["x0"]
        t = self._timesteps(len(x0), gen)
        x_t = self.schedule.add_noise(x0, torch.randn(x0.shape, generator=gen), t)
        cond = {k: v for k, v in batch.items() if k not in ("x0", "mask")}
        cond["audio_mask"] = torch.ones(len(x0), dtype=torch.bool)
        with torch.no_grad():
            held = self.base(x_t, t, cond)
        return module(x_t, t, cond), held

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        cfg, m = self.cfg, self.mouth
        batch = self.real.sample(cfg.batch, gen)
        pred, held = self._predict(module, batch, gen)
        w = batch["mask"][..., None]  # [B, W, 1]: lips seen
        err = (pred[..., m] - batch["x0"][..., m]).pow(2) * w
        loss = err.sum() / (w.sum() * m.sum()).clamp_min(1)
        if cfg.velocity:
            wd = w[:, 1:] * w[:, :-1]
            d = (pred[..., m].diff(dim=1) - batch["x0"][..., m].diff(dim=1)).pow(2) * wd
            loss = loss + cfg.velocity * d.sum() / (wd.sum() * m.sum()).clamp_min(1)
        if cfg.points and self.rigs is not None:
            loss = loss + cfg.points * self._lip_shape(pred, batch)
        loss = loss + cfg.keep * (pred[..., ~m] - held[..., ~m]).pow(2).mean()
        if cfg.jaw:  # the capture opens lips with other channels than jawOpen; the phone rig wants jawOpen
            loss = loss + cfg.jaw * (pred[..., self.jaw] - held[..., self.jaw]).pow(2).mean()
        if self.synthetic is not None:
            pred, held = self._predict(module, self.synthetic.sample(cfg.batch, gen), gen)
            weight = torch.where(m, cfg.synthetic_mouth, 1.0)
            loss = loss + cfg.keep * ((pred - held).pow(2) * weight).mean()
        return loss


    def _lip_shape(self, pred: Tensor, batch: dict[str, Tensor]) -> Tensor:
        """Squared distance of the 20 lip points, predicted motion against captured, each window drawn on its
        own person's neutral face with the head held still, in units of 0.02 face widths, where lips were seen."""
        from talkhead.face.template import project_points

        still = torch.ones(SPEC.dim)
        still[SPEC.pose] = 0.0  # the mouth's shape, not where the head puts it
        err, seen = pred.new_zeros(()), batch["mask"].sum().clamp_min(1)
        for b, k in enumerate(batch["clip"].tolist()):
            rig = self.rigs[k]
            lips = [project_points(rig, self.norm.motion_inverse(x) * still)[:, 48:68] / (0.02 * rig.scale)
                    for x in (pred[b], batch["x0"][b])]
            err = err + ((lips[0] - lips[1]).pow(2).sum(-1).mean(-1) * batch["mask"][b]).sum()
        return err / seen


def finetune_lips(init: str | Path, real: str | Path, out: str | Path, cfg: LipsConfig = LipsConfig(),
                  synthetic: str | Path | None = None, resume: bool = False, progress: bool = True) -> dict:
    """Fine-tune ``init`` on the real clips of ``real`` (and hold it on ``synthetic``); writes ``out``
    (.safetensors) and ``out``.state for ``resume``; returns what it did."""
    out = Path(out)
    if out.suffix != ".safetensors":
        raise InputError(f"--out must end in .safetensors: {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    state = out.with_suffix(".state.pt")
    if state.exists() and not resume:
        raise InputError(f"{state} holds a run; pass --resume to continue it or choose another --out")
    base = load(init)
    clips, masks = real_clips(real, base, cfg.hold_out, cfg.augmented, cfg.smooth)
    model = MotionModel(copy.deepcopy(base.denoiser), base.features, base.norm, dict(base.sampling), dict(base.meta))
    model.denoiser.train()
    win, tail = base.cfg.window, base.cfg.tail
    real_w = WindowSampler(clips, base.norm, win, tail, masks=masks)
    syn_w = None
    if synthetic is not None:
        syn_w = WindowSampler(load_clips(synthetic, "train", base.features), base.norm, win, tail)
    from talkhead.face.template import fit_rig

    rigs = [fit_rig(np.asarray(r["neutral"], np.float32)) for r in clips.rows]
    objective = LipsObjective(base, real_w, syn_w, cfg, rigs)
    people = sorted({r["person"] for r in clips.rows})
    meta = {"lips": {"init": str(init), "people": people, "clips": [r["file"] for r in clips.rows],
                     "minutes": round(sum(len(m) for m in clips.motion) / FPS / 60, 2), "config": asdict(cfg),
                     "synthetic": str(synthetic) if synthetic else None}}
    t0 = time.time()

    def on_checkpoint(step: int, loss: float, avg: nn.Module) -> None:
        meta["lips"].update(step=step, seconds=round(time.time() - t0, 1))
        MotionModel(copy.deepcopy(avg).eval(), model.features, model.norm, model.sampling, model.meta).save(out, meta)

    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, ema=cfg.ema, ema_warmup=True, seed=cfg.seed,
                        ckpt_every=100)
    result = fit(model.denoiser, objective, fit_cfg, state, None, on_checkpoint, resume, "lips", progress)
    report = {"out": str(out), "people": people, "steps": result.step, "final_loss": float(np.mean(result.losses[-20:]))
              if result.losses else None, "seconds": round(time.time() - t0, 1)}
    with open(out.with_suffix(".log.jsonl"), "a") as f:
        f.write(json.dumps(report) + "\n")
    return report
