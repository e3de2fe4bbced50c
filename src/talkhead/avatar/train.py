"""``talkhead avatar train``: a person's own video -> one ``.avatar`` file, in resumable stages.

Stages, each in ``NAME.avatar.work/`` and each resumed where a kill left it (the loop's exact resume):

1. ``data.npz``: the crops, fitted motion and masks of ``avatar.data.ingest``; each video's followed face
   (``track-*.npz``, most of ingest's time) is kept as it is found, so a kill mid-ingest loses one video's.
2. ``vae.safetensors``: a face VAE for this person's crops (4x down at <= 128 px, so a mouth is many
   latent cells, not the 3 of the one-photo engine), trained on the project's one loop.
3. ``teacher.safetensors``: the latent denoiser (``latent.net``) conditioned on the frame's
   context (the crop with its lower face hidden, encoded), the person's reference latent, the mouth
   maps and the motion; noise prediction with the temporal and pixel terms (``latent.train``). It is
   sampled as a bridge: from the reference latent noised to t = 800, in 2 DDIM steps.
4. ``teacher-bank.safetensors``: the teacher fine-tuned to start from the person's own nearest mouth
   (``avatar.mouths``: each frame's reference one of its nearest frames by the lips' points, 2 s away or more).
5. ``teacher-bridge.safetensors``: that teacher tuned as its bridge samples it (``latent.train.BridgeObjective``:
   from a bank neighbour noised to t = 800, the frame's x0 at 800 and 400); it ships (``--bridge-steps 0``: 4 does).
6. ``student-K.safetensors`` (optional, ``--students``): students distilled from the shipped teacher.
7. the ``.avatar``: the chosen engine, the masks, the reference, the mouth bank (every frame's latent and
   motion) and the steadiest stretch of the video as the base that generation loops (``avatar.file.save_avatar``).
"""

from __future__ import annotations

import hashlib
import io
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from talkhead.avatar.config import AvatarTrainConfig, vae_widths
from talkhead.avatar.data import AvatarData, AvatarDataConfig, ingest
from talkhead.avatar.vae_stage import sharpen_decoder, train_vae
from talkhead.errors import InputError
from talkhead.util import atomic_write


def _inputs_key(videos: list[Path], cfg: AvatarTrainConfig) -> str:
    # What a stage's files depend on: the videos, how they become crops and the networks' shapes. Step
    # counts and learning rates may change between runs (a stage then continues to its new count).
    shape = {"data": asdict(cfg.data), "vae_widths": cfg.vae_widths, "widths": cfg.widths, "patch": cfg.vae_patch,
             "latent": cfg.vae_latent}
    # Settings added later are keys only when set, so that runs made before they existed resume.
    for k, plain in (("map_detail", 1), ("structure", False), ("vae_4x_up_to", 128), ("bridge_move", "off")):
        if getattr(cfg, k) != plain:
            shape[k] = getattr(cfg, k)
    h = hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode())
    for v in videos:  # by content, read in chunks (a phone's video may be GBs): a renamed copy is the same run
        with open(v, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()[:16]


def renamed(clips: list[dict], videos: list[Path]) -> None:
    """Each clip named by its video as it is named now. The run's key is the videos' content in order, so a renamed
    copy resumes, but the clips keep the name each video had when it was read (the avatar's base frames are read
    again from it by name): old names are mapped to the new ones in order of first appearance."""
    names, seen = [v.name for v in videos], list(dict.fromkeys(c["video"] for c in clips))
    if set(seen) <= set(names):
        return
    if len(seen) != len(names):
        raise InputError("the videos were renamed since this run read them, and not every one gave frames to "
                         "learn from; remove the work folder (NAME.avatar.work) to start again")
    new = dict(zip(seen, names))
    for c in clips:
        c["video"] = new[c["video"]]


def _save_data(path: Path, d: AvatarData) -> None:
    arrays = {"side": np.array(d.side), "reference": d.reference, "ref_points": d.ref_points,
              "crop_to_ref": d.crop_to_ref, "crop_points": d.crop_points, "paste": d.paste, "hidden": d.hidden,
              "report": np.array(json.dumps(d.report))}
    for i, c in enumerate(d.clips):
        for k in CLIP_ARRAYS:
            arrays[f"clip{i}/{k}"] = c[k]
        arrays[f"clip{i}/video"] = np.array(c["video"])
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())


CLIP_ARRAYS = ("frames", "motion", "affine", "frame_index", "points")


def load_data(path: Path, grid_down: int, cfg: AvatarDataConfig, fine: int = 1, structure: bool = False) -> AvatarData:
    """``data.npz`` (ingested with ``cfg``) back as ``AvatarData``, conditioned for a VAE ``grid_down`` pixels a
    latent cell (mouth maps ``fine`` times finer; the warped reference with ``structure``)."""
    from talkhead.avatar.data import condition

    z = np.load(path)
    n = len({k.split("/")[0] for k in z.files if k.startswith("clip")})
    clips = []
    for i in range(n):
        c = {k: z[f"clip{i}/{k}"] for k in CLIP_ARRAYS}
        c["video"], c["reference"] = str(z[f"clip{i}/video"]), z["reference"]
        clips.append(c)
    side = int(z["side"])
    d = AvatarData(side, clips, z["reference"], z["ref_points"], z["crop_to_ref"], z["crop_points"], z["paste"],
                   z["hidden"], json.loads(str(z["report"])), cfg)
    return condition(d, side // grid_down, fine=fine, structure=structure)


def bridge_grid(t0: int, steps: int) -> list[int]:
    """``steps`` evenly spaced DDIM timesteps from ``t0`` down (the last one above 0)."""
    return [int(round(t0 * (1 - i / steps))) for i in range(steps)]


def _done(path: Path, steps: int) -> bool:
    """A stage's model file exists from its last step."""
    if not path.is_file():
        return False
    from talkhead.checkpoint import load_checkpoint

    return load_checkpoint(path)[1].get("train", {}).get("step") == steps


class _Clock:
    """Wall seconds per stage, summed over the runs of one work folder (an interrupted stage counts its last run)."""

    def __init__(self, path: Path) -> None:
        self.path, self.t = path, time.time()
        self.laps = json.loads(path.read_text()) if path.exists() else {}

    def lap(self, name: str) -> None:
        now = time.time()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self.t, 1)
        self.t = now
        atomic_write(self.path, json.dumps(self.laps).encode())

    def totals(self) -> dict:
        return {**self.laps, "total_s": round(sum(self.laps.values()), 1)}


def _bridge(path: Path, grid: list[int]) -> None:
    """Give the teacher file the bridge sampler (its weights do not depend on it), so its students inherit it."""
    from talkhead.latent.engine import load_engine, save_engine

    eng = load_engine(path)
    if eng.bridge and eng.timesteps == grid:
        return
    eng.timesteps, eng.bridge = grid, True
    save_engine(path, eng, {"train": eng.meta["train"]})


def _bank_teacher(work: Path, d: AvatarData, cfg: AvatarTrainConfig, tcfg, grid: list[int], progress: bool) -> Path:
    """The teacher fine-tuned on references from the person's mouth bank (``avatar.mouths.neighbours``)."""
    from dataclasses import replace

    from talkhead.avatar.mouths import AS_POINTS
    from talkhead.latent.train import train_teacher

    path = work / "teacher-bank.safetensors"
    if not _done(path, cfg.bank_steps):
        # References by the lips' points as they are, as the engines measured were trained (``mouths.KEY_GAP``).
        train_teacher(None, d.clips, work, replace(tcfg, steps=cfg.bank_steps, lr=cfg.bank_lr), name="teacher-bank",
                      init=work / "teacher.safetensors", references=_neighbours(d, cfg, AS_POINTS), timesteps=grid,
                      resume=(work / "teacher-bank.state.pt").exists(), progress=progress)
    _bridge(path, grid)
    return path


def _neighbours(d: AvatarData, cfg: AvatarTrainConfig, keys: dict) -> np.ndarray:
    """Each training frame's ``bank_k`` nearest frames by the lips (``mouths.mouth_keys`` weighted by ``keys``),
    ``bank_exclude`` frames away or more: the bank mouths it learns to start from."""
    from talkhead.avatar.mouths import mouth_keys, neighbours

    motion = np.concatenate([c["motion"] for c in d.clips])
    clip_of = np.repeat(np.arange(len(d.clips)), [len(c["motion"]) for c in d.clips])
    return neighbours(mouth_keys(d.crop_points, motion, d.side, **keys), cfg.bank_k, cfg.bank_exclude, clip_of)


def bridge_teacher(work: Path, d: AvatarData, cfg: AvatarTrainConfig, tcfg, progress: bool) -> Path:
    """The bank teacher tuned as the bridge samples it (``BridgeObjective``), from neighbours found as drawing finds
    its bank mouths (``mouths.mouth_keys``' own weights); ``work/teacher-bridge.safetensors``."""
    from dataclasses import replace

    from talkhead.latent.engine import load_engine
    from talkhead.latent.train import train_teacher

    path, init = work / "teacher-bridge.safetensors", work / "teacher-bank.safetensors"
    grid = load_engine(init).timesteps
    if not _done(path, cfg.bridge_steps):
        train_teacher(None, d.clips, work, replace(tcfg, steps=cfg.bridge_steps, lr=cfg.bridge_lr),
                      name="teacher-bridge", init=init, references=_neighbours(d, cfg, {}), timesteps=grid,
                      resume=(work / "teacher-bridge.state.pt").exists(), bridge=True, progress=progress,
                      move=None if cfg.bridge_move == "off" else _mover(d, cfg.bridge_move, load_engine(init)))
    _bridge(path, grid)
    return path


def _mover(d: AvatarData, how: str, engine):
    """Latents of training frames ``src`` moved to the mouths of training frames ``dst`` (``MouthFlow``), as drawing
    moves its start (``AvatarRenderer(move_start=...)``): ``latent``, the latents cell by cell; ``pixels``, the crops
    themselves, encoded again by ``engine`` (finer where the latent grid is 8x down)."""
    import torch

    from talkhead.avatar.flow import MouthFlow

    flow = MouthFlow(d.crop_points, d.side)
    points = flow.points(np.concatenate([c["motion"] for c in d.clips]))
    # Frame i of all the clips is clip_of[i]'s frame i - first[clip_of[i]] (not concatenated: minutes of crops).
    clip_of = np.repeat(np.arange(len(d.clips)), [len(c["frames"]) for c in d.clips])
    first = np.concatenate([[0], np.cumsum([len(c["frames"]) for c in d.clips])[:-1]])

    def move(z: torch.Tensor, src: torch.Tensor, dst: torch.Tensor) -> torch.Tensor:
        if how == "latent":
            return flow.warp_latent(z.float(), points[src], points[dst]).to(z.dtype)
        crops = np.stack([d.clips[clip_of[i]]["frames"][i - first[clip_of[i]]] for i in src.tolist()])
        moved = flow.warp(torch.from_numpy(crops).float(), points[src], points[dst])
        return engine.encode(moved.round().clamp(0, 255).to(torch.uint8).numpy()).to(z.dtype)

    return move


def _refiner_key(engine_files: list[Path], cfg: AvatarTrainConfig) -> str:
    """What the refiner's files depend on beyond the inputs key: the engine's weights (a stage whose steps were raised
    changes them) and the settings that choose the bank and the training pairs."""
    kept = {k: getattr(cfg, k) for k in ("bank_mb", "bank_jump", "bank_exclude", "base_seconds", "base_side", "seed")}
    h = hashlib.sha256(json.dumps(kept, sort_keys=True).encode())
    for f in engine_files:
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _refiner(work: Path, args: tuple, cfg: AvatarTrainConfig, key: str, progress: bool):
    """The refiner (``avatar.refine``), trained on the finished avatar's drawing of its own training frames, each from
    its nearest bank frame ``bank_exclude`` frames away or more; kept in ``work/refiner.safetensors``. The avatar
    without it is ``work/plain.avatar``, which ``train_avatar`` writes again with it, its bank not encoded twice. Both
    are made again when ``key`` (``_refiner_key``) is not the one they were made for."""
    from talkhead.avatar.file import load_avatar, save_avatar
    from talkhead.avatar.refine import train_refiner, training_pairs
    from talkhead.avatar.refiner import Refiner, refiner_from, refiner_tensors
    from talkhead.checkpoint import load_checkpoint, save_checkpoint

    path, plain, d = work / "refiner.safetensors", work / "plain.avatar", args[1]
    stamp = work / "refiner.json"
    if not stamp.exists() or json.loads(stamp.read_text())["key"] != key:  # another engine or bank: start again
        for f in (plain, path, work / "refiner.state.pt"):
            f.unlink(missing_ok=True)
        atomic_write(stamp, json.dumps({"key": key}).encode())
    if not plain.exists():
        save_avatar(plain, *args)
    if _done(path, cfg.refine_steps):
        tensors, meta = load_checkpoint(path)
        return refiner_from(tensors, meta["refiner"])
    drawn, guides, real = training_pairs(load_avatar(plain), d, cfg.bank_exclude, cfg.seed)
    net: Refiner = train_refiner(drawn, guides, real, d.paste, cfg.refine_steps, work, cfg.seed, progress=progress)
    save_checkpoint(path, refiner_tensors(net), {"refiner": {"width": net.width}, "train": {"step": cfg.refine_steps}})
    return net


def train_avatar(videos: list[str | Path], out: str | Path, cfg: AvatarTrainConfig = AvatarTrainConfig(),
                 progress: bool = True, log=print) -> dict:
    """Every stage, resuming any that a kill interrupted; writes ``out`` (the ``.avatar``) last, atomically."""
    from talkhead.latent.net import LatentConfig
    from talkhead.latent.train import LatentTrainConfig, distill_student, train_teacher
    from talkhead.latent.vae import load_vae

    videos, out = [Path(v) for v in videos], Path(out)
    for v in videos:
        if not v.is_file():
            raise InputError(f"no such video: {v}")
    work = out.with_name(out.name + ".work")
    work.mkdir(parents=True, exist_ok=True)
    key = _inputs_key(videos, cfg)
    stamp = work / "inputs.json"
    if stamp.exists() and json.loads(stamp.read_text())["key"] != key:
        raise InputError(f"{work} holds a run on other videos or settings; remove it or choose another --out")
    atomic_write(stamp, json.dumps({"key": key, "videos": [str(v) for v in videos]}).encode())
    clock = _Clock(work / "times.json")
    data_path = work / "data.npz"
    if not data_path.exists():
        _save_data(data_path, ingest(videos, cfg.data, progress=progress, cache=work))  # each video's track kept
    clock.lap("ingest_s")
    side = int(np.load(data_path)["side"])
    down = 2 ** len(vae_widths(side, cfg))
    d = load_data(data_path, down, cfg.data, cfg.map_detail, cfg.structure)
    renamed(d.clips, videos)
    log(f"{sum(len(c['frames']) for c in d.clips)} frames in {len(d.clips)} stretches, {d.side} px crops")
    vae_path = work / "vae.safetensors"
    if not _done(vae_path, cfg.vae_steps):
        train_vae(work, d, cfg, progress)
    clock.lap("vae_s")
    if cfg.critic > 0 and not _done(work / "decoder.safetensors", cfg.critic_steps):
        sharpen_decoder(work, d, cfg, progress)
    clock.lap("decoder_s")
    net = LatentConfig(latent=cfg.vae_latent, widths=cfg.widths, geometry=2 * cfg.map_detail ** 2,
                       context=cfg.vae_latent * (2 if cfg.structure else 1), residual=False)
    tcfg = LatentTrainConfig(steps=cfg.teacher_steps, batch=cfg.batch, lr=cfg.lr, seed=cfg.seed,
                             distill_steps=cfg.student_steps)
    grid = bridge_grid(cfg.bridge_t, cfg.sample_steps)
    if not _done(work / "teacher.safetensors", cfg.teacher_steps):
        train_teacher(load_vae(vae_path), d.clips, work, tcfg, net, resume=(work / "teacher.state.pt").exists(),
                      progress=progress, timesteps=grid)
    _bridge(work / "teacher.safetensors", grid)
    clock.lap("teacher_s")
    teacher = _bank_teacher(work, d, cfg, tcfg, grid, progress) if cfg.bank_steps else work / "teacher.safetensors"
    clock.lap("bank_s")
    if cfg.bank_steps and cfg.bridge_steps:
        teacher = bridge_teacher(work, d, cfg, tcfg, progress)
        clock.lap("bridge_s")
    for k in cfg.students:
        if not _done(work / f"student-{k}.safetensors", cfg.student_steps):
            distill_student(teacher, d.clips, work, k, tcfg,
                            resume=(work / f"student-{k}.state.pt").exists(), progress=progress)
        clock.lap(f"student{k}_s")
    chosen = work / f"student-{cfg.ship}.safetensors" if cfg.ship else teacher
    info = {"videos": [v.name for v in videos], "config": asdict(cfg), "report": d.report,
            "wall_s": clock.totals(), "engine": chosen.name}
    from talkhead.avatar.file import save_avatar, with_refiner
    from talkhead.latent.engine import load_engine

    engine = load_engine(chosen)
    if cfg.critic > 0:  # the sharpened decoder reads the same latents (its encoder was frozen)
        engine.vae.load_state_dict(load_vae(work / "decoder.safetensors").state_dict())
    bank = {"jump": cfg.bank_jump, "budget_mb": cfg.bank_mb} if cfg.bank_steps else None
    for c in d.clips:  # training's alone (0.6 GB for a phone's 2 min): saving needs the crops, not their contexts
        c.pop("context", None)
    args = (engine, d, cfg.base_seconds, info, {v.name: v for v in videos}, bank, cfg.base_side)
    if cfg.refine_steps and bank:
        decoder = [work / "decoder.safetensors"] if cfg.critic > 0 else []
        refiner = _refiner(work, args, cfg, _refiner_key([chosen, *decoder], cfg), progress)
        clock.lap("refiner_s")
        info["wall_s"] = clock.totals()
        with_refiner(work / "plain.avatar", out, refiner, info)
        (work / "plain.avatar").unlink()
    else:
        save_avatar(out, *args)
        info["wall_s"] = clock.totals()
    atomic_write(work / "train.json", json.dumps(info, indent=1, default=str).encode())
    return info
