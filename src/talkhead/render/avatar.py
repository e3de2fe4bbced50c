"""Avatars: a person's own frames, the lower face redrawn from motion by a latent engine learnt from their video.

An ``.avatar`` file (``talkhead avatar train``) is one safetensors file: a latent engine (the person's
VAE and a few-step student), the crop geometry (the paste and context masks, the reference crop, the
first face's landmarks) and a base: the steadiest stretch of the training video, as JPEG frames, each
with its map from crop pixels to frame pixels, its fitted motion and the points its masks are drawn on
(each frame's own jaw line with the mouth at rest: ``data.avatar.mask_points``).

Drawing a frame: the base frame's aligned crop with the lower face hidden is the context, the driving
motion's mouth channels (with the base frame's own head pose and eyes) give the mouth maps and the
motion conditioning, the engine samples the crop's latent from seeded noise, and the decoded crop is
warped back into the base frame through its feathered mask. Outside the mask the frame is the base
frame, pixel for pixel. The base loops forward and back, so it never jumps.

With a mouth bank (every training frame's latent), each frame starts from the person's own nearest
mouth, and gets back that bank frame's fine detail: what the VAE loses of it (the real crop minus the
decoded latent, stored as JPEG), averaged over frames so that it does not flicker. Its colour is matched to
the frame it is drawn on: shifted by what the decoding is off by just outside the hidden region.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from talkhead.checkpoint import NotACheckpoint, described, load_checkpoint, save_checkpoint
from talkhead.data.avatar import (AvatarData, AvatarDataConfig, context, extract, frame_masks, mask_points,
                                  mouth_maps_for)
from talkhead.data.mouths import MOUTH, MouthBank, mouth_keys
from talkhead.errors import InputError
from talkhead.render.avatar_bank import bank_tensors, check_jpegs, jpegs, scaled_base, steadiest, unjpeg
from talkhead.render.latent.engine import LatentEngine, engine_from, engine_tensors
from talkhead.render.paste import colour_ring, decode_window, paste_lower_face, pingpong

KIND = "talkhead-avatar"
VERSION = 2  # 2: masks per frame (``base.points``, ``data`` in the metadata). Without a mouth bank (``bank.*``)
# drawing starts from the reference.
# What the engine redraws from the driving motion; every other channel (head pose, eyes, brows) is the base frame's.
LOWER = MOUTH
# How much of the running average of the bank's detail each frame keeps, and its gain: averaging the detail
# of bank frames that change every few frames cancels part of it (detail against flicker). cap12 -> cap13, all
# 765 frames (2026-12-03), detail / flicker as ratios to the real video's, lower-face PSNR: memory 0.6 gain 1
# 0.66x 1.19x 28.90 dB; 0.7 gain 1 0.62x 1.14x; 0.6 gain 1.3 1.00x 1.27x 28.53 dB; 0.8 gain 1.3 0.84x 1.13x
# 28.63 dB; 0.7 gain 1.2 0.82x 1.17x 28.72 dB (targets: detail 0.8-1.25x, flicker <= 1.2x).
DETAIL_MEMORY = 0.7
DETAIL_GAIN = 1.2


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
    base_points: np.ndarray  # [B, 68, 2]: where each base frame's masks are drawn (``data.avatar.mask_points``)
    meta: dict
    bank: dict | None = None  # the mouth bank: latent [N, L, h, w] (normalised), motion [N, 58], ends [N], jump,
    # detail (JPEG bytes, offsets): each frame's real crop minus its decoded latent, and norms [N, K, G, 2]: the
    # decoder's group-norm statistics decoding it whole
    _views: tuple | None = field(default=None, repr=False, compare=False)  # base_views(), once

    def detail(self, i: int) -> np.ndarray:
        """Bank frame ``i``'s detail, float32 [S, S, 3]: what the VAE loses of the real crop."""
        return unjpeg(*self.bank["detail"], i).astype(np.float32) - 128

    @property
    def grid(self) -> int:
        return self.side // self.engine.vae.down

    def maps(self, motion: np.ndarray) -> torch.Tensor:
        return mouth_maps_for(self.crop_points, motion, self.side, self.grid)

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

    def views(self, frames: np.ndarray, affines: np.ndarray, points: np.ndarray) -> "Views":
        """What drawing needs of frames [B, H, W, 3]: crops, masks, context latents, the decoded window, colour rings."""
        crops = self.crops_of(frames, affines)
        paste, hidden = frame_masks(points, self.side, self.data_cfg)
        window = decode_window(paste.max(0), self.engine.vae.down)
        return Views(crops, self.contexts(crops, hidden), paste, hidden, window,
                     colour_ring(hidden, window, self.engine.vae.down))

    def base_views(self) -> "Views":
        """The base frames' ``views``, made once and shared by every renderer of this avatar (a 256 px avatar's
        take 6-7 s: a live session's start would wait for them each time)."""
        if self._views is None:
            self._views = self.views(self.base, self.base_affine, self.base_points)
        return self._views


class Views(NamedTuple):
    """Frames as drawing sees them (``Avatar.views``); ``take`` selects some of them."""

    crops: np.ndarray  # uint8 [B, S, S, 3]
    context: torch.Tensor  # [B, L, g, g]
    paste: np.ndarray  # float [B, S, S]
    hidden: np.ndarray  # bool [B, S, S]
    window: tuple[int, int, int, int]  # latent rows and columns decoded, for all of them
    ring: np.ndarray  # bool [B, S, S]

    def take(self, idx: np.ndarray) -> "Views":
        return Views(self.crops[idx], self.context[idx], self.paste[idx], self.hidden[idx], self.window, self.ring[idx])


def save_avatar(out: str | Path, engine: LatentEngine, data: AvatarData, base_seconds: float, info: dict,
                videos: dict[str, Path], bank: dict | None = None, base_side: int | None = None) -> None:
    """Write the ``.avatar`` (atomically): the engine, the geometry, the base frames read again from the video and,
    with ``bank`` ({"jump": ..., "budget_mb": ...}), the mouth bank (``data.mouths``). Base frames whose longer side
    is over ``base_side`` are made smaller (``scaled_base``)."""
    from talkhead.data.face_track import cut_frames

    ci, a, b = steadiest(data.clips, int(round(base_seconds * 25)))
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
    own = {k: asdict(v) if hasattr(v, "__dataclass_fields__") else v for k, v in own.items()}
    meta = {"kind": KIND, "version": VERSION, "side": data.side, "engine": own,
            "base": {"video": clip["video"], "frames": [int(clip["frame_index"][a]), int(clip["frame_index"][b - 1])]},
            "train": info, "bank": bank, "data": asdict(data.cfg)}
    save_checkpoint(out, tensors, meta)


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
                  base, f64["base.affine"], tensors["base.motion"].numpy(), f64["base.points"], meta, bank)


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
    odd = next((k for k, shape in want.items() if tuple(tensors[k].shape) != shape), None)
    if odd is not None:
        raise InputError(f"{path}: {odd} is {tuple(tensors[odd].shape)}, not {want[odd]}")
    return side, n


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
        bank = {"frames": n, "seconds": round(n / 25, 1), "stretches": int(a.bank["ends"].sum()),
                "mb": round(size / 1e6, 1)}
    return {"file": path.name, "file_mb": round(path.stat().st_size / 1e6, 1), "format": a.meta["version"],
            "crop_px": a.side, "engine": train.get("engine"), "steps": list(a.engine.timesteps),
            "base": {"frames": len(a.base), "seconds": round(len(a.base) / 25, 1),
                     "size": [int(a.base.shape[2]), int(a.base.shape[1])], "video": a.meta["base"]["video"],
                     "video_frames": a.meta["base"]["frames"]},
            "bank": bank, "videos": train.get("report", {}),
            "train_min": round(train.get("wall_s", {}).get("total_s", 0.0) / 60, 1)}


class AvatarRenderer:
    """Motion [T, 58] -> frames of the avatar's base (or of given frames: ``reenact``), the lower face redrawn."""

    def __init__(self, avatar: Avatar | str | Path, seed: int = 0, frames: np.ndarray | None = None,
                 affines: np.ndarray | None = None, motion: np.ndarray | None = None, points: np.ndarray | None = None,
                 detail: float | None = DETAIL_MEMORY, detail_gain: float = DETAIL_GAIN, window: bool = False,
                 colour: bool = True) -> None:
        """Given ``frames`` (an array, or frames read forward as they are drawn: ``data.face_track.ForwardFrames``),
        their crop maps ``affines``, fitted ``motion`` and mask points ``points`` (``Avatar.mask_points``) replace
        the avatar's base (``reenact``). ``detail``: the bank frames' detail
        is added back, averaged over frames with this memory (the share of the previous average kept each
        frame; 0: each frame's own), times ``detail_gain``; None: not added. ``window``: decode only the
        latent cells under the paste mask (``decode_window``), not the whole crop (1.8x faster at 256 px, 0.3 dB
        lower on cap12 -> cap13: what ``serve`` uses, where time is the limit), the decoder's group norms given
        the chosen bank frame's whole statistics. ``colour``: shift each drawn
        crop's colour by what its decoding is off by on the frame's own pixels just outside the hidden region
        (``colour_ring``)."""
        self.avatar = avatar if isinstance(avatar, Avatar) else load_avatar(avatar)
        self.window, self.colour = window, colour
        if detail is not None and not 0.0 <= detail < 1.0:
            raise InputError(f"the detail memory must be in [0, 1), not {detail}")
        if not 0.0 <= detail_gain <= 3.0:
            raise InputError(f"the detail gain must be in [0, 3], not {detail_gain}")
        self.gain = detail_gain
        self.memory = detail if self.avatar.bank is not None and "detail" in self.avatar.bank else None
        self._detail: np.ndarray | None = None
        a = self.avatar
        self.base = a.base if frames is None else frames
        self.affine = a.base_affine if affines is None else affines
        self.base_motion = a.base_motion if motion is None else motion
        self.points = a.base_points if points is None else points
        self.loop = frames is None  # the avatar's own base loops; given frames are followed one for one
        self.ref = a.engine.encode(a.reference[None])
        self.noise = torch.randn(self.ref.shape, generator=torch.Generator().manual_seed(seed))
        b = a.bank
        self.bank = None if b is None else MouthBank(mouth_keys(a.crop_points, b["motion"], a.side), b["ends"], b["jump"])
        self._views = a.base_views() if self.loop else None  # the base's own crops, masks and contexts
        self._index = 0
        h, w = self.base.shape[1:3]
        self.size = (w, h)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return tuple(self.base.shape[1:])

    def _base_index(self, n: int) -> np.ndarray:
        i = self._index + np.arange(n)
        self._index += n
        return pingpong(i, len(self.base)) if self.loop else np.minimum(i, len(self.base) - 1)

    def crops(self, motion: np.ndarray, idx: np.ndarray, views: Views | None = None) -> np.ndarray:
        """The engine's crops uint8 [B, S, S, 3] for driving motion [B, 58] over base frames ``idx`` (their
        ``views``, if made already)."""
        a = self.avatar
        drive = np.array(self.base_motion[idx], np.float32, copy=True)
        drive[:, LOWER] = np.asarray(motion, np.float32)[:, LOWER]
        v = self.views(idx) if views is None else views
        # With a bank, each frame starts from the person's own nearest mouth (the engine's bridge noises it).
        chosen = None if self.bank is None else self.bank.choose(mouth_keys(a.crop_points, drive, a.side))
        ref = self.ref if chosen is None else a.bank["latent"][chosen]
        z = a.engine.sample(ref, torch.from_numpy(drive), self.noise.expand(len(idx), -1, -1, -1),
                            geometry=a.maps(drive), context=v.context)
        crops = self._decode(z, chosen, v.window).astype(np.float32)
        if self.colour:  # the frame's own colour: the offset its decoding shows just outside the mask
            for k, ring in enumerate(v.ring):
                crops[k] += (v.crops[k][ring].astype(np.float32) - crops[k][ring]).mean(0)
        if self.memory is not None:
            crops = self._add_detail(crops, chosen)
        return np.clip(np.round(crops), 0, 255).astype(np.uint8)

    def views(self, idx: np.ndarray) -> Views:
        """The base frames ``idx`` as drawing sees them (the avatar's own base: made once)."""
        if self._views is not None:
            return self._views.take(idx)
        return self.avatar.views(self.base[idx], self.affine[idx], self.points[idx])

    def _decode(self, z: torch.Tensor, chosen: np.ndarray | None, window: tuple[int, int, int, int]) -> np.ndarray:
        a = self.avatar
        if not self.window:
            return a.engine.decode(z)
        # Outside the window the paste mask is 0: those pixels are never seen.
        (r0, r1, c0, c1), d = window, a.engine.vae.down
        crops = np.zeros((len(z), a.side, a.side, 3), np.uint8)
        norms = None if chosen is None or "norms" not in a.bank else a.bank["norms"][chosen]
        crops[:, r0 * d:r1 * d, c0 * d:c1 * d] = a.engine.decode(z[:, :, r0:r1, c0:c1], norms)
        return crops

    def _add_detail(self, crops: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        """Crops (float) with their bank frames' detail added, as a running average: a bank frame changes every
        few frames, and its detail (with the camera's noise) would otherwise flicker (1.8x the real video's)."""
        for k, i in enumerate(chosen):
            d = self.avatar.detail(int(i))
            self._detail = d if self._detail is None else self.memory * self._detail + (1 - self.memory) * d
            crops[k] += self.gain * self._detail
        return crops

    def frames(self, motion: np.ndarray, batch: int = 32) -> Iterator[np.ndarray]:
        for i in range(0, len(motion), batch):
            m = motion[i:i + batch]
            idx = self._base_index(len(m))
            v = self.views(idx)
            for k, (j, crop) in enumerate(zip(idx, self.crops(m, idx, v))):
                yield paste_lower_face(self.base[j], crop, self.affine[j], v.paste[k])
