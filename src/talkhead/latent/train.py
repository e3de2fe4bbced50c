"""Training the latent engine on the project's one loop (``train.loop.fit``) and diffusion core.

The teacher predicts noise (T = 1000). Each batch holds pairs of adjacent frames that share the
timestep and the starting noise, as frames do at generation time, so the loss can also score the
pair's difference (the temporal term, against flicker). A pixel term decodes the teacher's nearly
clean x0 estimates through the frozen VAE and compares them with the real crop: latent MSE alone
lets fine identity detail (eyes, lip edges) go soft. Students are distilled from the teacher's
50-step DDIM run (progressive distillation's target, one segment of the teacher's path per student
step), predict v (an eps student cannot make a clean face in one step from almost pure noise) and
start from the teacher's weights.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

from talkhead.diffusion.losses import per_sample_error, progressive_loss, segment_targets
from talkhead.diffusion.pairs import fingerprint
from talkhead.errors import InputError
from talkhead.latent.data import load_faces
from talkhead.latent.engine import LatentEngine, load_engine, save_engine
from talkhead.latent.net import LatentConfig
from talkhead.latent.vae import FaceVAE, load_vae
from talkhead.train.loop import FitConfig, fit
from talkhead.util import atomic_write


@dataclass(frozen=True)
class LatentTrainConfig:
    """Teacher and student optimisation; the weights of the temporal and pixel terms."""

    steps: int = field(default=4000, metadata={"help": "teacher training steps"})
    batch: int = field(default=32, metadata={"help": "frame pairs per step"})
    lr: float = field(default=0.001, metadata={"help": "teacher learning rate"})
    temporal: float = field(default=1.0, metadata={"help": "weight of the adjacent-frame difference error"})
    pixel: float = field(default=0.5, metadata={"help": "weight of the decoded-pixel L1 on nearly clean steps"})
    pixel_below: int = field(default=300, metadata={"help": "timesteps below which the pixel term applies"})
    pixel_batch: int = field(default=8, metadata={"help": "frames decoded per step for the pixel term"})
    seed: int = 0
    distill_steps: int = field(default=800, metadata={"help": "student steps", "flag": "--steps"})  # latent distill's
    distill_lr: float = field(default=3e-4, metadata={"help": "student learning rate", "flag": "--lr"})


def face_clips(faces: str | Path, split: str = "train") -> list[dict]:
    """The crops of a ``data faces`` / ``data video`` folder as training clips (a named error if none)."""
    clips = load_faces(faces, split)
    if not clips:
        raise InputError(f"{faces} has no {split} face crops")
    return clips


class FramePairs:
    """Training frames as normalised latents, with motion and each clip's reference latent.

    A clip is a dict with ``frames`` uint8 [n, S, S, 3], ``motion`` [n, 58] and ``reference`` [S, S, 3];
    optionally ``maps`` (its mouth maps [n, G, h, w]) and ``context`` (uint8 [n, S, S, 3]: the frames an
    avatar engine sees around what it draws, encoded as latents here), with ``structure`` (uint8 [n, S, S, 3], the
    avatar's reference warped by each frame's motion) encoded beside it. ``references`` [N, k] (indices into
    all the clips' frames): each frame's reference is one of its row's frames, drawn at random, instead of
    its clip's reference (an avatar's mouth bank, ``avatar.mouths``).
    """

    def __init__(self, engine: LatentEngine, clips: list[dict], cache: Path | None = None,
                 references: np.ndarray | None = None):
        # One clip (an avatar's video) is kept as it is: a concatenated copy of 2 minutes of 1080p crops is 0.6 GB.
        self.frames = clips[0]["frames"] if len(clips) == 1 else np.concatenate([c["frames"] for c in clips])
        motion = np.concatenate([c["motion"] for c in clips]).astype(np.float32)
        self.motion = torch.from_numpy(motion)
        lengths = np.array([len(c["frames"]) for c in clips])
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        # A pair (i, i + 1) never straddles two clips.
        self.first = torch.from_numpy(np.concatenate([s + np.arange(n - 1) for s, n in zip(starts, lengths)]))
        self.clip_of = torch.from_numpy(np.repeat(np.arange(len(clips)), lengths))
        self.refs_raw = np.stack([c["reference"] for c in clips])
        # Each clip's context: its masked frames, and an avatar's warped reference too (``structure``), side by side.
        context = [[c["context"]] + ([c["structure"]] if "structure" in c else []) for c in clips] \
            if engine.cfg.context else None
        self.latents, self.context = self._encode(engine, cache, context)
        self.references = engine.encode_many(self.refs_raw)
        self.maps = None
        if engine.cfg.geometry:  # each clip's mouth, drawn on its own reference's rig
            from talkhead.face.framing import reference_rig

            maps = [c["maps"] if "maps" in c else engine.maps({"rig": reference_rig(c["reference"])}, c["motion"])
                    for c in clips]
            self.maps = torch.cat(maps)
        self.bank = None if references is None else torch.as_tensor(references, dtype=torch.int64)

    def _encode(self, engine: LatentEngine, cache: Path | None,
                context: list[list[np.ndarray]] | None) -> tuple[Tensor, Tensor | None]:
        # Encoding every crop takes minutes: a resumed run (or a student's) reuses it when the VAE,
        # the statistics and the crops are the same ones. Context frames are encoded clip by clip, never
        # concatenated (another copy of every crop), and not touched at all on a cache hit.
        key = fingerprint([*engine.vae.state_dict().values(), engine.lat_mean, engine.lat_std,
                           torch.from_numpy(self.frames[::97].copy())]
                          + [torch.from_numpy(a[::97].copy()) for c in context or [] for a in c])
        if cache is not None and cache.is_file():
            stored = torch.load(cache)
            if stored.get("key") == key:
                ctx = stored.get("context")
                return stored["z"].float(), ctx.float() if ctx is not None else None
        z = engine.encode_many(self.frames)
        ctx = torch.cat([torch.cat([engine.encode_many(a) for a in c], 1) for c in context]) if context else None
        if cache is not None:
            buf = io.BytesIO()
            torch.save({"key": key, "z": z.half(), "context": ctx.half() if ctx is not None else None}, buf)
            atomic_write(cache, buf.getvalue())
        return z, ctx

    def sample(self, batch: int, gen: torch.Generator) -> dict[str, Tensor]:
        i = self.first[torch.randint(0, len(self.first), (batch,), generator=gen)]
        pair = torch.stack([i, i + 1], dim=1)  # [B, 2]
        if self.bank is None:
            reference = self.references[self.clip_of[i]]
        else:  # both frames of a pair start from the first one's banked mouth, as neighbours do when drawn
            banked = self.bank[i, torch.randint(0, self.bank.shape[1], (batch,), generator=gen)]
            reference = self.latents[banked]
        out = {"x0": self.latents[pair], "motion": self.motion[pair], "reference": reference, "index": pair}
        if self.bank is not None:
            out["reference_index"] = banked
        if self.maps is not None:
            out["geometry"] = self.maps[pair]
        if self.context is not None:
            out["context"] = self.context[pair]
        return out


def _flat(x: Tensor) -> Tensor:
    return x.reshape(-1, *x.shape[2:])


def _diffusion_pairs(engine: LatentEngine, b: dict[str, Tensor]) -> Tensor:
    """The pairs' latents as the diffusion sees them [B, 2, ...] (changes from the reference, with ``residual``)."""
    ref = b["reference"][:, None].expand(-1, 2, -1, -1, -1)
    return engine.to_diffusion(_flat(b["x0"]), _flat(ref)).reshape(b["x0"].shape)


def _pair_cond(engine: LatentEngine, b: dict[str, Tensor]) -> dict[str, Tensor]:
    ref = b["reference"][:, None].expand(-1, 2, -1, -1, -1)
    out = {"reference": _flat(ref), "motion": (_flat(b["motion"]) - engine.mot_mean) / engine.mot_std}
    for k in ("geometry", "context"):
        if k in b:
            out[k] = _flat(b[k])
    return out


def _noised_pairs(engine: LatentEngine, x0: Tensor, t: Tensor, gen: torch.Generator) -> tuple[Tensor, Tensor]:
    """x_t of each pair with one noise draw shared by both frames: [B, 2, ...] each."""
    noise = torch.randn((x0.shape[0], 1, *x0.shape[2:]), generator=gen).expand_as(x0)
    t2 = t[:, None].expand(-1, 2).reshape(-1)
    return engine.schedule.add_noise(_flat(x0), _flat(noise), t2).reshape(x0.shape), noise


class TeacherObjective:
    """eps MSE with the pair's difference error, plus the decoded-pixel L1 (``train.loop.Objective``)."""

    def __init__(self, engine: LatentEngine, data: FramePairs, cfg: LatentTrainConfig) -> None:
        self.engine, self.data, self.cfg = engine, data, cfg

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        cfg, eng = self.cfg, self.engine
        b = self.data.sample(cfg.batch, gen)
        x0 = _diffusion_pairs(eng, b)
        t = torch.randint(0, eng.schedule.num_train_timesteps, (cfg.batch,), generator=gen)
        x_t, noise = _noised_pairs(eng, x0, t, gen)
        t2 = t[:, None].expand(-1, 2).reshape(-1)
        eps = module(_flat(x_t), t2, _pair_cond(eng, b)).reshape(x0.shape)
        loss = per_sample_error(eps, noise, cfg.temporal).mean()
        if cfg.pixel:
            loss = loss + cfg.pixel * self._pixel(x_t, eps, t, b)
        return loss

    def _pixel(self, x_t: Tensor, eps: Tensor, t: Tensor, b: dict[str, Tensor]) -> Tensor:
        cfg, eng = self.cfg, self.engine
        rows = torch.nonzero(t < cfg.pixel_below).flatten()[: cfg.pixel_batch]
        if len(rows) == 0:
            return torch.zeros(())
        a, s = eng.schedule.alpha_sigma(t[rows])
        a, s = a.float().reshape(-1, 1, 1, 1), s.float().reshape(-1, 1, 1, 1)
        return _pixel_l1(eng, self.data, (x_t[rows, 0] - s * eps[rows, 0]) / a, b, rows)


def _pixel_l1(eng: LatentEngine, data: FramePairs, x0_hat: Tensor, b: dict[str, Tensor], rows: Tensor) -> Tensor:
    """The decoded-pixel L1 of the batch's ``rows`` (first frames), from their x0 estimates in diffusion space."""
    target = torch.from_numpy(data.frames[b["index"][rows, 0].numpy()]).permute(0, 3, 1, 2).float() / 255
    return (eng.decode_float(eng.from_diffusion(x0_hat, b["reference"][rows])) - target).abs().mean()


class BridgeObjective:
    """The bridge trained as it is sampled (``LatentEngine.bridge``): sampling starts from the *reference* noised to
    ``timesteps[0]``, a bank mouth of the person, not the frame. The eps objective only ever saw the frame itself
    noised, so from the reference it keeps much of the reference's mouth. Here x at each of the bridge's timesteps is
    what a DDIM run from the noised reference passes through when its x0 is right (the frame), and the net's x0 there
    is scored against the frame, in latents (with the temporal term) and, decoded, in pixels. ``move``: the reference
    latents [B, ...] of frames ``src`` [B] moved to the mouths of frames ``dst`` [B] (indices into ``data``'s frames),
    as drawing with ``move_start`` moves the bank's mouth to the drawn one before the bridge starts from it."""

    def __init__(self, engine: LatentEngine, data: FramePairs, cfg: LatentTrainConfig, timesteps: list[int],
                 move: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None) -> None:
        self.engine, self.data, self.cfg, self.timesteps, self.move = engine, data, cfg, list(timesteps), move

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        cfg, eng = self.cfg, self.engine
        b = self.data.sample(cfg.batch, gen)
        if self.move is not None:
            b["reference"] = self.move(b["reference"], b["reference_index"], b["index"][:, 0])
        x0 = _diffusion_pairs(eng, b)
        ref = eng.to_diffusion(b["reference"], b["reference"])[:, None].expand_as(x0)
        a0, s0 = (v.float() for v in eng.schedule.alpha_sigma(self.timesteps[0]))
        noise = torch.randn((x0.shape[0], 1, *x0.shape[2:]), generator=gen).expand_as(x0)
        eps = (a0 * ref + s0 * noise - a0 * x0) / s0  # the noise that takes the frame to the noised reference
        t = torch.tensor(self.timesteps)[torch.randint(0, len(self.timesteps), (cfg.batch,), generator=gen)]
        a, s = (v.float().reshape(-1, 1, 1, 1, 1) for v in eng.schedule.alpha_sigma(t))
        x_t = a * x0 + s * eps  # DDIM (eta 0) from the noised reference, its x0 right at every step before
        pred = module(_flat(x_t), t[:, None].expand(-1, 2).reshape(-1), _pair_cond(eng, b)).reshape(x0.shape)
        x0_hat = (x_t - s * pred) / a
        loss = per_sample_error(x0_hat, x0, cfg.temporal).mean()
        if cfg.pixel:
            rows = torch.arange(min(cfg.pixel_batch, cfg.batch))
            loss = loss + cfg.pixel * _pixel_l1(eng, self.data, x0_hat[rows, 0], b, rows)
        return loss


def new_engine(vae: str | Path | FaceVAE, clips: list[dict], cfg: LatentConfig = LatentConfig()) -> tuple[LatentEngine, dict]:
    """An untrained engine on a trained VAE, with latent and motion statistics from the training clips."""
    engine = LatentEngine(vae if isinstance(vae, FaceVAE) else load_vae(vae), cfg)  # unit statistics: raw latents
    clips = clips[::4]  # a quarter of the clips, every 5th frame: enough for the statistics
    z = engine.encode_many(np.concatenate([c["frames"][::5] for c in clips]))
    refs = engine.encode_many(np.stack([c["reference"] for c in clips]))
    per_clip = torch.repeat_interleave(torch.arange(len(clips)), torch.tensor([len(c["frames"][::5]) for c in clips]))
    mean, std = z.mean(dim=(0, 2, 3)), z.std(dim=(0, 2, 3))
    m = torch.from_numpy(np.concatenate([c["motion"] for c in clips]).astype(np.float32))
    stats = {"lat_mean": mean.tolist(), "lat_std": std.tolist(), "mot_mean": m.mean(0).tolist(),
             "mot_std": m.std(0).clamp_min(1e-3).tolist(),
             "res_std": ((z - refs[per_clip]) / std[:, None, None]).std(dim=(0, 2, 3)).clamp_min(1e-3).tolist()}
    return LatentEngine(engine.vae, cfg, stats), stats


def train_teacher(vae_path: str | Path | FaceVAE, faces: str | Path | list[dict], out: str | Path,
                  cfg: LatentTrainConfig = LatentTrainConfig(), net: LatentConfig = LatentConfig(), resume: bool = False,
                  progress: bool = True, timesteps: list[int] | None = None, name: str = "teacher",
                  init: str | Path | None = None, references: np.ndarray | None = None, bridge: bool = False,
                  move: Callable[[Tensor, Tensor, Tensor], Tensor] | None = None) -> dict:
    """Train the noise-predicting teacher; writes ``{name}.safetensors`` (a whole engine) in ``out``.

    ``faces``: a crops folder or the clips themselves (``FramePairs``); ``timesteps``: the teacher's DDIM grid
    (default 50 steps), which its students distil. ``init``: an engine file to start from (its statistics and
    weights: a fine-tune); ``references``: per-frame reference candidates (``FramePairs``); ``bridge``: trained as
    the bridge from the reference samples it over ``timesteps`` (``BridgeObjective``, its references moved by
    ``move``), not the eps objective.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = out / f"{name}.state.pt"
    if state.exists() and not resume:
        raise InputError(f"{out} already holds a teacher run; pass --resume to continue it or choose a new --out")
    torch.manual_seed(cfg.seed)
    clips = faces if isinstance(faces, list) else face_clips(faces)
    if init is not None:
        start = load_engine(init)
        engine, stats = LatentEngine(start.vae, start.cfg, start.stats(), timesteps), start.stats()
        engine.net.load_state_dict(start.net.state_dict())
    else:
        engine, stats = new_engine(vae_path, clips, net)
        if timesteps is not None:
            engine = LatentEngine(engine.vae, net, stats, timesteps)
    data = FramePairs(engine, clips, cache=out / "latents.pt", references=references)
    t0 = time.time()
    fit_cfg = FitConfig(steps=cfg.steps, lr=cfg.lr, warmup=min(200, cfg.steps // 10), ema=0.999, ema_warmup=True,
                        seed=cfg.seed, ckpt_every=250)

    def save(step: int, loss: float, avg: nn.Module) -> None:
        engine.net.load_state_dict(avg.state_dict())
        save_engine(out / f"{name}.safetensors", engine, {"train": {
            "faces": _source(faces), "objective": "bridge" if bridge else "teacher", "step": step, **asdict(cfg),
            "pairs": len(data.first), "init": None if init is None else Path(init).name,
            "bank": references is not None, "moved": move is not None,
            "wall_s": round(time.time() - t0, 1)}})

    objective = (BridgeObjective(engine, data, cfg, engine.timesteps, move) if bridge
                 else TeacherObjective(engine, data, cfg))
    result = fit(engine.net, objective, fit_cfg, state, on_checkpoint=save,
                 resume=resume, desc=f"latent {name}", progress=progress)
    return {"steps": result.step, "loss_last": float(np.mean(result.losses[-50:])) if result.losses else None}


class StudentObjective:
    """A k-step student's x0 at each of its steps matches the teacher's DDIM run over that segment."""

    def __init__(self, teacher: LatentEngine, data: FramePairs, starts: list[int], paths: list[list[int]],
                 cfg: LatentTrainConfig) -> None:
        self.teacher, self.data, self.starts, self.paths, self.cfg = teacher, data, starts, paths, cfg

    def __call__(self, module: nn.Module, gen: torch.Generator, step: int) -> Tensor:
        tea, cfg = self.teacher, self.cfg
        b = self.data.sample(cfg.batch, gen)
        k = torch.randint(0, len(self.starts), (cfg.batch,), generator=gen)
        t = torch.tensor(self.starts)[k]
        x0 = _diffusion_pairs(tea, b)
        x_t, _ = _noised_pairs(tea, x0, t, gen)
        x_t, cond, t2 = _flat(x_t), _pair_cond(tea, b), t[:, None].expand(-1, 2).reshape(-1)
        target, a_t = segment_targets(tea.denoise, tea.schedule, x_t, k.repeat_interleave(2), self.paths, cond)
        pred = module(x_t, t2, cond)
        return progressive_loss(pred.reshape(x0.shape), target.reshape(x0.shape),
                                a_t.reshape(cfg.batch, 2, 1, 1, 1)[:, :1], cfg.temporal)


def student_grid(teacher_steps: list[int], k: int) -> tuple[list[int], list[list[int]]]:
    """A k-step student's timesteps on the teacher's grid and the teacher run each one replaces."""
    full = teacher_steps + [-1]
    n = len(teacher_steps)
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [full[a] for a in bounds[:-1]], [full[a:b + 1] for a, b in zip(bounds, bounds[1:])]


def _source(faces: str | Path | list[dict]) -> str:
    return f"{len(faces)} clips" if isinstance(faces, list) else str(faces)


def distill_student(teacher_path: str | Path, faces: str | Path | list[dict], out: str | Path, k: int,
                    cfg: LatentTrainConfig = LatentTrainConfig(), resume: bool = False, progress: bool = True) -> dict:
    """Distil a ``k``-step v-predicting student from the teacher's 50-step DDIM; writes ``student-{k}.safetensors``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    state = out / f"student-{k}.state.pt"
    if state.exists() and not resume:
        raise InputError(f"{out} already holds a {k}-step student run; pass --resume or choose a new --out")
    teacher = load_engine(teacher_path)
    if not 1 <= k < len(teacher.timesteps):
        raise InputError(f"a student takes 1 to {len(teacher.timesteps) - 1} steps (got {k})")
    starts, paths = student_grid(teacher.timesteps, k)
    student = LatentEngine(teacher.vae, replace(teacher.cfg, prediction="v"), teacher.stats(), starts)
    student.net.load_state_dict(teacher.net.state_dict())  # the teacher's features, relearned as a v output
    student.bridge = teacher.bridge  # a bridged teacher's student starts where it starts
    data = FramePairs(teacher, faces if isinstance(faces, list) else face_clips(faces), cache=out / "latents.pt")
    t0 = time.time()
    fit_cfg = FitConfig(steps=cfg.distill_steps, lr=cfg.distill_lr, warmup=min(50, cfg.distill_steps // 10),
                        ema=0.995, ema_warmup=True, seed=cfg.seed + k, ckpt_every=100)

    def save(step: int, loss: float, avg: nn.Module) -> None:
        student.denoiser.load_state_dict(avg.state_dict())
        save_engine(out / f"student-{k}.safetensors", student, {"train": {
            "faces": _source(faces), "objective": f"distilled {len(teacher.timesteps)} -> {k} steps", "step": step,
            **asdict(cfg), "teacher": Path(teacher_path).name, "wall_s": round(time.time() - t0, 1)}})

    result = fit(student.denoiser, StudentObjective(teacher, data, starts, paths, cfg), fit_cfg, state,
                 on_checkpoint=save, resume=resume, desc=f"latent student {k}", progress=progress)
    return {"steps": result.step, "loss_last": float(np.mean(result.losses[-50:])) if result.losses else None}
