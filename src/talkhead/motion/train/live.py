"""A live student: a one-step motion model fine-tuned on the features and windows that live speech gives it.

Client audio (a voice agent's TTS streaming to the face) must show its first frame within 200 ms, so
each frame is drawn from audio that reaches only a few frames past it: Whisper rows computed over
one-frame blocks with one frame of right context (``FeatureStream``), and a low-latency window whose
future beyond ``lookahead`` frames is silence (``LowLatencyRunner``). The offline student never saw
either and loses lip sync there (jawOpen r 0.82-0.87 against its own offline motion). Fine-tuning it
on exactly those inputs, to reproduce its own offline motion of the same speech, is self-distillation:
no new targets, only the live view of the same clips.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.audio.features import FeatureConfig, FeatureStream, silence_row
from talkhead.config import FPS, HOP
from talkhead.diffusion.samplers import sample_ddim
from talkhead.motion.model import MotionModel


@dataclass(frozen=True)
class LiveConfig:
    """The live view (feature blocks, right context, window look-ahead) and the fine-tuning run."""

    # One-frame blocks with 1 s of context before and one frame after (2026-12-04): the first frame is out after
    # 120 ms of audio and the next after 160 ms; trained on it, jawOpen r 0.872 against offline motion on the six
    # real recordings. The earlier view (2-frame blocks, 0.4 s before, 2 frames after) needed 240 ms for 0.867;
    # the context before costs compute only, and 0.4 s of it was what cost the shorter views their lips.
    block: int = field(default=1, metadata={"help": "feature block, frames"})
    left: int = field(default=20, metadata={"help": "Whisper context before a block, frames (compute, not latency)"})
    right: int = field(default=1, metadata={"help": "context after a block, frames (this is latency)"})
    step: int = field(default=1, metadata={"help": "new frames per window"})
    lookahead: int = field(default=1, metadata={"help": "frames of conditioning past a window's new frames"})
    # Live windows are run this long, not the trained 80 frames: only their first frames are kept, and on the six
    # real recordings 24 frames give jawOpen r 0.870 against 0.871 at 0.6x the motion compute (16: 0.860).
    window: int = field(default=24, metadata={"help": "frames a live window is run over (inference)"})
    steps: int = field(default=1500, metadata={"help": "optimiser steps"})
    batch: int = field(default=16, metadata={"help": "windows per step"})
    lr: float = field(default=1e-4, metadata={"help": "learning rate"})
    augment: float = field(default=0.6, metadata={"help": "share of clips through telephone/room/noise"})
    seed: int = 0


def live_rows(wav: np.ndarray, features: FeatureConfig, cfg: LiveConfig, lead: int) -> Tensor:
    """The raw feature rows a live session computes for ``wav`` after ``lead`` frames of silence, [T, A]."""
    fs = FeatureStream(features, cfg.block / FPS, cfg.left / FPS, cfg.right / FPS)
    x = np.concatenate([np.zeros(lead * HOP, np.float32), np.asarray(wav, np.float32)])
    return torch.cat([fs.push(x), fs.flush()])[lead:]


@torch.no_grad()
def offline_motion(model: MotionModel, wav: np.ndarray, seed: int = 0) -> Tensor:
    """The model's offline motion of ``wav`` in network units [T, D] (what the live student learns to match)."""
    from talkhead.motion.stream import MotionConfig, motion_from_audio

    return model.norm.motion(torch.as_tensor(motion_from_audio(model, wav, MotionConfig(seed=seed))))


def make_pairs(clips: list[np.ndarray], model: MotionModel, cfg: LiveConfig, progress: bool = True) -> dict:
    """Per clip: normalised live rows and the offline motion target, concatenated, with the clip lengths."""
    from tqdm import tqdm

    from talkhead.audio.augment import augment

    rng = np.random.default_rng(cfg.seed)
    rows, targets = [], []
    for wav in tqdm(clips, desc="live pairs", disable=not progress, unit="clip"):
        if rng.random() < cfg.augment:  # the channel real callers come through, which TTS never has
            wav = augment(wav, rng).astype(np.float32)
        live, target = model.norm.audio(live_rows(wav, model.features, cfg, model.cfg.tail)), offline_motion(model, wav)
        k = min(len(live), len(target))
        rows.append(live[:k])
        targets.append(target[:k])
    return {"rows": torch.cat(rows), "targets": torch.cat(targets), "lengths": torch.tensor([len(r) for r in rows])}


class LiveObjective:
    """One batch of live windows: [tail | new frames | look-ahead | silence], loss on the new frames."""

    def __init__(self, pairs: dict, model: MotionModel, cfg: LiveConfig) -> None:
        self.rows, self.targets, self.cfg = pairs["rows"], pairs["targets"], cfg
        self.lengths = pairs["lengths"].tolist()
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).tolist()
        self.schedule, self.timesteps = model.schedule, model.timesteps()
        self.window, self.tail = model.cfg.window, model.cfg.tail
        self.pad = model.norm.audio(silence_row(model.features))
        need = self.tail + cfg.step + cfg.lookahead
        self.clips = [i for i, n in enumerate(self.lengths) if n > need]

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        c, w, n_tail = self.cfg, self.window, self.tail
        audio, tails, want = [], [], []
        for _ in range(c.batch):
            i = self.clips[int(torch.randint(len(self.clips), (1,), generator=gen))]
            t = int(torch.randint(n_tail, self.lengths[i] - c.step - c.lookahead + 1, (1,), generator=gen))
            s = self.starts[i] + t - n_tail
            have = self.rows[s: s + n_tail + c.step + c.lookahead]
            audio.append(torch.cat([have, self.pad.expand(w - len(have), -1)]))
            tails.append(self.targets[s: s + n_tail])
            want.append(self.targets[s + n_tail: s + n_tail + c.step])
        b = len(audio)
        cond = {"audio": torch.stack(audio), "ref": module.ref.expand(b, -1), "tail": torch.stack(tails),
                "has_tail": torch.ones(b, dtype=torch.bool)}
        noise = torch.randn(b, w, self.targets.shape[1], generator=gen)
        y = sample_ddim(lambda x, t: module.denoiser(x, t, cond), noise, self.schedule, self.timesteps)
        return (y[:, n_tail: n_tail + c.step] - torch.stack(want)).pow(2).mean()


class _Trainable(nn.Module):
    """The model's denoiser as the module the loop trains, with the neutral reference it is conditioned on."""

    def __init__(self, model: MotionModel) -> None:
        super().__init__()
        from talkhead.rig.spec import SPEC

        self.denoiser = model.denoiser
        self.register_buffer("ref", model.norm.motion(torch.zeros(1, SPEC.dim)))


def train_live(model: MotionModel, pairs: dict, out: str | Path, cfg: LiveConfig = LiveConfig(),
               resume: bool = False, progress: bool = True) -> dict:
    """Fine-tune ``model`` (a one-step student) on live windows; writes the live student to ``out``."""
    from dataclasses import asdict

    from talkhead.train.loop import FitConfig, fit

    out = Path(out)
    state = out.with_name(out.name + ".state.pt")
    module = _Trainable(model).train()
    fit_cfg = FitConfig(steps=cfg.steps, lr=cfg.lr, warmup=min(100, cfg.steps // 10), ema=0.999, ema_warmup=True,
                        seed=cfg.seed, ckpt_every=max(1, min(250, cfg.steps // 4)))
    t0 = time.time()
    result = fit(module, LiveObjective(pairs, model, cfg), fit_cfg, state, resume=resume and state.exists(),
                 desc="live student", progress=progress)
    model.denoiser.load_state_dict(result.module.denoiser.state_dict())
    model.denoiser.eval()
    live = {k: v for k, v in asdict(cfg).items() if k in ("block", "left", "right", "step", "lookahead", "window")}
    model.save(out, {"name": out.stem, "live": live, "live_train": {
        "base": model.meta.get("name"), "steps": cfg.steps, "windows": cfg.steps * cfg.batch,
        "frames": int(pairs["lengths"].sum()), "wall_s": round(time.time() - t0, 1)}}, dtype=torch.float16)
    return {"steps": result.step, "loss_last": float(np.mean(result.losses[-50:])) if result.losses else None}


def corpus_audio(corpus: str | Path, split: str | None = "train") -> list[np.ndarray]:
    """A corpus's clips (``talkhead data synth`` / ``data align``) as float 16 kHz audio, in manifest order."""
    from talkhead.motion.data.corpus import load_manifest

    corpus, wavs, shards = Path(corpus), [], {}
    for row in load_manifest(corpus):
        if split is None or row.get("split", "train") == split:
            if row["shard"] not in shards:
                shards[row["shard"]] = np.load(corpus / row["shard"])
            wavs.append(shards[row["shard"]][f"{row['id']}/audio"].astype(np.float32) / 32767)
    return wavs


def distill_live(base: str, corpus: str | Path, out: str | Path, cfg: LiveConfig = LiveConfig(),
                 resume: bool = False, progress: bool = True) -> dict:
    """``talkhead distill live``: the live pairs of ``corpus`` (kept beside ``out``), then ``train_live``."""
    import io

    from talkhead.errors import InputError
    from talkhead.motion.model import load_model
    from talkhead.util import atomic_write

    out = Path(out)
    if out.suffix != ".safetensors":
        raise InputError(f"--out must name a .safetensors file, got {out}")
    model = load_model(base)
    if model.features.kind != "whisper" or len(model.timesteps()) != 1:
        raise InputError(f"{base} is not a one-step Whisper-front-end student (the live student starts from one)")
    out.parent.mkdir(parents=True, exist_ok=True)
    cache = out.with_name(out.name + ".pairs.pt")
    if cache.exists() and resume:
        pairs = torch.load(cache)
    else:
        clips = corpus_audio(corpus)
        if not clips:
            raise InputError(f"{corpus} has no training clips")
        pairs = make_pairs(clips, model, cfg, progress)
        buf = io.BytesIO()
        torch.save(pairs, buf)
        atomic_write(cache, buf.getvalue())
    return train_live(model, pairs, out, cfg, resume=resume, progress=progress)
