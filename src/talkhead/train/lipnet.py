"""``talkhead distill lipnet``: train the lip net (``motion.lipnet``) on people filmed talking.

Data: the trainable clips of a ``data talking`` corpus (people named in ``hold_out`` left out), their
Whisper states (the offset-corrected audio, and augmented copies: telephone, room, noise, level), and
each frame's real inner-lip gap, z-scored within the clip over the frames whose lips were seen. The loss
is the squared error on seen frames of random windows; one loop (``train.loop.fit``) with EMA, atomic
checkpoints and ``--resume``. The head's gap units come from the same clips: the lip gap their captured
motion draws on the standard face (its mean, and the mean of the clips' spreads).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.audio.features import FeatureConfig
from talkhead.errors import InputError
from talkhead.motion.lipnet import LipHead, LipNet, LipNetConfig, drawn_gap
from talkhead.train.loop import FitConfig, fit

WHISPER = FeatureConfig(kind="whisper", pool="mean")


@dataclass(frozen=True)
class LipNetTrainConfig:
    """A lip net training run."""

    iters: int = field(default=1500, metadata={"help": "optimiser steps"})
    batch: int = field(default=16, metadata={"help": "windows per step"})
    frames: int = field(default=64, metadata={"help": "frames per window"})
    lr: float = field(default=1e-3, metadata={"help": "learning rate (cosine to a tenth)"})
    weight_decay: float = field(default=0.01, metadata={"help": "AdamW weight decay"})
    hidden: int = field(default=64, metadata={"help": "channels of the net's two convolutions"})
    kernel: int = field(default=5, metadata={"help": "frames each convolution spans"})
    dropout: float = field(default=0.3, metadata={"help": "dropout on the features and the hidden layer"})
    augmented: int = field(default=2, metadata={"help": "augmented copies of each clip's audio", "flag": "--augment"})
    ema: float = field(default=0.99, metadata={"help": "EMA decay of the saved weights"})
    hold_out: tuple[str, ...] = field(default=(), metadata={"help": "people never learnt from (comma-separated)",
                                                            "metavar": "P1,P2,..."})
    seed: int = field(default=0, metadata={"help": "seed of weights and batches"})


@dataclass
class GapClips:
    """Per clip: feature variants [T, A] (the first the clip's own audio), z-scored real gap [T], seen [T]."""

    feats: list[list[Tensor]]
    gap: list[Tensor]
    seen: list[Tensor]
    rows: list[dict]


def zscored(gap: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """A clip's gap in its own z-units over the frames whose lips were seen (0 elsewhere)."""
    g = gap.astype(np.float64)
    mu, sd = g[seen].mean(), g[seen].std() + 1e-6
    return np.where(seen, (g - mu) / sd, 0.0).astype(np.float32)


def gap_clips(corpus: str | Path, hold_out: tuple[str, ...], augmented: int) -> tuple[GapClips, tuple[float, float]]:
    """The trainable clips of ``corpus`` not held out, and the standard face's gap units (mean, spread)."""
    from talkhead.data.talking import clip_arrays
    from talkhead.data.windows import load_clips

    clips = load_clips(corpus, "train", WHISPER, augmented=augmented)
    keep = [i for i, r in enumerate(clips.rows) if r["person"] not in hold_out]
    if not keep:
        raise InputError(f"{corpus}: every trainable person is held out")
    out = GapClips([], [], [], [])
    means, spreads = [], []
    for i in keep:
        row, n = clips.rows[i], len(clips.audio[i])
        a = clip_arrays(corpus, row)
        seen = a["valid"][:n].astype(bool)
        if seen.sum() < 10:
            continue
        out.feats.append([clips.audio[i]] + (clips.variants[i] if augmented else []))
        out.gap.append(torch.from_numpy(zscored(a["gap"][:n], seen)))
        out.seen.append(torch.from_numpy(seen))
        out.rows.append(row)
        drawn = drawn_gap(clips.motion[i][seen]).numpy()
        means.append(drawn.mean())
        spreads.append(drawn.std())
    return out, (float(np.mean(means)), float(np.mean(spreads)))


class GapObjective:
    """Squared error of the net's opening against the real z-scored gap, on seen frames of random windows."""

    def __init__(self, data: GapClips, mean: Tensor, std: Tensor, cfg: LipNetTrainConfig) -> None:
        self.data, self.mean, self.std, self.cfg = data, mean, std, cfg
        lengths = np.array([len(g) for g in data.gap], np.float64)
        self.weights = torch.as_tensor(lengths / lengths.sum())  # clips drawn by length: every frame alike

    def __call__(self, net: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        xs, ys, ms = [], [], []
        n = self.cfg.frames
        for c in torch.multinomial(self.weights, self.cfg.batch, replacement=True, generator=gen).tolist():
            feats = self.data.feats[c]
            f = feats[int(torch.randint(len(feats), (1,), generator=gen))]
            t0 = int(torch.randint(max(1, len(f) - n + 1), (1,), generator=gen))
            xs.append(_fit(f[t0:t0 + n], n))
            ys.append(_fit(self.data.gap[c][t0:t0 + n, None], n)[:, 0])
            ms.append(_fit(self.data.seen[c][t0:t0 + n, None].float(), n)[:, 0])
        x, y, m = torch.stack(xs), torch.stack(ys), torch.stack(ms)
        with torch.random.fork_rng():  # dropout drawn from the run's own generator: a resumed run is the same run
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
            pred = net((x - self.mean) / self.std)
        return (((pred - y) ** 2) * m).sum() / m.sum().clamp_min(1.0)


def _fit(x: Tensor, n: int) -> Tensor:
    """Rows [t, C] padded with zeros (masked out) to [n, C]: a clip shorter than a window still trains."""
    return x if len(x) == n else torch.cat([x, x.new_zeros(n - len(x), x.shape[1])])


def train_lipnet(corpus: str | Path, out: str | Path, cfg: LipNetTrainConfig = LipNetTrainConfig(),
                 resume: bool = False, progress: bool = True) -> dict:
    """Train a lip net on ``corpus``'s real clips; writes ``out`` (.safetensors, resumable via its .state.pt)."""
    out = Path(out)
    if out.suffix != ".safetensors":
        raise InputError(f"--out must end in .safetensors: {out}")
    state = out.with_suffix(".state.pt")
    if state.exists() and not resume:
        raise InputError(f"{state} holds a run; pass --resume to continue it or choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    data, (gap_mean, gap_std) = gap_clips(corpus, cfg.hold_out, cfg.augmented)
    allf = torch.cat([f[0] for f in data.feats])
    mean, std = allf.mean(0), allf.std(0).clamp_min(1e-3)
    torch.manual_seed(cfg.seed)
    net = LipNet(LipNetConfig(dim=allf.shape[1], hidden=cfg.hidden, kernel=cfg.kernel, dropout=cfg.dropout))
    people = sorted({r["person"] for r in data.rows})
    meta = {"train": {"corpus": str(corpus), "people": people, "clips": [r["file"] for r in data.rows],
                      "minutes": round(sum(len(g) for g in data.gap) / 25 / 60, 2), "config": asdict(cfg)}}
    t0 = time.time()

    def on_checkpoint(step: int, loss: float, avg: nn.Module) -> None:
        meta["train"].update(step=step, seconds=round(time.time() - t0, 1))
        LipHead(avg, WHISPER, mean, std, gap_mean, gap_std).save(out, meta)

    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, weight_decay=cfg.weight_decay, ema=cfg.ema, ema_warmup=True,
                        seed=cfg.seed, ckpt_every=500)
    result = fit(net, GapObjective(data, mean, std, cfg), fit_cfg, state, None, on_checkpoint, resume, "lipnet",
                 progress)
    report = {"out": str(out), "people": people, "steps": result.step, "seconds": round(time.time() - t0, 1),
              "final_loss": float(np.mean(result.losses[-50:])) if result.losses else None}
    with open(out.with_suffix(".log.jsonl"), "a") as f:
        f.write(json.dumps(report) + "\n")
    return report
