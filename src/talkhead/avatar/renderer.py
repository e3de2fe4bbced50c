"""The avatar renderer: a person's own frames, the lower face redrawn from motion by their latent engine.

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
from pathlib import Path

import numpy as np
import torch

from talkhead.avatar.file import LOWER, Avatar, Views, check_colour, load_avatar
from talkhead.avatar.mouths import MouthBank, beyond, blend_weights, mouth_keys
from talkhead.config import AVATAR_MOUTHS
from talkhead.errors import InputError
from talkhead.face.paste import paste_lower_face, pingpong

# How much of the running average of the bank's detail each frame keeps, its gain, and how many bank mouths nearest
# the drawn one it is blended from: averaging the detail of bank frames that change every few frames cancels part of
# it (detail against flicker), and smears lip edges of different mouths into each other. Until 2026-12-07 the chosen
# frame's alone, memory 0.7, gain 1.2 (chosen on cap12, 2026-12-03). Blended from the 4 nearest mouths, the detail
# changes as the mouth does, not when the bank jumps, and can be averaged less: re-enacting the lecturer / EDTalk /
# cap12, lip r 0.798 / 0.689 / 0.974 -> 0.871 / 0.656 / 0.971, PSNR +0.02 / +0.46 / -0.07 dB, cap12's detail 0.84 ->
# 0.90x and flicker 1.10 -> 1.14x (targets 0.8-1.25x, <= 1.2x; docs/avatar.md, 2026-12-07 afternoon).
DETAIL_MEMORY = 0.5
DETAIL_GAIN = 1.3
DETAIL_BLEND = 4
MOUTHS = AVATAR_MOUTHS  # the filmed mouth alone takes ``carry``: this share of each frame is the one before, moved


def running(average: np.ndarray | torch.Tensor | None, x: np.ndarray | torch.Tensor,
            memory: float) -> np.ndarray | torch.Tensor:
    """A running average's next value: ``memory`` of the last one kept, ``x`` the first (an array or a tensor)."""
    return x if average is None else memory * average + (1 - memory) * x


def _keep_latest(store: dict, key: int, value, most: int = 64) -> None:
    """``store[key] = value``, the oldest entry dropped past ``most``: per-bank-frame work kept for the frames the
    bank plays next (it plays forward, and comes back to the same mouths)."""
    if len(store) >= most:
        store.pop(next(iter(store)))
    store[key] = value


class AvatarRenderer:
    """Motion [T, 58] -> frames of the avatar's base (or of given frames: ``reenact``), the lower face redrawn."""

    def __init__(self, avatar: Avatar | str | Path, seed: int = 0, frames: np.ndarray | None = None,
                 affines: np.ndarray | None = None, motion: np.ndarray | None = None, points: np.ndarray | None = None,
                 detail: float | None = DETAIL_MEMORY, detail_gain: float = DETAIL_GAIN, window: bool = False,
                 colour: str = "vae", flow: bool = False, move_start: bool = False, start: int | None = None,
                 start_memory: float | None = None, carry: float = 0.0, refine: bool = True, mouth: str = "engine",
                 path: float | None = None, blend: int = 1, move_pixels: bool = False,
                 detail_blend: int = DETAIL_BLEND, detail_reach: float | None = None) -> None:
        """Given ``frames`` (an array, or frames read forward as they are drawn: ``face.track.ForwardFrames``),
        their crop maps ``affines``, fitted ``motion`` and mask points ``points`` (``Avatar.mask_points``) replace
        the avatar's base (``reenact``). ``detail``: the bank frames' detail is added back, averaged over frames with
        this memory (the share of the previous average kept each frame; 0: each frame's own), times ``detail_gain``;
        None: not added. ``window``: decode only the latent cells under the paste mask (``decode_window``), not the
        whole crop (1.8x faster at 256 px, 0.3 dB lower on cap12 -> cap13: what ``serve`` uses, where time is the
        limit), the decoder's group norms given the chosen bank frame's whole statistics. ``colour``: to what each drawn
        crop's colour is matched just outside the hidden region (``Avatar.tones``). ``flow``: the bank frames' detail
        is averaged at one mouth shape and moved to the drawn mouth's shape (``avatar.flow.MouthFlow``), so that it
        follows the motion's lips, not the bank frames'.
        ``move_start``: the bank's mouth the bridge starts from is moved to the drawn mouth's shape too
        (``MouthFlow.warp_latent``); ``start``: the bridge's first timestep (the engine's own: 800), which sets how
        much of that start shows; ``start_memory``: the moved start is averaged over frames with this memory at the
        bank's mean mouth before it is moved to the drawn one (as the detail is); ``carry``: this share of each frame's
        start is the frame before it as drawn, moved to this frame's mouth (frames are then sampled one at a time).
        Both steady the moved mouth; the carry costs its lips least. The moves are off by default: the lips follow
        the motion better, the mouth shimmers (docs/avatar.md). ``refine``: use the avatar's refiner if it has one
        (``avatar.refiner``; the bank's detail is then not added). ``mouth``: one of ``MOUTHS`` (``_filmed``).
        ``path``: bank frames chosen along the batch's least-cost path, a jump costing this (``MouthBank.path``).
        ``blend`` / ``detail_blend``: the filmed mouth / the detail is this many nearest bank mouths' weighted
        (``mouths.blend_weights``). ``move_pixels``: the start moved in pixels (``AvatarTrainConfig.bridge_move``)."""
        self.avatar = avatar if isinstance(avatar, Avatar) else load_avatar(avatar)
        self.window, self.colour = window, check_colour(colour)
        self._detailing(detail, detail_gain, refine, detail_blend, detail_reach)
        self._moving(flow, move_start, start, start_memory, carry, mouth, blend, move_pixels)
        a = self.avatar
        self.base = a.base if frames is None else frames
        self.affine = a.base_affine if affines is None else affines
        self.base_motion = a.base_motion if motion is None else motion
        self.points = a.base_points if points is None else points
        self.loop = frames is None  # the avatar's own base loops; given frames are followed one for one
        self.ref = a.engine.encode(a.reference[None])
        self.noise = torch.randn(self.ref.shape, generator=torch.Generator().manual_seed(seed))
        b = a.bank
        jump = None if b is None else b["jump"] if path is None else path
        self.bank = None if b is None else MouthBank(self.keys(b["motion"]), b["ends"], jump)
        self.path = path is not None and b is not None
        self._views = a.base_views(colour) if self.loop else None  # the base's own crops, masks and contexts
        self._index = 0
        # Speech-driven motion opens the mouth in the person's own range (``pipeline.stream``); a re-enacted
        # video's fitted motion is already theirs.
        self.lip_range = a.lip_range() if self.loop else None
        self.size = (self.base.shape[2], self.base.shape[1])

    def _detailing(self, detail: float | None, gain: float, refine: bool, blend: int, reach: float | None) -> None:
        """What the drawn crop gets back of the person's real pixels: the refiner, else the bank's detail. ``reach``
        (``detail_reach``): the detail fades where the drawn mouth is far from every bank mouth, whole up to this
        many times the bank mouths' own spread (their keys' RMS distance from their mean) and gone at twice that:
        there the nearest mouths' detail is another mouth's (docs/avatar.md)."""
        if reach is not None and not reach > 0:
            raise InputError(f"the detail's reach must be above 0, not {reach}")
        self.detail_reach = reach
        if not isinstance(blend, int) or blend < 1:
            raise InputError(f"the detail blends a whole number of bank mouths, at least 1, not {blend!r}")
        self.detail_blend = blend  # the moved detail (``flow``) is the chosen frame's alone
        if detail is not None and not 0.0 <= detail < 1.0:
            raise InputError(f"the detail memory must be in [0, 1), not {detail}")
        if not 0.0 <= gain <= 3.0:
            raise InputError(f"the detail gain must be in [0, 3], not {gain}")
        bank = self.avatar.bank
        self.gain, self.refiner = gain, self.avatar.refiner if refine and bank is not None else None
        self.memory = detail if bank is not None and "detail" in bank and self.refiner is None else None
        self._detail: np.ndarray | torch.Tensor | None = None  # the running average (a tensor when moved)
        self._details: dict[int, np.ndarray] = {}  # bank frames' decoded details (JPEG), the latest 64 per mouth

    def _moving(self, flow: bool, move_start: bool, start: int | None, start_memory: float | None,
                carry: float, mouth: str, blend: int, move_pixels: bool) -> None:
        """What of the bank's mouth is moved to the drawn one's shape (``flow``, ``move_start``, ``mouth``, how many
        bank mouths the filmed one is blended from: ``blend``); the bridge's start."""
        if mouth not in MOUTHS or (mouth != "engine" and self.avatar.bank is None):
            raise InputError(f"the mouth is one of {', '.join(MOUTHS)} (all but the engine need a mouth bank), "
                             f"not {mouth!r}")
        if not isinstance(blend, int) or blend < 1 or (blend > 1 and mouth == "engine"):
            raise InputError(f"the filmed mouth (filmed, lips) blends a whole number of bank mouths, at least 1, "
                             f"not {blend!r} for the mouth {mouth!r}")
        self.filmed, self.lips, self.blend = mouth == "filmed", mouth == "lips", blend
        if start is not None and not 2 <= start < 1000:
            raise InputError(f"the bridge's start must be a timestep in [2, 1000), not {start}")
        if start_memory is not None and not 0.0 <= start_memory < 1.0:
            raise InputError(f"the start's memory must be in [0, 1), not {start_memory}")
        if not 0.0 <= carry < 1.0 or (carry and not (move_start or self.filmed)):
            raise InputError(f"the carry must be in [0, 1) and needs the start moved (move_start) or the filmed mouth, "
                             f"not {carry}")
        self.start_memory, self._start = start_memory, None  # the moved start's running average, at the mean mouth
        self.timesteps = None if start is None else [start, start // 2]
        self.move_detail = flow and self.memory is not None
        self.move_start = move_start and self.avatar.bank is not None
        if move_pixels and (not self.move_start or start_memory is not None or carry):
            raise InputError("the start moved in pixels (move_pixels) needs move_start, without start_memory or carry")
        self.move_pixels = move_pixels
        # The last frame drawn (its latent and its mouth's points); without a bank there is no moved start to carry.
        self.carry, self._last = carry if self.move_start or self.filmed else 0.0, None
        self.mouth = None  # ``MouthFlow``, where anything is moved to the drawn mouth
        if self.move_detail or self.move_start or self.filmed or self.lips or self.refiner is not None:
            from talkhead.avatar.flow import MouthFlow

            self.mouth = MouthFlow(self.avatar.crop_points, self.avatar.side)
            self._bank_points = self.mouth.points(self.avatar.bank["motion"])
            self._mean_points = self.mouth.points(self.avatar.bank["motion"].mean(0, keepdims=True))[0]
        if self.move_detail:
            self._moved: dict[int, torch.Tensor] = {}  # bank frames' details at the mean mouth, the latest 64
        self._real: dict[int, torch.Tensor] = {}  # bank frames' real crops (decoded + detail), the latest 64

    def keys(self, motion: np.ndarray) -> np.ndarray:
        """The bank's keys of motion [T, 58] (``mouths.mouth_keys``; its weights from ``bank["keys"]`` where an avatar's
        bank names them, as a sweep of the weights does)."""
        a = self.avatar
        return mouth_keys(a.crop_points, motion, a.side, **a.bank.get("keys", {}))

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        return tuple(self.base.shape[1:])

    def _base_index(self, n: int) -> np.ndarray:
        i = self._index + np.arange(n)
        self._index += n
        return pingpong(i, len(self.base)) if self.loop else np.minimum(i, len(self.base) - 1)

    def crops(self, motion: np.ndarray, idx: np.ndarray, views: Views | None = None) -> np.ndarray:
        """The drawn crops uint8 [B, S, S, 3] for driving motion [B, 58] over base frames ``idx`` (their
        ``views``, if made already)."""
        a = self.avatar
        drive = np.array(self.base_motion[idx], np.float32, copy=True)
        drive[:, LOWER] = np.asarray(motion, np.float32)[:, LOWER]
        v = self.views(idx) if views is None else views
        # With a bank, each frame starts from the person's own nearest mouth (the engine's bridge noises it).
        keys = None if self.bank is None else self.keys(drive)
        chosen = None if keys is None else self.bank.path(keys) if self.path else self.bank.choose(keys)
        ref = self.ref if chosen is None else a.bank["latent"][chosen]
        dst = None if self.mouth is None else self.mouth.points(drive)  # the drawn mouth's points
        if self.filmed or self.lips:  # which bank mouths the filmed one is made of, and their weights
            mouths = (blend_weights(keys, self.bank.keys, self.blend) if self.blend > 1
                      else (chosen[:, None], np.ones((len(chosen), 1))))
        if self.filmed:
            return np.clip(np.round(self._filmed(*mouths, dst, v)), 0, 255).astype(np.uint8)
        crops = self._engine(ref, drive, v, chosen, dst, keys)
        if self.lips:  # the engine's lower face, its lips and a band around them the person's filmed ones
            from talkhead.avatar.flow import lips_mask

            w = lips_mask(dst.numpy(), a.side)[..., None]
            crops = crops * (1 - w) + self._filmed(*mouths, dst, v) * w
        return np.clip(np.round(crops), 0, 255).astype(np.uint8)

    def _engine(self, ref: torch.Tensor, drive: np.ndarray, v: Views, chosen: np.ndarray | None,
                dst: torch.Tensor | None, keys: np.ndarray | None) -> np.ndarray:
        """The engine's crops, float [B, S, S, 3], sampled from ``ref`` (the chosen bank frames' latents, or the
        reference) for ``drive`` over the base frames' views ``v``; ``dst``: the drawn mouths' points, ``keys``
        their bank keys."""
        a = self.avatar
        if self.move_pixels:  # the bank frame's crop moved to the drawn mouth, encoded again
            moved = self._filmed(chosen[:, None], np.ones((len(chosen), 1)), dst, v)
            ref = a.engine.encode(np.clip(np.round(moved), 0, 255).astype(np.uint8)).to(ref.dtype)
        elif self.move_start:  # the bank's mouth moved to the drawn one's shape, cell by cell
            ref = self._moved_start(ref.float(), chosen, dst).to(ref.dtype)
        context = torch.cat([v.context, a.structure(drive)], 1) if a.structured else v.context
        z = self._sample(ref, torch.from_numpy(drive), a.maps(drive), context, dst)
        crops = self._decode(z, chosen, v.window).astype(np.float32)
        if self.colour != "off":  # the frame's own colour, as the decoding shows it just outside the mask
            _match_colour(crops, v)
        if self.refiner is not None:
            crops = self._refine(crops, chosen, dst, v)
        if self.memory is not None:
            crops = (self._add_moved_detail(crops, chosen, dst) if self.move_detail
                     else self._add_detail(crops, chosen, keys))
        return crops

    def _sample(self, ref: torch.Tensor, drive: torch.Tensor, geometry: torch.Tensor | None, context: torch.Tensor,
                dst: torch.Tensor | None) -> torch.Tensor:
        """The engine's latents for a batch; with ``carry``, frame by frame, each bridged partly from the frame before
        it moved to its own mouth (points ``dst``): the moved mouth, sampled from t = 400, keeps much of its start,
        and starts drawn independently shimmer where the fitted points jitter or the bank frame changes."""
        eng, noise = self.avatar.engine, self.noise.expand(len(ref), -1, -1, -1)
        if not self.carry:
            return eng.sample(ref, drive, noise, self.timesteps, geometry=geometry, context=context)
        out = []
        for k in range(len(ref)):
            start = ref[k:k + 1]
            if self._last is not None:
                moved = self.mouth.warp_latent(self._last[0].float(), self._last[1], dst[k:k + 1]).to(start.dtype)
                start = self.carry * moved + (1 - self.carry) * start
            out.append(eng.sample(start, drive[k:k + 1], noise[:1], self.timesteps, context=context[k:k + 1],
                                  geometry=None if geometry is None else geometry[k:k + 1]))
            self._last = (out[-1], dst[k:k + 1])
        return torch.cat(out)

    def views(self, idx: np.ndarray) -> Views:
        """The base frames ``idx`` as drawing sees them (the avatar's own base: made once)."""
        if self._views is not None:
            return self._views.take(idx)
        return self.avatar.views(self.base[idx], self.affine[idx], self.points[idx], self.colour)

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

    def _moved_start(self, ref: torch.Tensor, chosen: np.ndarray, dst: torch.Tensor) -> torch.Tensor:
        """The chosen bank latents ``ref`` moved to the drawn mouths (points ``dst``); with ``start_memory``, first
        moved to the bank's mean mouth and averaged there over frames: from t = 400 the engine keeps much of its
        start, and a new bank frame or the fitted points' jitter would show as shimmer."""
        src = self._bank_points[torch.from_numpy(chosen)]
        if self.start_memory is None:
            return self.mouth.warp_latent(ref, src, dst)
        mean = self._mean_points.expand(len(ref), -1, -1)
        averages = []
        for z in self.mouth.warp_latent(ref, src, mean):
            self._start = running(self._start, z, self.start_memory)
            averages.append(self._start)
        return self.mouth.warp_latent(torch.stack(averages), mean, dst)

    def _add_detail(self, crops: np.ndarray, chosen: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Crops (float) with their bank frames' detail added, as a running average: a bank frame changes every
        few frames, and its detail (with the camera's noise) would otherwise flicker (1.8x the real video's). With
        ``detail_blend``, each frame's is the blend of the bank mouths nearest its ``keys``."""
        mouths, weights = ((chosen[:, None], np.ones((len(chosen), 1))) if self.detail_blend == 1
                           else blend_weights(keys, self.bank.keys, min(self.detail_blend, len(self.bank.keys))))
        fade = np.ones(len(chosen)) if self.detail_reach is None else self._detail_fade(keys)
        for k in range(len(chosen)):
            d = fade[k] * sum(w * self._bank_detail(int(i)) for i, w in zip(mouths[k], weights[k]) if w > 0)
            self._detail = running(self._detail, d, self.memory)
            crops[k] += self.gain * self._detail
        return crops

    def _detail_fade(self, keys: np.ndarray) -> np.ndarray:
        """Per drawn mouth (bank ``keys``), the share of the bank's detail it gets (``detail_reach``)."""
        return np.clip(2.0 - beyond(keys, self.bank.keys) / self.detail_reach, 0.0, 1.0)

    def _add_moved_detail(self, crops: np.ndarray, chosen: np.ndarray, dst: torch.Tensor) -> np.ndarray:
        """As ``_add_detail``, with the average kept at one mouth shape (the bank's mean): each bank frame's detail
        is moved there from its own mouth (once per bank frame), averaged there, and the average moved to the
        drawn mouth (at points ``dst``). Lip edges of different frames fall on each other, and each is resampled
        twice at most (moving the average itself frame after frame blurs it)."""
        averages = []
        for i in chosen:
            self._detail = running(self._detail, self._canonical(int(i)), self.memory)
            averages.append(self._detail)
        moved = self.mouth.warp(torch.stack(averages), self._mean_points.expand(len(dst), -1, -1), dst)
        return crops + self.gain * moved.numpy()

    def _refine(self, crops: np.ndarray, chosen: np.ndarray, dst: torch.Tensor, v: Views) -> np.ndarray:
        """Crops (float) refined, within the decoded window, beside each bank frame's real crop moved to the drawn
        mouth (``avatar.refiner``). The refiner sees each crop pasted into its base frame's own, as it learnt: the
        person's real skin around the mouth."""
        real = self._bank_real(chosen)
        guide = self.mouth.warp(real, self._bank_points[torch.from_numpy(chosen)], dst).clamp(0, 255).numpy()
        paste = v.paste[..., None]
        crops = v.crops * (1 - paste) + crops * paste
        (r0, r1, c0, c1), d = v.window, self.avatar.engine.vae.down
        cut = (slice(None), slice(r0 * d, r1 * d), slice(c0 * d, c1 * d))
        crops[cut] = self.refiner.apply(crops[cut], guide[cut])
        return crops

    def _filmed(self, chosen: np.ndarray, weights: np.ndarray, dst: torch.Tensor, v: Views) -> np.ndarray:
        """Crops, float [B, S, S, 3]: the chosen bank frames' real crops (``chosen`` [B, k], blended by ``weights``
        [B, k]) moved to the drawn mouths (points ``dst``), their colour matched to the frames they are drawn on; the
        filmed mouth alone takes a share ``carry`` of the frame before it, moved to its mouth."""
        b, k = chosen.shape
        flat = chosen.reshape(-1)
        moved = self.mouth.warp(self._bank_real(flat), self._bank_points[torch.from_numpy(flat)],
                                dst.repeat_interleave(k, 0))
        weights = torch.from_numpy(weights).float()[..., None, None, None]
        moved = (moved.reshape(b, k, *moved.shape[1:]) * weights).sum(1)
        if self.carry and self.filmed:
            for k in range(len(moved)):
                if self._last is not None:
                    before = self.mouth.warp(self._last[0], self._last[1], dst[k:k + 1])[0]
                    moved[k] = self.carry * before + (1 - self.carry) * moved[k]
                self._last = (moved[k:k + 1], dst[k:k + 1])
        crops = moved.numpy()
        if self.colour != "off":
            _match_colour(crops, v)
        return crops

    def _bank_real(self, chosen: np.ndarray) -> torch.Tensor:
        """The bank frames' real crops, float [B, S, S, 3]: their latents decoded (those not kept yet, in one batch)
        and their detail added back."""
        a, wanted = self.avatar, {int(i) for i in chosen}
        got = {i: self._real[i] for i in wanted & self._real.keys()}  # before new ones push old ones out
        new = sorted(wanted - got.keys())
        if new:
            decoded = a.engine.decode(a.bank["latent"][new]).astype(np.float32)
            for i, crop in zip(new, decoded):
                crop += self._bank_detail(i) if "detail" in a.bank else 0.0
                got[i] = torch.from_numpy(np.clip(crop, 0, 255))
                _keep_latest(self._real, i, got[i], 64 * self.blend)
        return torch.stack([got[int(i)] for i in chosen])

    def _bank_detail(self, i: int) -> np.ndarray:
        """Bank frame ``i``'s detail, decoded once while it is among the latest: consecutive frames mostly blend
        the same nearest mouths, and each decode is a JPEG's (about 0.5 ms at 192 px)."""
        if i not in self._details:
            _keep_latest(self._details, i, self.avatar.detail(i), 64 * self.detail_blend)
        return self._details[i]

    def _canonical(self, i: int) -> torch.Tensor:
        """Bank frame ``i``'s detail moved to the bank's mean mouth (kept for the frames the bank plays next)."""
        if i not in self._moved:
            d = torch.from_numpy(self._bank_detail(i))[None]
            _keep_latest(self._moved, i, self.mouth.warp(d, self._bank_points[i:i + 1], self._mean_points[None])[0])
        return self._moved[i]

    def frames(self, motion: np.ndarray, batch: int = 32) -> Iterator[np.ndarray]:
        for i in range(0, len(motion), batch):
            m = motion[i:i + batch]
            idx = self._base_index(len(m))
            v = self.views(idx)
            for k, (j, crop) in enumerate(zip(idx, self.crops(m, idx, v))):
                yield paste_lower_face(self.base[j], crop, self.affine[j], v.paste[k])


def _match_colour(crops: np.ndarray, v: Views) -> None:
    """Shift each drawn crop (float [B, S, S, 3], in place) so that its mean on its ring is the frame's tone there."""
    for k, ring in enumerate(v.ring):
        crops[k] += v.tone[k] - crops[k][ring].mean(0)
