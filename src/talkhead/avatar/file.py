"""The ``.avatar`` file: a person's latent engine, crop geometry and base frames, saved, checked and loaded.

An ``.avatar`` file (``talkhead avatar train``) is one safetensors file: a latent engine (the person's
VAE and a few-step student), the crop geometry (the paste and context masks, the reference crop, the
first face's landmarks) and a base: the steadiest stretch of the training video, as JPEG frames, each
with its map from crop pixels to frame pixels, its fitted motion and the points its masks are drawn on
(each frame's own jaw line with the mouth at rest: ``avatar.data.mask_points``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from talkhead.avatar.bank import bank_tensors, check_jpegs, jpegs, scaled_base, steadiest, unjpeg
from talkhead.avatar.data import (
    AvatarData,
    AvatarDataConfig,
    context,
    extract,
    frame_masks,
    mask_points,
    mouth_maps_for,
)
from talkhead.avatar.mouths import MOUTH
from talkhead.checkpoint import NotACheckpoint, described, load_checkpoint, save_checkpoint
from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.face.paste import colour_ring, decode_window
from talkhead.latent.engine import LatentEngine, engine_from, engine_tensors

KIND = "talkhead-avatar"
VERSION = 2  # 2: masks per frame (``base.points``, ``data`` in the metadata). Without a mouth bank (``bank.*``)
# drawing starts from the reference.
# What the engine redraws from the driving motion; every other channel (head pose, eyes, brows) is the base frame's.
LOWER = MOUTH
# How a drawn crop's colour is matched to its frame (``Avatar.tones``). "vae" since 2026-12-07: on the lecturer,
# EDTalk and cap12 -> cap13 +1.06, +0.19, +0.24 dB over "frame", the CNN anchor +1.32 (docs/avatar.md, "The colour
# matched to what the VAE draws").
COLOURS = ("vae", "frame", "off")
# The base frames' context latents and colours (``Views.context``, ``.tone``) are stored in the file at training: made
# at load they kept a 256 px avatar's first frame waiting 10 s (every base frame encoded, and through the VAE again).
# ``VIEWS`` names how they are made: raise it when that changes, and files made the old way have them made at load.
VIEWS = 1


def check_colour(colour: str) -> str:
    """``colour`` if it is one of ``COLOURS``; a ValueError naming them if not."""
    if colour not in COLOURS:
        raise ValueError(f"colour must be one of {COLOURS}, not {colour!r}")
    return colour


@dataclass
class Avatar:
    """A loaded ``.avatar``: engine, crop geometry and base frames."""

    engine: LatentEngine
    side: int
    reference: np.ndarray  # uint8 [S, S, 3]
    paste: np.ndarray  # float [S, S], the first face's (each frame has its own: ``views``)
    hidden: np.ndarray  # bool [S, S]
    crop_points: np.ndarray  # [68, 2]
    ref_points: np.ndarray  # [68, 2], the first face in its frame's pixels
    crop_to_ref: np.ndarray  # [2, 3]
    base: np.ndarray  # uint8 [B, H, W, 3]
    base_affine: np.ndarray  # [B, 2, 3]
    base_motion: np.ndarray  # [B, 58]
    base_points: np.ndarray  # [B, 68, 2]: where each base frame's masks are drawn (``avatar.data.mask_points``)
    meta: dict
    bank: dict | None = None  # the mouth bank: latent [N, L, h, w] (normalised), motion [N, 58], ends [N], jump,
    # detail (JPEG bytes, offsets): each frame's real crop minus its decoded latent, and norms [N, K, G, 2]: the
    # decoder's group-norm statistics decoding it whole
    refiner: object = None  # ``avatar.refine.Refiner`` (``avatar train --refine-steps``), or None
    stored: tuple | None = None  # (colour, context, tone) of the base frames, as the file stores them (``VIEWS``)
    _views: dict = field(default_factory=dict, repr=False, compare=False)  # base_views(), once for each colour
    _lip: tuple | None = field(default=None, repr=False, compare=False)  # lip_range(), once
    _warp: object = field(default=None, repr=False, compare=False)  # structure()'s warp renderer, once

    def detail(self, i: int) -> np.ndarray:
        """Bank frame ``i``'s detail, float32 [S, S, 3]: what the VAE loses of the real crop."""
        return unjpeg(*self.bank["detail"], i).astype(np.float32) - 128

    def lip_range(self) -> tuple[float, float]:
        """(mean, spread) of the lip gap the person's filmed frames draw on the standard face (their fitted
        motion: the mouth bank's, every frame learnt from, else the base's): the range the engine learnt to
        draw, which speech-driven motion is put in (``motion.model.in_person_range``)."""
        from talkhead.motion.lipnet import drawn_gap

        if self._lip is None:  # once per loaded avatar: every live session's renderer asks for it
            motion = self.bank["motion"] if self.bank is not None else self.base_motion
            gap = drawn_gap(torch.from_numpy(np.asarray(motion, np.float32))).numpy().astype(np.float64)
            self._lip = (float(gap.mean()), max(float(gap.std()), 1e-4))  # a still base: a spread, not a 0
        return self._lip

    @property
    def grid(self) -> int:
        return self.side // self.engine.vae.down

    @property
    def structured(self) -> bool:
        """Whether the engine also sees the reference warped by the motion (its context is twice the latent)."""
        return self.engine.cfg.context > self.engine.cfg.latent

    def structure(self, motion: np.ndarray) -> torch.Tensor:
        """The latents [B, L, g, g] of the reference crop warped by ``motion`` (``avatar.data.structure_crops``)."""
        from talkhead.avatar.data import structure_crops, structure_renderer

        if self._warp is None:
            self._warp = structure_renderer(self.reference)
        return self.engine.encode(structure_crops(self._warp, motion))

    def maps(self, motion: np.ndarray) -> torch.Tensor:
        from talkhead.face.framing import map_detail

        return mouth_maps_for(self.crop_points, motion, self.side, self.grid, map_detail(self.engine.cfg.geometry))

    def crops_of(self, frames: np.ndarray, affines: np.ndarray) -> np.ndarray:
        """The aligned crops uint8 [B, S, S, 3] of frames [B, H, W, 3] seen through their crop maps [B, 2, 3]."""
        return np.stack([extract(f, a, self.side) for f, a in zip(frames, affines)])

    @property
    def data_cfg(self) -> AvatarDataConfig:
        return AvatarDataConfig(**self.meta["data"])

    def mask_points(self, points: np.ndarray, motion: np.ndarray) -> np.ndarray:
        """Where the masks of frames are drawn, from their face points [B, 68, 2] in crop pixels and fitted motion."""
        return mask_points(self.crop_points, points, motion, self.data_cfg)

    def contexts(self, crops: np.ndarray, hidden: np.ndarray) -> torch.Tensor:
        """Context latents of aligned crops [B, S, S, 3]: the lower face (``hidden`` [B, S, S]) hidden."""
        return self.engine.encode(context(crops, hidden))

    def views(self, frames: np.ndarray, affines: np.ndarray, points: np.ndarray, colour: str = "vae",
              made: tuple | None = None) -> "Views":
        """What drawing needs of frames [B, H, W, 3]: crops, masks, context latents, the decoded window, colour rings
        and the colour matched on them (``tones``); ``made``: (context, tone) already made for these frames, and then
        the crops (None) only for a refiner, the one drawing that reads them (0.6 s of a 256 px avatar's start)."""
        crops = self.crops_of(frames, affines) if made is None or self.refiner is not None else None
        paste, hidden = frame_masks(points, self.side, self.data_cfg)
        window = decode_window(paste.max(0), self.engine.vae.down)
        ring = colour_ring(hidden, window, self.engine.vae.down)
        context, tone = made if made is not None else (self.contexts(crops, hidden), self.tones(crops, ring, colour))
        return Views(crops, context, paste, hidden, window, ring, tone)

    def tones(self, crops: np.ndarray, ring: np.ndarray, colour: str = "vae") -> np.ndarray:
        """The colour [B, 3] each drawn crop is shifted to on its ring (``colour_ring``), by ``colour`` (``COLOURS``):
        "vae", the frame's crop through the avatar's VAE, what a drawing that is right there decodes to; "frame",
        the frame's own pixels (until 2026-12-07), which also put onto the face what the VAE cannot draw beside it (a
        saturated blue backdrop: 28 levels of blue on the CNN anchor's face, docs/avatar.md); "off": zeros, unused."""
        if check_colour(colour) == "off":
            return np.zeros((len(crops), 3), np.float32)
        seen = crops if colour == "frame" else np.concatenate(
            [self.engine.decode(self.engine.encode(crops[i:i + 32])) for i in range(0, len(crops), 32)])
        return np.stack([s[r].astype(np.float32).mean(0) for s, r in zip(seen, ring)])

    def base_views(self, colour: str = "vae") -> "Views":
        """The base frames' ``views``, made once and shared by every renderer of this avatar (a 256 px avatar's
        take 6-7 s: a live session's start would wait for them each time), from what the file stores if it stores
        them for ``colour`` (0.3 s then)."""
        if colour not in self._views:
            made = self.stored[1:] if self.stored is not None and self.stored[0] == colour else None
            self._views[colour] = self.views(self.base, self.base_affine, self.base_points, colour, made)
        return self._views[colour]


class Views(NamedTuple):
    """Frames as drawing sees them (``Avatar.views``); ``take`` selects some of them."""

    crops: np.ndarray | None  # uint8 [B, S, S, 3]; None where nothing drawing reads needs them (``Avatar.views``)
    context: torch.Tensor  # [B, L, g, g]
    paste: np.ndarray  # float [B, S, S]
    hidden: np.ndarray  # bool [B, S, S]
    window: tuple[int, int, int, int]  # latent rows and columns decoded, for all of them
    ring: np.ndarray  # bool [B, S, S]
    tone: np.ndarray  # float [B, 3]: the colour each drawn crop is matched to on its ring (``Avatar.tones``)

    def take(self, idx: np.ndarray) -> "Views":
        crops = None if self.crops is None else self.crops[idx]
        return Views(crops, self.context[idx], self.paste[idx], self.hidden[idx], self.window, self.ring[idx],
                     self.tone[idx])


def save_avatar(out: str | Path, engine: LatentEngine, data: AvatarData, base_seconds: float, info: dict,
                videos: dict[str, Path], bank: dict | None = None, base_side: int | None = None,
                refiner=None) -> None:
    """Write the ``.avatar`` (atomically): the engine, the geometry, the base frames read again from the video and,
    with ``bank`` ({"jump": ..., "budget_mb": ...}), the mouth bank (``avatar.mouths``) and the ``refiner``
    (``avatar.refine``) if given. Base frames whose longer side is over ``base_side`` are made smaller
    (``scaled_base``)."""
    from talkhead.face.track import cut_frames

    ci, a, b = steadiest(data.clips, int(round(base_seconds * FPS)))
    clip = data.clips[ci]
    # Read again, each frame made as small as it will be drawn as it goes by: 6 s of 4K would be 1.8 GB whole.
    affine = clip["affine"][a:b]
    scaled = cut_frames(videos[clip["video"]], clip["frame_index"][a:b].tolist(),
                        lambda j, f: scaled_base(f[None], affine[j:j + 1], base_side), 25)
    frames, affine = np.concatenate([f for f, _ in scaled]), np.concatenate([m for _, m in scaled])
    base = jpegs(list(frames), 95)
    tensors, own = engine_tensors(engine)
    tensors = {f"engine.{k}": v for k, v in tensors.items()}
    tensors.update({
        "base.jpeg": base["jpeg"], "base.offsets": base["offsets"],
        "base.affine": torch.from_numpy(affine.astype(np.float32)),
        "base.motion": torch.from_numpy(clip["motion"][a:b].astype(np.float32)),
        "base.points": torch.from_numpy(clip["points"][a:b].astype(np.float32)),
        "reference": torch.from_numpy(np.ascontiguousarray(data.reference)),
        "paste": torch.from_numpy(data.paste.astype(np.float32)),
        "hidden": torch.from_numpy(data.hidden.astype(np.uint8)),
        "crop_points": torch.from_numpy(data.crop_points.astype(np.float32)),
        "ref_points": torch.from_numpy(data.ref_points.astype(np.float32)),
        "crop_to_ref": torch.from_numpy(data.crop_to_ref.astype(np.float32)),
    })
    if bank is not None:
        tensors.update(bank_tensors(engine, data, bank.get("budget_mb")))
    if refiner is not None:
        from talkhead.avatar.refiner import refiner_tensors

        tensors.update(refiner_tensors(refiner))
    own = {k: asdict(v) if hasattr(v, "__dataclass_fields__") else v for k, v in own.items()}
    meta = {"kind": KIND, "version": VERSION, "side": data.side, "engine": own,
            "base": {"video": clip["video"], "frames": [int(clip["frame_index"][a]), int(clip["frame_index"][b - 1])]},
            "train": info, "bank": bank, "data": asdict(data.cfg),
            "refiner": None if refiner is None else {"width": refiner.width}}
    save_checkpoint(out, tensors, with_base_views(tensors, meta, Path(out)))


def with_base_views(tensors: dict, meta: dict, path: Path, colour: str = COLOURS[0]) -> dict:
    """The base frames' context latents and ``colour``'s tones added to an avatar file's ``tensors`` (as ``load_avatar``
    would make them: from the JPEG base), and its ``meta`` with what made them."""
    import json

    with torch.no_grad():  # built from the metadata as the file will hold it (JSON: lists, not tuples)
        views = _avatar_from(tensors, json.loads(json.dumps(meta)), path).base_views(colour)
    tensors.update({"base.context": views.context.half(), "base.tone": torch.from_numpy(views.tone.astype(np.float32))})
    return {**meta, "base": {**meta["base"], "views": {"colour": colour, "made": VIEWS}}}


def update_avatar(src: str | Path, out: str | Path) -> bool:
    """``src`` written again as ``out`` (``avatar update``) with its base frames' views stored as training stores them
    (``with_base_views``), every other tensor as stored; False, nothing written, where ``src`` stores them already."""
    from safetensors import safe_open

    a = load_avatar(src)  # a file that is not an avatar is refused here, in one line
    if a.stored is not None:
        return False
    with safe_open(str(src), framework="pt") as f:  # as stored (the bank in half precision), not as loaded
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    meta = {k: v for k, v in a.meta.items() if k != "format"}
    save_checkpoint(out, tensors, with_base_views(tensors, meta, Path(out)))
    return True


def with_refiner(plain: str | Path, out: str | Path, refiner, train: dict) -> None:
    """The avatar file ``plain`` (``save_avatar``'s, without a refiner) written again as ``out`` with ``refiner`` and
    ``train`` as its training record: its bank is not encoded nor its base frames read again."""
    from talkhead.avatar.refiner import refiner_tensors

    tensors, meta = load_checkpoint(plain)
    tensors.update(refiner_tensors(refiner))
    save_checkpoint(out, tensors, {**meta, "train": train, "refiner": {"width": refiner.width}})


def load_avatar(path: str | Path) -> Avatar:
    """Rebuild an ``Avatar`` from its file; a file of another kind or version is a named error."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such avatar file: {path}")
    try:
        tensors, meta = load_checkpoint(path)
    except NotACheckpoint:  # a damaged checkpoint (NaN weights, ...) says what is wrong instead
        raise InputError(f"{path} is not an avatar file (talkhead avatar train makes them)") from None
    if meta.get("kind") != KIND:
        raise InputError(f"{path} is not an avatar file (talkhead avatar train makes them)")
    if meta.get("version") != VERSION:
        raise InputError(f"{path} was made by another version of talkhead (avatar format {meta.get('version')}; "
                         f"this one reads {VERSION}): train it again")
    with described(path, "avatar file"):
        return _avatar_from(tensors, meta, path)


def _avatar_from(tensors: dict, meta: dict, path: Path) -> Avatar:
    """``load_avatar``'s work, every size the file gives checked before anything is allocated or decoded."""
    side, n = _check_sizes(tensors, meta, path)
    try:
        engine = engine_from({k[7:]: v for k, v in tensors.items() if k.startswith("engine.")}, meta["engine"])
    except InputError as e:
        raise InputError(f"{path}: {e}") from None
    if side % engine.vae.down or tensors.get("bank.latent", torch.zeros(1, 1, side // engine.vae.down)).shape[-1] \
            != side // engine.vae.down:
        raise InputError(f"{path}: its {side} px crops do not fit its engine")
    raw, off = tensors["base.jpeg"].numpy(), tensors["base.offsets"].numpy()
    base = np.stack([unjpeg(raw, off, i) for i in range(len(off) - 1)])
    f64 = {k: tensors[k].numpy().astype(np.float64) for k in ("crop_points", "ref_points", "crop_to_ref", "base.affine",
                                                                "base.points")}
    bank = None
    if "bank.latent" in tensors:
        bank = {"latent": tensors["bank.latent"].float(), "motion": tensors["bank.motion"].numpy(),
                "ends": tensors["bank.ends"].numpy().astype(bool), "jump": float(meta["bank"]["jump"])}
        if "bank.detail_jpeg" in tensors:  # decoded frame by frame as drawing picks them
            bank["detail"] = (tensors["bank.detail_jpeg"].numpy(), tensors["bank.detail_offsets"].numpy())
        if "bank.norms" in tensors:
            bank["norms"] = tensors["bank.norms"].float()
    return Avatar(engine, side, tensors["reference"].numpy(), tensors["paste"].numpy(),
                  tensors["hidden"].numpy().astype(bool), f64["crop_points"], f64["ref_points"], f64["crop_to_ref"],
                  base, f64["base.affine"], tensors["base.motion"].numpy(), f64["base.points"], meta, bank,
                  _refiner(tensors, meta, path), _stored_views(tensors, meta, path, engine))


def _stored_views(tensors: dict, meta: dict, path: Path, engine: LatentEngine) -> tuple | None:
    """(colour, context, tone) of the base frames as the file stores them (``with_base_views``), or None where it
    stores none or made them another way (made again at load); in shapes that do not fit, a named error."""
    made = meta["base"].get("views")
    if "base.context" not in tensors or not isinstance(made, dict) or made.get("made") != VIEWS \
            or made.get("colour") not in COLOURS:
        return None
    n, g = len(tensors["base.offsets"]) - 1, meta["side"] // engine.vae.down
    _check_shapes(tensors, {"base.context": (n, engine.cfg.latent, g, g), "base.tone": (n, 3)}, path)
    return made["colour"], tensors["base.context"].float(), tensors["base.tone"].numpy().astype(np.float32)


def _refiner(tensors: dict, meta: dict, path: Path):
    """The file's refiner, or None; one whose tensors are not what its width makes is a named error."""
    from talkhead.avatar.refiner import refiner_from

    want = meta.get("refiner")
    if want is not None and (not isinstance(want, dict) or not isinstance(want.get("width"), int)
                             or not 1 <= want["width"] <= 256 or "bank.latent" not in tensors):
        raise InputError(f"{path}: its refiner's settings are not ones talkhead writes")
    try:
        return refiner_from(tensors, want)
    except (RuntimeError, ValueError):
        raise InputError(f"{path}: its refiner's weights do not fit its width ({want['width']})") from None


MAX_SIDE, MAX_BASE, MAX_BANK = 1024, 3000, 100_000  # crop px, base frames (2 min), bank frames (over an hour)
MAX_BASE_PIXELS = 300_000_000


def _check_sizes(tensors: dict, meta: dict, path: Path) -> tuple[int, int]:
    """(crop side, base frames) of an avatar file whose tensors all have the shapes they must: one line
    naming what is wrong otherwise."""
    side = meta.get("side")
    if not isinstance(side, int) or not 16 <= side <= MAX_SIDE:
        raise InputError(f"{path}: crop side {str(side)[:16]} (16..{MAX_SIDE} px)")
    n, pixels = check_jpegs(tensors["base.jpeg"].numpy(), tensors["base.offsets"].numpy(), MAX_BASE, 8192,
                            f"{path} base")
    if pixels > MAX_BASE_PIXELS:  # decoded whole when loaded: 300 M pixels are 0.9 GB
        raise InputError(f"{path}: its base frames decode to {pixels / 1e6:.0f} M pixels (at most "
                         f"{MAX_BASE_PIXELS / 1e6:.0f} M: train it with a smaller --base-side or --base-seconds)")
    want = {"reference": (side, side, 3), "paste": (side, side), "hidden": (side, side), "crop_points": (68, 2),
            "ref_points": (68, 2), "crop_to_ref": (2, 3), "base.affine": (n, 2, 3), "base.motion": (n, 58),
            "base.points": (n, 68, 2)}
    if "bank.latent" in tensors:
        m = len(tensors["bank.latent"])
        want.update({"bank.motion": (m, 58), "bank.ends": (m,)})
        if not 1 <= m <= MAX_BANK or tensors["bank.latent"].ndim != 4:
            raise InputError(f"{path}: a mouth bank of {m} frames (1..{MAX_BANK})")
        if "bank.detail_jpeg" in tensors and check_jpegs(tensors["bank.detail_jpeg"].numpy(),
                                                         tensors["bank.detail_offsets"].numpy(), m, side,
                                                         f"{path} bank detail")[0] != m:
            raise InputError(f"{path}: its bank's detail pictures are not one per bank frame")
    _check_shapes(tensors, want, path)
    return side, n


def _check_shapes(tensors: dict, want: dict, path: Path) -> None:
    """A named error for the first tensor whose shape is not ``want``'s (a missing one: a KeyError, ``described``)."""
    odd = next((k for k, shape in want.items() if tuple(tensors[k].shape) != shape), None)
    if odd is not None:
        raise InputError(f"{path}: {odd} is {tuple(tensors[odd].shape)}, not {want[odd]}")


def describe_avatar(path: str | Path) -> dict:
    """What an ``.avatar`` holds (``talkhead avatar info``): its engine, base, mouth bank, the videos it learnt
    from (frames kept and lost) and the training's wall time."""
    a, path = load_avatar(path), Path(path)
    train = a.meta.get("train", {})
    bank = None
    if a.bank is not None:
        n = len(a.bank["motion"])
        size = a.bank["latent"].numel() * 2 + a.bank["motion"].nbytes + (a.bank["detail"][0].nbytes
                                                                         if "detail" in a.bank else 0)
        bank = {"frames": n, "seconds": round(n / FPS, 1), "stretches": int(a.bank["ends"].sum()),
                "mb": round(size / 1e6, 1)}
    return {"file": path.name, "file_mb": round(path.stat().st_size / 1e6, 1), "format": a.meta["version"],
            "crop_px": a.side, "engine": train.get("engine"), "steps": list(a.engine.timesteps),
            "base": {"frames": len(a.base), "seconds": round(len(a.base) / FPS, 1),
                     "size": [int(a.base.shape[2]), int(a.base.shape[1])], "video": a.meta["base"]["video"],
                     "video_frames": a.meta["base"]["frames"],
                     "views_stored": None if a.stored is None else a.stored[0]},  # None: made at each load
            "bank": bank, "refiner": None if a.refiner is None else {"width": a.refiner.width},
            "videos": train.get("report", {}),
            "train_min": round(train.get("wall_s", {}).get("total_s", 0.0) / 60, 1)}
