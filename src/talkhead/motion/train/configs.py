"""Every training run's settings, one dataclass each, defaults in one place (as nanoGPT's config).

``talkhead train`` and ``talkhead distill METHOD`` build their flags from these fields (help text in
``metadata``), so a default exists once. Nothing here imports torch: building the command line stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def h(text: str, **kw) -> dict:
    """A field's CLI metadata: help text and any argparse extras (``flag``, ``metavar``, ``choices``)."""
    return {"help": text, **kw}


@dataclass(frozen=True)
class DistillBase:
    """Settings shared by progressive, consistency and trajectory distillation."""

    start_steps: int = field(default=16, metadata=h("the teacher's DDIM grid (trailing) the student starts "
                                                    "from; a student as teacher uses its own grid"))
    iters: int = field(default=400, metadata=h("optimiser steps (per round for progressive)"))
    batch: int = field(default=64, metadata=h("windows per step"))
    lr: float = field(default=2e-4, metadata=h("peak learning rate (cosine to a tenth)"))
    seed: int = field(default=0, metadata=h("seeds batches and noise"))
    init: str | None = field(default=None, metadata=h("the student to start from (shipped name or checkpoint)"))
    augmented: int = field(default=0, metadata=h("augmented copies of each clip's audio (telephone, room, noise, "
                                                 "level): the student matches the teacher on real channels too",
                                                 flag="--augment"))

    method = ""


@dataclass(frozen=True)
class ProgressiveConfig(DistillBase):
    """``talkhead distill progressive``: chained rounds, each merging teacher steps into one."""

    to: int = field(default=1, metadata=h("stop at this many steps"))
    factor: int = field(default=2, metadata=h("teacher steps merged into one student step per round (2: halve)"))
    velocity: float = field(default=0.0, metadata=h("weight of the frame-difference loss, against jitter"))
    step_weights: tuple[float, ...] | None = field(default=None, metadata=h(
        "one round: relative share of iterations per student step, first step first (default: even), "
        "e.g. 3,1,1,5", metavar="W1,W2,..."))
    segments: tuple[int, ...] | None = field(default=None, metadata=h(
        "one round: teacher grid steps per student step, first first, adding up to --start-steps "
        "(default: --factor each), e.g. 8,12,8,4 for a short last step", metavar="N1,N2,..."))
    experts: bool = field(default=False, metadata=h("one network per student step (N times the file, the same "
                                                    "time per step)"))
    warp: float = field(default=0.0, metadata=h("log-mel students: stretch each window's mel axis by a random "
                                                "factor within 1 +- WARP (the teacher hears the same audio)"))
    depth: int = field(default=0, metadata=h("the student's transformer layers (0: as its starting weights); "
                                             "extra layers start as the identity"))
    average: float = field(default=0.0, metadata=h("write an EMA of each round's weights with this decay "
                                                   "(0: the last weights), e.g. 0.995", metavar="DECAY"))

    method = "progressive"


@dataclass(frozen=True)
class ConsistencyConfig(DistillBase):
    """``talkhead distill consistency``: one run of ``iters`` steps to a one-step student."""

    ema: float = field(default=0.99, metadata=h("EMA decay of the target network"))

    method = "consistency"


@dataclass(frozen=True)
class TrajectoryConfig(DistillBase):
    """``talkhead distill trajectory``: refine ``--init`` so its N-step output matches the teacher's S = 50."""

    velocity: float = field(default=0.0, metadata=h("weight of the frame-difference loss, against jitter"))
    pairs: int = field(default=8192, metadata=h("teacher sample windows to regress onto (stored under OUT/pairs, "
                                                "resumable)"))
    teacher_steps: int = field(default=50, metadata=h("the teacher's DDIM steps for them"))

    method = "trajectory"


@dataclass(frozen=True)
class TrainConfig:
    """A teacher training run; ``talkhead train`` exposes every field as a flag with this default."""

    steps: int = field(default=4000, metadata=h("optimiser steps"))
    batch: int = field(default=64, metadata=h("windows per step"))
    lr: float = field(default=4e-4, metadata=h("peak learning rate (warm-up, then cosine to a tenth)"))
    weight_decay: float = field(default=0.01, metadata=h("AdamW weight decay"))
    warmup: int = field(default=200, metadata=h("linear warm-up steps"))
    ema: float = field(default=0.999, metadata=h("EMA decay of the saved weights"))
    clip: float = field(default=1.0, metadata=h("gradient norm clip"))
    audio_drop: float = field(default=0.1, metadata=h("share of windows trained without audio (for guidance)"))
    snr_min: float = field(default=1.0, metadata=h("truncated-SNR loss weight floor (0: plain x0 MSE)"))
    snr_max: float = field(default=5.0, metadata=h("truncated-SNR loss weight cap"))
    velocity: float = field(default=1.0, metadata=h("weight of the temporal (frame-difference) loss"))
    val_every: int = field(default=500, metadata=h("validate every this many steps"))
    ckpt_every: int = field(default=200, metadata=h("checkpoint every this many steps"))
    val_clips: int = field(default=16, metadata=h("held-out clips that validation samples"))
    seed: int = field(default=0, metadata=h("seeds the weights, the batches and the noise"))
    device: str = field(default="cpu", metadata=h("cpu or cuda", choices=["cpu", "cuda"]))
    stop_at: int = field(default=0, metadata=h("checkpoint and stop at this step; --resume continues on the "
                                                 "same LR schedule"))
    augmented: int = field(default=0, metadata=h("augmented copies of each clip's audio (telephone, room, noise, "
                                                   "level), cached per corpus", flag="--augment"))

    def fit_config(self):
        from talkhead.train.loop import FitConfig

        return FitConfig(steps=self.steps, lr=self.lr, weight_decay=self.weight_decay, warmup=self.warmup,
                         clip=self.clip, ema=self.ema, ema_warmup=True, seed=self.seed,
                         ckpt_every=self.ckpt_every, stop_at=self.stop_at)


METHODS: dict[str, type[DistillBase]] = {"progressive": ProgressiveConfig, "consistency": ConsistencyConfig,
                                         "trajectory": TrajectoryConfig}
