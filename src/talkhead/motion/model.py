"""A loaded motion model: denoiser, feature front end, normalisation, default sampling."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from talkhead.audio.features import FeatureConfig, extract, silence_row
from talkhead.checkpoint import (
    dataclass_from,
    described,
    load_checkpoint,
    resolve_named,
    save_checkpoint,
    with_weights,
)
from talkhead.config import MODELS_DIR
from talkhead.diffusion.denoiser import Denoiser
from talkhead.diffusion.samplers import SAMPLERS, sample_ddim
from talkhead.diffusion.schedule import NoiseSchedule
from talkhead.errors import InputError
from talkhead.motion.data.normalize import Normalizer
from talkhead.motion.lipnet import LipHead
from talkhead.motion.net import DenoiserConfig, make_network, same_interface
from talkhead.motion.windows import LowLatencyRunner, RampRunner, WindowRunner, run_windows, window_starts
from talkhead.rig.spec import SPEC


@dataclass
class MotionModel:
    """Everything needed to turn speech into motion; ``load(path)`` rebuilds one from a checkpoint."""

    denoiser: Denoiser
    features: FeatureConfig
    norm: Normalizer
    sampling: dict[str, Any] = field(default_factory=lambda: {"sampler": "ddim", "steps": 50})
    meta: dict[str, Any] = field(default_factory=dict)
    lips: LipHead | None = None  # sets each window's lip opening from speech (``motion.lipnet``)

    @property
    def cfg(self) -> DenoiserConfig:
        return self.denoiser.net.cfg

    @property
    def schedule(self) -> NoiseSchedule:
        return self.denoiser.schedule

    @property
    def hearing(self) -> FeatureConfig:
        """What the front end computes for this model: its own features, then the inner encoder layers its lip
        net reads too (``FeatureConfig.taps``), in one pass over the audio."""
        return self.features if self.lips is None else self.lips.features

    def audio_features(self, wav: np.ndarray) -> Tensor:
        """Mono 16 kHz audio [N] -> normalised features [T, A] (and the lip net's taps after them, raw)."""
        return self.norm.audio(extract(wav, self.hearing))

    def ddim(self, cond: dict[str, Tensor], noise: Tensor, timesteps: list[int], to: int = -1) -> Tensor:
        """Deterministic DDIM over ``timesteps`` from ``noise`` (network units), stopping at ``to`` (-1: clean)."""
        return sample_ddim(lambda x, t: self.denoiser(x, t, cond), noise, self.schedule, timesteps, to=to)

    def timesteps(self, steps: int | None = None) -> list[int]:
        """The default step grid (a student's own), or ``steps`` trailing-spaced steps."""
        if steps is None and "timesteps" in self.sampling:
            return list(self.sampling["timesteps"])
        return self.schedule.timesteps(steps or int(self.sampling.get("steps", 50)), "trailing")

    def init_noise(self, batch: int, n_frames: int, generator: torch.Generator) -> Tensor:
        """The initial noise of every window: [B, K, W, 58]."""
        k = len(window_starts(n_frames, self.cfg.window, self.cfg.tail))
        return torch.randn(batch, k, self.cfg.window, self.cfg.motion_dim, generator=generator)

    @torch.no_grad()
    def sample(self, audio: Tensor, noise: Tensor, steps: int | None = None, sampler: str | None = None,
               guidance: float = 1.0, ref: Tensor | None = None, generator: torch.Generator | None = None) -> Tensor:
        """Normalised audio [B, T, A] and window noise [B, K, W, D] -> motion [B, T, 58] in rig units."""
        fn = self.window_fn(audio.shape[0], steps, sampler, guidance, ref, generator, noise.device)
        silence = self.norm.audio(silence_row(self.hearing))
        return self.norm.motion_inverse(run_windows(audio, fn, noise, silence, self.cfg.window, self.cfg.tail))

    def runner(self, noise: torch.Generator, steps: int | None = None, sampler: str | None = None,
               guidance: float = 1.0, ref: Tensor | None = None, generator: torch.Generator | None = None,
               lookahead: int | None = None, step: int = 2, window: int | None = None,
               ramp: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> WindowRunner | LowLatencyRunner:
        """For streaming, one clip: normalised audio rows in, motion in network units out, window by window.

        Each window's initial noise is drawn from ``noise`` as it starts, the same numbers
        ``init_noise(1, ...)`` draws at once, so a stream gives what ``sample`` gives for the whole clip.
        ``lookahead`` (frames): the low-latency runner for live speech instead (``LowLatencyRunner``), a window
        every ``step`` frames, over ``window`` frames (default the trained 80; live windows keep only their
        first frames, so 24 measure the same at 0.6x the compute). ``ramp`` (steps, lookaheads): the first
        windows low-latency, then full ones (``RampRunner``: a say spoken as it is synthesised).
        """
        w, d = (self.cfg.window if lookahead is None or window is None else window), self.cfg.motion_dim
        fn = self.window_fn(1, steps, sampler, guidance, ref, generator, torch.device("cpu"))
        args = (fn, lambda k: torch.randn(1, w, d, generator=noise), self.norm.audio(silence_row(self.hearing)), d, w,
                self.cfg.tail)
        if ramp is not None:
            return RampRunner(*args, steps=ramp[0], lookaheads=ramp[1])
        return WindowRunner(*args) if lookahead is None else LowLatencyRunner(*args, lookahead=lookahead, step=step)

    def window_fn(self, b: int, steps: int | None, sampler: str | None, guidance: float, ref: Tensor | None,
                  generator: torch.Generator | None, dev: torch.device):
        """The sampler run on one window: (start, audio [B, W, A], tail or None, noise [B, W, D]) -> [B, W, D]."""
        if self.denoiser.training:  # eval() walks every submodule: ~3 % of a one-step clip on 2 cores
            self.denoiser.eval()
        tail_len = self.cfg.tail
        ref_n = self.norm.motion(torch.zeros(b, SPEC.dim, device=dev) if ref is None else ref.to(dev))
        name = sampler or self.sampling.get("sampler", "ddim")
        if name not in SAMPLERS:
            raise InputError(f"unknown sampler {name!r}; expected one of {', '.join(sorted(SAMPLERS))}")
        ts, fn = self.timesteps(steps), SAMPLERS[name]
        no_tail = torch.zeros(b, tail_len, SPEC.dim, device=dev)
        flags = {True: torch.ones(b, dtype=torch.bool, device=dev), False: torch.zeros(b, dtype=torch.bool, device=dev)}
        kwargs = {"generator": generator} if name in ("ddpm", "ddim") else {}

        own = self.features.dim  # the denoiser's columns; a lip net's taps follow them

        @torch.no_grad()
        def window_fn(start: int, audio: Tensor, tail: Tensor | None, x_t: Tensor) -> Tensor:
            cond = {"audio": audio[..., :own].to(dev), "ref": ref_n, "tail": no_tail.to(x_t) if tail is None else tail,
                    "has_tail": flags[tail is not None]}
            x = fn(_guided(self.denoiser, cond, guidance), x_t, self.schedule, ts, **kwargs)
            if self.lips is None:
                return x
            opened = self.lips.apply(self.norm.audio_inverse(audio.to(x)), self.norm.motion_inverse(x))
            return self.norm.motion(opened)

        return window_fn

    def state_tensors(self) -> dict[str, Tensor]:
        return {k: v for k, v in self.denoiser.net.state_dict().items()}

    def save(self, path: str | Path, extra: dict[str, Any] | None = None, dtype: torch.dtype | None = None) -> None:
        meta = {**self.meta, **(extra or {}), "denoiser": self.cfg, "features": self.features,
                "schedule": self.schedule, "norm": self.norm.to_meta(), "sampling": self.sampling}
        save_checkpoint(path, self.state_tensors(), meta, dtype)


def _guided(denoiser: Denoiser, cond: dict[str, Tensor], guidance: float):
    """A denoise(x, t) closure; guidance != 1 mixes conditional and audio-free predictions (CFG)."""
    if guidance == 1.0:
        return lambda x, t: denoiser(x, t, cond)

    def denoise(x: Tensor, t: Tensor) -> Tensor:
        b = x.shape[0]
        both = {k: torch.cat([v, v]) for k, v in cond.items()}
        both["audio_mask"] = torch.cat([torch.ones(b, dtype=torch.bool), torch.zeros(b, dtype=torch.bool)])
        c, u = denoiser(torch.cat([x, x]), torch.cat([t, t]), both).chunk(2)
        return u + guidance * (c - u)

    return denoise


def build(cfg: DenoiserConfig, features: FeatureConfig, norm: Normalizer,
          schedule: NoiseSchedule = NoiseSchedule(), **kw: Any) -> MotionModel:
    """A fresh (untrained) model."""
    return MotionModel(Denoiser(make_network(cfg), schedule), features, norm, **kw)


# Best first: the default is the best shipped model. The Whisper-front-end models follow real speech
# far better than the log-mel students (README, "Real speech"); student-4-whisper is the closest of
# them to its teacher's S = 50 at four steps' cost.
PREFERENCE = ("student-4-whisper", "teacher-whisper", "student-2-whisper", "student-1-whisper", "student-consistency-whisper",
              "student-4", "student-2", "student-1", "student-consistency", "teacher")


def _rebuilt(model: MotionModel, cfg: DenoiserConfig) -> MotionModel:
    """A fresh network for ``cfg``; features, normalisation, schedule, grid and metadata from ``model``."""
    return build(cfg, model.features, model.norm, model.schedule, sampling=dict(model.sampling), meta=dict(model.meta))


def learns_from(student: MotionModel, teacher: MotionModel) -> bool:
    """Whether ``student`` can learn ``teacher``'s outputs: the same inputs, outputs and normalisation."""
    return same_interface(student.cfg, teacher.cfg) and student.norm.to_meta() == teacher.norm.to_meta()


def with_experts(model: MotionModel, timesteps: list[int]) -> MotionModel:
    """A copy of ``model`` with one network per timestep, each starting from the network that serves it now."""
    cfg = replace(model.cfg, experts=tuple(timesteps))
    out = _rebuilt(model, cfg)
    net = model.denoiser.net
    # Already per-step: each new copy starts from the old copy that serves its timestep.
    if model.cfg.experts:
        sources = [net.experts[i] for i in net.nearest(torch.tensor(timesteps))]
    else:
        sources = [net] * len(timesteps)
    for expert, src in zip(out.denoiser.net.experts, sources):
        expert.load_state_dict(src.state_dict())
    return out


def with_depth(model: MotionModel, depth: int) -> MotionModel:
    """A copy of ``model`` with ``depth`` transformer layers, the extra ones appended as the identity.

    Each extra layer's residual outputs (attention projection, second feed-forward layer) start at
    zero, so the copy computes exactly what ``model`` does and training adds capacity from there.
    """
    if depth < model.cfg.depth:
        raise InputError(f"--depth {depth} is below the starting weights' {model.cfg.depth} layers; "
                         "a student can only grow")
    out = _rebuilt(model, replace(model.cfg, depth=depth))
    net = out.denoiser.net
    missing = set(net.load_state_dict(model.denoiser.net.state_dict(), strict=False).missing_keys)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name in missing and (".self_attn.out_proj." in name or ".linear2." in name):
                p.zero_()
    return out


def average_weights(models: list[MotionModel]) -> MotionModel:
    """The mean of several runs' weights, a "model soup" (Wortsman et al. 2022); metadata from the first.

    Runs that start from one checkpoint stay in one basin, so their mean is a model too, often a
    little closer to the teacher than either run. They must share network, step grid and normalisation.
    """
    first = models[0]
    for m in models[1:]:
        if m.cfg != first.cfg or m.timesteps() != first.timesteps() or m.norm.to_meta() != first.norm.to_meta():
            raise InputError("only checkpoints with the same network, step grid and normalisation can be averaged")
    out = _rebuilt(first, first.cfg)
    states = [m.denoiser.net.state_dict() for m in models]
    out.denoiser.net.load_state_dict({k: torch.stack([s[k].float() for s in states]).mean(0) for k in states[0]})
    out.denoiser.eval()
    return out


def shipped_models() -> list[Path]:
    """Checkpoints that ship inside the package."""
    return sorted(MODELS_DIR.glob("*.safetensors"))


def default_model_name() -> str:
    """The best shipped model."""
    names = {p.stem for p in shipped_models()}
    for name in PREFERENCE:
        if name in names:
            return name
    raise InputError("no motion model ships with this install; train one with `talkhead train` or use --driver phones")


def resolve(name_or_path: str | Path) -> Path:
    """A shipped model name (see ``talkhead models``) or a path to a checkpoint."""
    return resolve_named(name_or_path, MODELS_DIR, "model")


def load(name_or_path: str | Path) -> MotionModel:
    """Rebuild a model from a self-describing checkpoint. ``MODEL+LIPS`` gives it the lip net ``LIPS`` (a
    shipped name or a path; ``none``: the model's own lips); a bare name wears none (``with_lips``)."""
    base, lips = split_lips(name_or_path)
    model = _load_model(base)
    return model if lips is None else with_lips(model, lips)


def split_lips(name_or_path: str | Path) -> tuple[str, str | None]:
    """``MODEL+LIPS`` -> (MODEL, LIPS); a name or path without ``+`` -> (it, None)."""
    spec = str(name_or_path)
    if "+" not in spec or Path(spec).exists():
        return spec, None
    base, _, lips = spec.rpartition("+")
    return base, lips


def with_lips(model: MotionModel, lips: str | Path | None, strict: bool = True) -> MotionModel:
    """``model`` wearing the lip net ``lips`` (None: the shipped one when its front end fits, "none": no net).
    ``strict``: a net that does not fit the model's front end is an error rather than left off."""
    from talkhead.motion.lipnet import load_head, shipped_head

    if lips is not None and str(lips).lower() == "none":
        return replace(model, lips=None)
    path = lips if lips is not None else shipped_head(live="live" in model.meta)
    if path is None:
        return replace(model, lips=None)
    head = load_head(path)
    if not head.fits(model.features):
        if strict:
            raise InputError(f"the lip net {lips} reads {head.features.kind} features; this model reads "
                             f"{model.features.kind} ({model.features.pool})")
        return replace(model, lips=None)
    return replace(model, lips=head)


def in_person_range(model: MotionModel, gap: tuple[float, float] | None) -> MotionModel:
    """``model`` with its lip net opening the mouth in one person's own units: ``gap`` is (mean, spread) of the
    lip gap their filmed frames draw on the standard face (``motion.lipnet.drawn_gap``). The net reads each
    person's opening in their own z-units (it was trained so); the shipped head turns them into gaps with the
    average filmed person's units, and a person who opens twice as wide (an avatar's, whose engine learnt
    their range) is then drawn half as open. None, or a model without a lip net: ``model`` as it is.

    A range only widens the average filmed person's, never narrows it (each of mean and spread at least the
    head's): a video in which the mouth moves less than the average person's (a calm address) says how that
    video went, not how far the person opens. Found on the EDTalk avatar (his range 0.011 / 0.010 against
    0.024 / 0.018: speech-driven lip r 0.27 in it, 0.45 without) and confirmed on one no choice was made on,
    StyleTalk's lecturer (0.009 / 0.011: 0.18 in it, 0.49 without; docs/avatar.md)."""
    if gap is None or model.lips is None:
        return model
    mean, spread = (float(v) for v in gap)
    if not (math.isfinite(mean) and math.isfinite(spread) and spread > 0):
        raise InputError(f"a lip range needs a finite mean and a spread above 0, not {gap}")
    lips = model.lips
    return replace(model, lips=replace(lips, gap_mean=max(mean, lips.gap_mean), gap_std=max(spread, lips.gap_std)))


def on_face(model: MotionModel, rig) -> MotionModel:
    """``model`` with its lip net solving each frame's opening on the face the motion will be drawn on (a
    ``face.template.Rig``, e.g. a warp renderer's), not on the standard face: a photo's own lips (open or closed)
    and the mouth's other channels move its gap differently. None, or a model without a lip net: as it is."""
    if rig is None or model.lips is None:
        return model
    from talkhead.motion.lipnet import lip_face

    return replace(model, lips=model.lips.on(lip_face(rig)))


def load_model(name: str | None) -> MotionModel:
    """A shipped model by name, a checkpoint path, or the default shipped model, wearing the shipped lip
    net when its front end fits (``MODEL+none``: the model's own lips; ``MODEL+LIPS``: another net)."""
    model = load(name or default_model_name())
    return model if split_lips(name or "")[1] is not None else with_lips(model, None, strict=False)


def _load_model(name_or_path: str | Path) -> MotionModel:
    path = resolve(name_or_path)
    tensors, meta = load_checkpoint(path)
    with described(path, "motion model"):
        cfg = dataclass_from(DenoiserConfig, meta["denoiser"])
        net = with_weights(lambda: make_network(cfg), tensors, str(path))  # nothing allocated for a crafted file
        model = MotionModel(Denoiser(net, dataclass_from(NoiseSchedule, meta["schedule"])),
                            dataclass_from(FeatureConfig, meta["features"]), Normalizer.from_meta(meta["norm"]),
                            sampling=meta.get("sampling", {}),
                            meta={k: v for k, v in meta.items() if k in ("kind", "name", "train", "distill", "averaged", "live", "live_train", "lips")})
    model.denoiser.eval()
    return model
