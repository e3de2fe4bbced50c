"""``talkhead distill lipnet``: train the lip net (``motion.lipnet``) on people filmed talking.

Data: the trainable clips of a ``data talking`` corpus (people named in ``hold_out`` left out), their Whisper
states (the offset-corrected audio, and augmented copies: telephone, room, noise, level; or the clips sped up and
slowed down as clips of their own, ``speed_clips``), and each frame's real inner-lip gap, z-scored within the clip
over the frames whose lips were seen; a synthetic corpus's clips may fill part of each batch, their target the gap
their rig motion draws or the opening an offline lip net reads from them (``taught``). The loss is the squared
error on seen frames of random windows; one loop (``train.loop.fit``) with EMA, atomic checkpoints and ``--resume``.
The head's gap units come from the same clips: the lip gap their captured motion draws on the standard face (its
mean, and the mean of the clips' spreads).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.audio.features import FeatureConfig, extract
from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.motion.lipnet import LipHead, LipNet, LipNetConfig, drawn_gap
from talkhead.train.loop import FitConfig, fit

WHISPER = FeatureConfig(kind="whisper", pool="mean")


def hearing(taps: tuple[int, ...] = ()) -> FeatureConfig:
    """The front end a lip net reads: the Whisper output, and the inner layers ``taps`` after it."""
    return FeatureConfig(kind="whisper", pool="mean", taps=tuple(taps))


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
    members: int = field(default=1, metadata={"help": "nets trained side by side, each on its own; the opening is "
                                                      "their mean"})
    augmented: int = field(default=0, metadata={"help": "augmented copies of each clip's audio", "flag": "--augment"})
    speeds: tuple[float, ...] = field(default=(), metadata={
        "help": "speed-perturbed copies of each real clip, as extra clips: its audio played this much faster (pitch "
                "with it) and its lip gap resampled in time to match (e.g. 0.9,1.1)", "metavar": "S,..."})
    synthetic_share: float = field(default=0.5, metadata={"help": "share of each batch drawn from --synthetic's clips "
                                                                  "(their rig's lip gap, or --teacher's opening, as "
                                                                  "the target), if given"})
    teacher: str = field(default="", metadata={"help": "an offline lip net (name or .safetensors) whose opening, read "
                                                        "from each whole clip, is --synthetic's target in place of the "
                                                        "rig's lip gap: real people's way of opening on speech no one "
                                                        "filmed (docs/lips.md; a net that never heard those clips)"})
    corr_weight: float = field(default=0.0, metadata={"help": "weight of (1 - Pearson r) per window beside the squared "
                                                                "error: r is what the lips are judged by"})
    ema: float = field(default=0.99, metadata={"help": "EMA decay of the saved weights"})
    view: str = field(default="offline", metadata={"help": "the audio as the net will read it: 'offline' (28 s Whisper "
                                                          "blocks) or 'live' (a live student's one-frame blocks)",
                                                  "choices": ("offline", "live")})
    taps: tuple[int, ...] = field(default=(), metadata={"help": "inner Whisper encoder layers (1-4) read beside its "
                                                               "output (docs/lips.md, 'Inner layers': 2)",
                                                       "metavar": "L,..."})
    ahead: int = field(default=-1, metadata={"help": "frames of audio after a frame the net reads (-1: as many as "
                                                     "before it; live speech: the live student's look-ahead)"})
    spread: float = field(default=1.0, metadata={"help": "how far the lips this net's kind draws swing on people it "
                                                        "never heard, against the captured lips' swing (measured on "
                                                        "folds: recipes/lipnet.sh); the head widens its opening by the "
                                                        "inverse"})
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


def _cached_rows(path: Path, rows: list[dict], compute) -> list[Tensor]:
    """Per clip rows ``compute(row)`` [T, A], kept (float16) in one .npz at ``path``: a Whisper run per clip takes
    minutes for a corpus, so it is done once, and what a run adds is written atomically."""
    import io

    from talkhead.util import atomic_write

    stored = dict(np.load(path)) if path.is_file() else {}
    missing = [r for r in rows if r["id"] not in stored]
    for r in missing:
        stored[r["id"]] = np.asarray(compute(r), np.float32).astype(np.float16)
    if missing:
        buf = io.BytesIO()
        np.savez(buf, **stored)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buf.getvalue())
    return [torch.from_numpy(stored[r["id"]].astype(np.float32)) for r in rows]


def _key(*parts) -> str:
    import hashlib

    return hashlib.sha1(json.dumps(parts).encode()).hexdigest()[:10]


def live_view(corpus: str | Path, rows: list[dict], wav_of, features: FeatureConfig = WHISPER) -> list[Tensor]:
    """The Whisper rows a live session computes for each clip (``motion.train.live.live_rows``: one-frame blocks),
    cached beside the corpus."""
    from talkhead.motion.train.live import LiveConfig, live_rows

    cfg = LiveConfig()
    path = Path(corpus) / "cache" / f"lipnet-live-{_key(cfg.block, cfg.left, cfg.right, features.key())}.npz"
    return _cached_rows(path, rows, lambda r: live_rows(wav_of(r), features, cfg, 20).numpy())


def faster(wav: np.ndarray, speed: float) -> np.ndarray:
    """``wav`` played ``speed`` times as fast (its pitch raised with it, as a tape sped up): about len / speed
    samples. Speed perturbation: speakers who talk faster or slower, with higher or lower voices."""
    from fractions import Fraction

    from scipy.signal import resample_poly

    q = Fraction(speed).limit_denominator(50)
    return resample_poly(np.asarray(wav, np.float64), q.denominator, q.numerator).astype(np.float32)


def speed_clips(corpus: str | Path, data: GapClips, speeds: tuple[float, ...],
                features: FeatureConfig = WHISPER) -> GapClips:
    """Each clip of ``data`` (its first feature row: the clip's own audio) at each speed: the audio sped up
    (``faster``), its features computed (cached beside the corpus), and the z-scored gap resampled in time to
    match; a frame is seen where both real frames around it were. Rows carry their "speed"."""
    from talkhead.motion.data.talking import clip_arrays

    out = GapClips([], [], [], [])
    for s in speeds:
        path = Path(corpus) / "cache" / f"lipnet-speed-{_key(s, features.key())}.npz"
        wav = lambda r: faster(clip_arrays(corpus, r)["audio"].astype(np.float32) / 32767, s)
        feats = _cached_rows(path, data.rows, lambda r: extract(wav(r), features).numpy())
        for f, gap, seen, row in zip(feats, data.gap, data.seen, data.rows):
            t = np.arange(min(len(f), int(len(gap) / s))) * s  # each new frame's time in the clip's frames
            lo, hi = np.floor(t).astype(int), np.minimum(np.ceil(t).astype(int), len(gap) - 1)
            ok = seen.numpy()[lo] & seen.numpy()[hi]
            if ok.sum() < 10:
                continue
            g = np.interp(t, np.arange(len(gap)), gap.numpy())
            out.feats.append([f[:len(t)]])
            out.gap.append(torch.from_numpy(zscored(g, ok)))
            out.seen.append(torch.from_numpy(ok))
            out.rows.append({**row, "speed": s})
    return out


def _views(corpus: str | Path, clips, view: str) -> list[Tensor]:
    """Each clip's features as ``view`` reads them, cut to its motion's length."""
    if view == "offline":
        return clips.audio
    from talkhead.motion.data.talking import clip_arrays

    rows = clips.rows
    live = live_view(corpus, rows, lambda r: clip_arrays(corpus, r)["audio"].astype(np.float32) / 32767,
                     clips.features)
    return [f[:len(a)] if len(f) >= len(a) else torch.cat([f, f[-1:].expand(len(a) - len(f), -1)])
            for f, a in zip(live, clips.audio)]


def synthetic_gap_clips(corpus: str | Path, view: str = "offline", features: FeatureConfig = WHISPER) -> GapClips:
    """A synthetic corpus's training clips (``data synth``), the gap their motion draws on the standard face
    as the target (z-scored per clip), every frame seen."""
    from talkhead.motion.data.windows import load_clips

    clips = load_clips(corpus, "train", features)
    out = GapClips([], [], [], [])
    for f, m, row in zip(_views(corpus, clips, view), clips.motion, clips.rows):
        seen = np.ones(len(f), bool)
        out.feats.append([f])
        out.gap.append(torch.from_numpy(zscored(drawn_gap(m).numpy(), seen)))
        out.seen.append(torch.from_numpy(seen))
        out.rows.append(row)
    return out


def offline_head(teacher: str | Path | LipHead) -> LipHead:
    """``teacher`` loaded (if a name or path), refused if it is not an offline lip net."""
    from talkhead.motion.lipnet import load_head

    head = teacher if isinstance(teacher, LipHead) else load_head(teacher)
    if (head.meta or {}).get("train", {}).get("config", {}).get("view", "offline") != "offline":
        raise InputError(f"--teacher must be an offline lip net: {teacher} reads a live session's audio")
    return head


def taught(syn: GapClips, corpus: str | Path, teacher: str | Path | LipHead) -> GapClips:
    """The synthetic clips ``syn`` of ``corpus`` with the opening the offline lip net ``teacher`` (a checkpoint or
    a head) reads from each whole clip as their target (z-scored per clip). A teacher that learnt these very clips
    (half of each batch of the shipped recipe) gives their rig's gap back (r 0.99) and teaches nothing: it should
    learn from real clips."""
    head = offline_head(teacher)
    heard = synthetic_gap_clips(corpus, "offline", head.features)
    gaps = []
    with torch.no_grad():
        for f, seen in zip(heard.feats, syn.seen):
            z = head.opening(f[0][None])[0].numpy()[: len(seen)]
            gaps.append(torch.from_numpy(zscored(z, seen.numpy()[: len(z)])))
    return GapClips(syn.feats, gaps, [s[: len(g)] for s, g in zip(syn.seen, gaps)], syn.rows)


def gap_clips(corpus: str | Path, hold_out: tuple[str, ...], augmented: int, view: str = "offline",
              features: FeatureConfig = WHISPER, speeds: tuple[float, ...] = ()
              ) -> tuple[GapClips, tuple[float, float]]:
    """The trainable clips of ``corpus`` not held out (features as ``view`` reads them; with their copies at
    ``speeds`` after them, ``speed_clips``), and the standard face's gap units (mean, spread)."""
    from talkhead.motion.data.talking import clip_arrays
    from talkhead.motion.data.windows import load_clips

    if view == "live" and (augmented or speeds):
        raise InputError("--augment and --speeds work on the offline view only: leave them out with --view live")
    clips = load_clips(corpus, "train", features, augmented=augmented)
    keep = [i for i, r in enumerate(clips.rows) if r["person"] not in hold_out]
    if not keep:
        raise InputError(f"{corpus}: every trainable person is held out")
    clips.rows, clips.audio, clips.motion = ([x[i] for i in keep] for x in (clips.rows, clips.audio, clips.motion))
    if augmented:
        clips.variants = [clips.variants[i] for i in keep]
    clips.audio = _views(corpus, clips, view)
    out = GapClips([], [], [], [])
    means, spreads = [], []
    for i in range(len(clips.rows)):
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
    units = float(np.mean(means)), float(np.mean(spreads))
    if speeds:
        sped = speed_clips(corpus, out, speeds, features)
        out = GapClips(*(a + b for a, b in zip((out.feats, out.gap, out.seen, out.rows),
                                                 (sped.feats, sped.gap, sped.seen, sped.rows))))
    return out, units


class GapObjective:
    """Squared error of the net's opening against the real z-scored gap, on seen frames of random windows."""

    def __init__(self, data: GapClips, mean: Tensor, std: Tensor, cfg: LipNetTrainConfig,
                 synthetic: GapClips | None = None) -> None:
        self.mean, self.std, self.cfg = mean, std, cfg
        n_syn = round(cfg.batch * cfg.synthetic_share) if synthetic is not None else 0
        self.sources = [(d, k, _by_length(d)) for d, k in ((data, cfg.batch - n_syn), (synthetic, n_syn)) if k]

    def __call__(self, net: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        xs, ys, ms = [], [], []
        n = self.cfg.frames
        for data, k, weights in self.sources:
            for c in torch.multinomial(weights, k, replacement=True, generator=gen).tolist():
                feats = data.feats[c]
                f = feats[int(torch.randint(len(feats), (1,), generator=gen))]
                t0 = int(torch.randint(max(1, len(f) - n + 1), (1,), generator=gen))
                xs.append(_fit(f[t0:t0 + n], n))
                ys.append(_fit(data.gap[c][t0:t0 + n, None], n)[:, 0])
                ms.append(_fit(data.seen[c][t0:t0 + n, None].float(), n)[:, 0])
        x, y, m = torch.stack(xs), torch.stack(ys), torch.stack(ms)
        with torch.random.fork_rng():  # dropout drawn from the run's own generator: a resumed run is the same run
            torch.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
            pred = net.each((x - self.mean) / self.std)  # each member fitted on its own, not their mean
        loss = (((pred - y) ** 2) * m).sum() / (len(pred) * m.sum().clamp_min(1.0))
        if self.cfg.corr_weight:
            loss = loss + self.cfg.corr_weight * (1 - window_r(pred, y, m)).mean()
        return loss


def window_r(pred: Tensor, y: Tensor, m: Tensor) -> Tensor:
    """Pearson r of each window [..., B, T] with its target over the seen frames ``m`` [B, T] -> [..., B]."""
    n = m.sum(-1).clamp_min(1.0)
    dp = (pred - (pred * m).sum(-1, keepdim=True) / n[:, None]) * m
    dy = (y - (y * m).sum(-1, keepdim=True) / n[:, None]) * m
    return (dp * dy).sum(-1) / ((dp ** 2).sum(-1) * (dy ** 2).sum(-1)).clamp_min(1e-8).sqrt()


def _by_length(data: GapClips) -> Tensor:
    """Clips drawn by length: every frame alike."""
    lengths = np.array([len(g) for g in data.gap], np.float64)
    return torch.as_tensor(lengths / lengths.sum())


def _fit(x: Tensor, n: int) -> Tensor:
    """Rows [t, C] padded with zeros (masked out) to [n, C]: a clip shorter than a window still trains."""
    return x if len(x) == n else torch.cat([x, x.new_zeros(n - len(x), x.shape[1])])


def train_lipnet(corpus: str | Path, out: str | Path, cfg: LipNetTrainConfig = LipNetTrainConfig(),
                 resume: bool = False, progress: bool = True, synthetic: str | Path | None = None) -> dict:
    """Train a lip net on ``corpus``'s real clips (and ``synthetic``'s, ``cfg.synthetic_share`` of each batch);
    writes ``out`` (.safetensors, resumable via its .state.pt)."""
    out = Path(out)
    if out.suffix != ".safetensors":
        raise InputError(f"--out must end in .safetensors: {out}")
    state = out.with_suffix(".state.pt")
    if state.exists() and not resume:
        raise InputError(f"{state} holds a run; pass --resume to continue it or choose another --out")
    out.parent.mkdir(parents=True, exist_ok=True)
    teacher = offline_head(cfg.teacher) if cfg.teacher else None  # refused before minutes of feature extraction
    data, (gap_mean, gap_std) = gap_clips(corpus, cfg.hold_out, cfg.augmented, cfg.view, hearing(cfg.taps), cfg.speeds)
    allf = torch.cat([f[0] for f in data.feats])
    mean, std = allf.mean(0), allf.std(0).clamp_min(1e-3)
    torch.manual_seed(cfg.seed)
    net = LipNet(LipNetConfig(dim=allf.shape[1], hidden=cfg.hidden, kernel=cfg.kernel, dropout=cfg.dropout,
                              ahead=cfg.ahead, members=cfg.members))
    people = sorted({r["person"] for r in data.rows})
    meta = {"train": {"corpus": str(corpus), "synthetic": str(synthetic) if synthetic else None, "people": people,
                      "clips": [r["file"] for r in data.rows],
                      "minutes": round(sum(len(g) for g in data.gap) / FPS / 60, 2), "config": asdict(cfg)}}
    t0 = time.time()

    def on_checkpoint(step: int, loss: float, avg: nn.Module) -> None:
        meta["train"].update(step=step, seconds=round(time.time() - t0, 1))
        LipHead(avg, hearing(cfg.taps), mean, std, gap_mean, gap_std, spread=cfg.spread).save(out, meta)

    fit_cfg = FitConfig(steps=cfg.iters, lr=cfg.lr, weight_decay=cfg.weight_decay, ema=cfg.ema, ema_warmup=True,
                        seed=cfg.seed, ckpt_every=500)
    syn = None
    if synthetic is not None and cfg.synthetic_share > 0:
        syn = synthetic_gap_clips(synthetic, cfg.view, hearing(cfg.taps))
        syn = taught(syn, synthetic, teacher) if teacher else syn
    result = fit(net, GapObjective(data, mean, std, cfg, syn), fit_cfg, state, None, on_checkpoint, resume, "lipnet",
                 progress)
    report = {"out": str(out), "people": people, "steps": result.step, "seconds": round(time.time() - t0, 1),
              "final_loss": float(np.mean(result.losses[-50:])) if result.losses else None}
    with open(out.with_suffix(".log.jsonl"), "a") as f:
        f.write(json.dumps(report) + "\n")
    return report

