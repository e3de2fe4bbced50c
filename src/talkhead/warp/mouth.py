"""Mouth interior and eyelids: what a 2D warp of the photo cannot show by itself.

Opening the jaw of a closed-mouth photo would smear lip colour into the gap,
closing an open smile would only squeeze the teeth, and pulling the upper lid
down would squeeze the iris. So, in the target frame: the photo's own teeth
ride with their lips and the new opening between them is painted (dark cavity,
upper/lower teeth, tongue); a photo's parted lips are closed by jumping over the
gap in source space (``LipGap``); a blinking lid is the photo's own skin from
above the eye, stretched down over it (``lid_shift``).

Window functions work on pixel grids ``ys [B, h]``, ``xs [B, w]`` (crop px) and
landmarks ``lm [B, P, 2]`` in the same pixels; colours are floats 0..255.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

UPPER_INNER_LIP = [60, 61, 62, 63, 64]
LOWER_INNER_LIP = [60, 67, 66, 65, 64]
EYES = {  # (upper lid corner to corner, lower lid)
    "right": ([36, 37, 38, 39], [36, 41, 40, 39]),
    "left": ([42, 43, 44, 45], [42, 47, 46, 45]),
}
_TEETH_RGB = np.array([236.0, 226.0, 206.0])
_TYPICAL_SKIN_LUMA = 165.0


@dataclass(frozen=True)
class Palette:
    """Colours (RGB floats 0..255, tensors [3]) that the painters take from the photo."""

    lip: torch.Tensor
    teeth: torch.Tensor

    def to(self, device: str | torch.device) -> "Palette":
        """The same palette on ``device``."""
        return Palette(self.lip.to(device), self.teeth.to(device))


def _patch_mean(image: np.ndarray, pts: np.ndarray, radius: int) -> np.ndarray:
    """Mean colour of small squares around points [K, 2] -> [3]."""
    h, w = image.shape[:2]
    cols = []
    for x, y in np.round(pts).astype(int):
        x0, x1 = np.clip([x - radius, x + radius + 1], 0, w)
        y0, y1 = np.clip([y - radius, y + radius + 1], 0, h)
        if x1 > x0 and y1 > y0:
            cols.append(image[y0:y1, x0:x1].reshape(-1, 3).mean(0))
    return np.mean(cols, 0) if cols else np.full(3, 128.0)


def _chroma_luma(rgb: np.ndarray) -> tuple[float, float]:
    return float(rgb.max() - rgb.min()), float(rgb @ [0.299, 0.587, 0.114])


def lips_parted(image: np.ndarray, landmarks: np.ndarray) -> bool:
    """Whether the photo shows teeth or a dark mouth between its inner lips.

    dlib often leaves a few pixels between the inner lips of a closed mouth;
    what lies there decides: lip-coloured means closed, whiter or darker means open.
    """
    lm = np.asarray(landmarks, dtype=np.float64)
    upper, lower = lm[[61, 62, 63]], lm[[67, 66, 65]]
    if float((lower - upper)[:, 1].mean()) < 2.0:
        return False
    img = image.astype(np.float64)
    r = max(1, round(float(np.linalg.norm(lm[16] - lm[0])) * 0.006))
    inside = _patch_mean(img, (upper + lower) / 2, r)
    lip = _patch_mean(img, (lm[[50, 51, 52, 56, 57, 58]] + lm[[61, 62, 63, 65, 66, 67]]) / 2, r)
    (ci, li), (cl, ll) = _chroma_luma(inside), _chroma_luma(lip)
    return li < 0.6 * ll or ci / max(li, 1.0) < 0.6 * cl / max(ll, 1.0)


def sample_palette(image: np.ndarray, landmarks: np.ndarray, parted: bool) -> Palette:
    """Lip and teeth colours from a photo uint8 [H, W, 3] and its landmarks [68, 2]."""
    lm = np.asarray(landmarks, dtype=np.float64)
    img = image.astype(np.float64)
    fw = float(np.linalg.norm(lm[16] - lm[0]))
    r = max(1, round(fw * 0.012))
    lip = _patch_mean(img, (lm[[50, 51, 52, 56, 57, 58]] + lm[[61, 62, 63, 65, 66, 67]]) / 2, r)
    upper, lower = lm[[61, 62, 63]], lm[[67, 66, 65]]
    teeth = _patch_mean(img, upper + 0.3 * (lower - upper), max(1, r // 2))
    if not parted or _chroma_luma(teeth)[1] < _chroma_luma(lip)[1]:  # no teeth to copy
        cheeks = _patch_mean(img, (lm[[2, 14]] + lm[[30, 30]]) / 2, 2 * r)
        # Teeth in a dim photo must be dim too, or they glow.
        luma = _chroma_luma(cheeks)[1]
        teeth = _TEETH_RGB * np.clip(luma / _TYPICAL_SKIN_LUMA, 0.45, 1.05)
    t = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    return Palette(lip=t(lip), teeth=t(teeth))


def _bcast(a: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Per-batch values [B] reshaped to broadcast against like [B, ...]."""
    return a.view(-1, *([1] * (like.ndim - 1)))


def _curve(un: torch.Tensor, vn: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Smooth v(u) through nodes (un, vn) [C.., B, N] (cubic Hermite), evaluated at u [B, ...] -> [C.., B, ...]:
    leading axes C.. are curves that share u (a mouth's two lips), evaluated together."""
    un = torch.cummax(un, dim=-1).values  # an outline folding back on itself stays a function
    du = (un[..., 1:] - un[..., :-1]).clamp(min=1e-3)
    sec = (vn[..., 1:] - vn[..., :-1]) / du
    tan = torch.cat([sec[..., :1], (sec[..., 1:] + sec[..., :-1]) / 2, sec[..., -1:]], -1)
    # Sum of per-segment increments, all segments at once on a last axis (a loop over them cost a live
    # frame ~500 small torch calls under the GIL): 0 before a segment, its full rise after it.
    lead, pad = un.shape[:-1], [1] * (u.ndim - 1)
    seg = torch.stack([un[..., :-1], du, vn[..., 1:] - vn[..., :-1], tan[..., :-1], tan[..., 1:]])
    u0, h, dv, t0, t1 = seg.view(5, *lead, *pad, du.shape[-1]).unbind(0)
    t = ((u[..., None] - u0) / h).clamp_(0.0, 1.0)
    s = 1 - t
    rise = t * t * (3 - 2 * t) * dv
    rise += h * t * s * (s * t0 - t * t1)
    return vn[..., 0].view(*lead, *pad) + rise.sum(-1)


def _local_frame(a: torch.Tensor, b: torch.Tensor):
    """Origin, unit axis from a to b, its normal (pointing down-screen) and half length, [B, 2]."""
    origin = (a + b) / 2
    axis = b - a
    half = axis.norm(dim=-1).clamp(min=1e-3) / 2
    d = axis / (2 * half[:, None])
    n = torch.stack([-d[:, 1], d[:, 0]], -1)
    return origin, d, n, half


def _to_local(pts: torch.Tensor, origin, d, n) -> tuple[torch.Tensor, torch.Tensor]:
    """Points [B, K, 2] -> (u, v) along the axis and the normal, pixels [B, K]; points [B, C, K, 2] (C outlines)
    -> [C, B, K], as ``_curve`` takes them."""
    shape = (pts.shape[0],) + (1,) * (pts.ndim - 2) + (2,)
    rel = pts - origin.view(shape)
    u, v = (rel * d.view(shape)).sum(-1), (rel * n.view(shape)).sum(-1)
    return (u, v) if pts.ndim == 3 else (u.movedim(1, 0), v.movedim(1, 0))


def _pixels_local(ys, xs, origin, d, n) -> tuple[torch.Tensor, torch.Tensor]:
    """Window pixel grid -> (u, v) pixels [B, h, w]."""
    dx = xs[:, None, :] - origin[:, 0, None, None]
    dy = ys[:, :, None] - origin[:, 1, None, None]
    return (dx * d[:, 0, None, None] + dy * d[:, 1, None, None],
            dx * n[:, 0, None, None] + dy * n[:, 1, None, None])


def inner_mouth(ys: torch.Tensor, xs: torch.Tensor, lm: torch.Tensor) -> dict[str, torch.Tensor]:
    """Target inner-lip geometry on a window: u (-1..1 corner to corner), v px, top/bottom curves."""
    origin, d, n, half = _local_frame(lm[:, 60], lm[:, 64])
    u, v = _pixels_local(ys, xs, origin, d, n)
    top, bottom = _curve(*_to_local(lm[:, [UPPER_INNER_LIP, LOWER_INNER_LIP]], origin, d, n), u)
    un = u / half[:, None, None]
    corner = ((1 - un.abs()) * half[:, None, None] + 0.5).clamp(0, 1)
    return {"un": un, "v": v, "top": top, "bottom": bottom, "corner": corner}


def open_shift(geo: dict[str, torch.Tensor], keep: torch.Tensor) -> torch.Tensor:
    """Source offset along the mouth normal, px [B, h, w], that keeps the photo's teeth rigid.

    The TPS stretches the photo's gap (``2·keep`` tall) over the whole target
    opening; instead its upper half follows the upper lip, its lower half the
    lower lip, and the new middle samples the gap's midline (painted over later).
    """
    top, bottom, v = geo["top"], geo["bottom"], geo["v"]
    tall = (bottom - top).clamp(min=1e-3)
    stretch = (1 - 2 * keep / tall).clamp(min=0.0)
    a, b = v - top, bottom - v
    inside = (a >= 0) & (b >= 0)
    mid = keep - a * (2 * keep / tall)
    shift = torch.where(a <= keep, a * stretch, torch.where(b <= keep, -b * stretch, mid))
    return torch.where(inside, shift, torch.zeros_like(v))


def _mix(dst: torch.Tensor, colour: torch.Tensor, alpha: torch.Tensor) -> torch.Tensor:
    """dst [B, h, w, 3] blended toward colour [.., 3] by alpha [B, h, w]."""
    return torch.lerp(dst, colour.expand_as(dst), alpha[..., None])


def paint_mouth(patch: torch.Tensor, geo: dict[str, torch.Tensor], keep: torch.Tensor,
                mouth_width: torch.Tensor, palette: Palette, real_teeth: bool) -> None:
    """Paint cavity, teeth and tongue into the new opening between the photo's lips, in place.

    ``patch [B, h, w, 3]``; ``keep [B, h, w]`` px of the photo's own gap kept at
    each lip (teeth if ``real_teeth``, else lip texture); ``mouth_width [B]`` px.
    """
    un, v = geo["un"], geo["v"]
    top, bottom = geo["top"] + keep, geo["bottom"] - keep
    gap = (bottom - top).clamp(min=0.0)
    alpha = ((v - top + 0.5).clamp(0, 1) * (bottom - v + 0.5).clamp(0, 1) * geo["corner"]
             * (gap / 2.0).clamp(0, 1))
    if float(alpha.max()) <= 0.0:
        return
    mw = mouth_width[:, None, None]
    t = ((v - top) / gap.clamp(min=1.0)).clamp(0, 1)
    u2 = un.square().clamp(max=1.0)
    depth = (1 - u2) * (1 - (2 * t - 1).square())
    out = palette.lip * (0.4 - 0.28 * depth)[..., None]
    tongue = (2 - 2 * (un / 0.6).square() - 2 * ((t - 1.05) / 0.5).square()).clamp(0, 1)
    tongue = tongue * ((gap - 0.12 * mw) / (0.1 * mw)).clamp(0, 1)
    out = _mix(out, palette.lip * 0.72 * (0.75 + 0.25 * t[..., None]), tongue)
    shown = keep if real_teeth else torch.zeros_like(keep)
    th_lo = (torch.minimum(0.15 * gap, 0.05 * mw) - shown).clamp(min=0.0)
    lower = ((v - (bottom - th_lo) + 0.5).clamp(0, 1) * ((0.5 - un.abs()) / 0.15).clamp(0, 1)
             * (th_lo / 1.5).clamp(0, 1))
    out = _mix(out, palette.teeth * (0.8 * (1 - 0.4 * u2))[..., None], lower)
    th = (torch.minimum(0.45 * gap, 0.12 * mw) - shown).clamp(min=0.0)
    upper = ((top + th - v + 0.5).clamp(0, 1) * ((0.82 - un.abs()) / 0.15).clamp(0, 1)
             * (th / 1.5).clamp(0, 1))
    # Lip shadow at the gum line, darker toward the corners, faint gaps between teeth.
    shade = (0.75 + 0.25 * ((v - top) / (0.35 * th + 1.0)).clamp(0, 1)) * (1 - 0.38 * u2)
    shade = shade * (1 - 0.14 * torch.cos(un * (3.5 * math.pi)).clamp(min=0).pow(12))
    out = _mix(out, palette.teeth * shade[..., None], upper)
    patch.copy_(_mix(patch, out, alpha))


def lid_shift(ys: torch.Tensor, xs: torch.Tensor, lm_open: torch.Tensor, lm_full: torch.Tensor,
              side: str) -> torch.Tensor:
    """Sampling offsets [B, h, w, 2] px that pull one eye's upper-lid skin down over the eye.

    The skin band of height H above the open lid is stretched over H + drop, so
    the lash line lands on the blinking lid edge and the iris under it is never
    sampled: the lid is the photo's own skin from above the eye.
    """
    upper = EYES[side][0]
    origin, d, n, half = _local_frame(lm_open[:, upper[0]], lm_open[:, upper[-1]])
    u, v = _pixels_local(ys, xs, origin, d, n)
    top, full = _curve(*_to_local(torch.stack([lm_open[:, upper], lm_full[:, upper]], 1), origin, d, n), u)
    drop = (full - top).clamp(min=0.0)
    skin = 0.9 * half[:, None, None]  # lid skin band above the lash line, px
    start = top - skin
    t = (v - start) / (skin + drop)
    inside = (t >= 0) & (t <= 1) & (u.abs() < half[:, None, None])
    shift = torch.where(inside, start + t * skin - v, torch.zeros_like(v))
    return shift[..., None] * n[:, None, None, :]


class LipGap:
    """The photo's own parted lips, and a source-space map that closes them by σ in [0, 1].

    Warping alone cannot close a photo's open smile: the teeth between the lips
    would only be squeezed. Instead the TPS targets a "σ-closed" photo, whose
    lips are σ of the gap nearer; ``to_photo`` maps that back to real photo
    pixels by jumping over the middle σ of the gap, so the teeth there vanish.
    """

    def __init__(self, lm: torch.Tensor, face_width: float, parted: bool) -> None:
        """From neutral landmarks [P, 2] (px) of the source image; ``parted``: see lips_parted."""
        self.origin, self.d, self.n, half = _local_frame(lm[None, 60], lm[None, 64])
        self.half = float(half[0])
        self.nodes = [_to_local(lm[None, idx], self.origin, self.d, self.n)
                      for idx in (UPPER_INNER_LIP, LOWER_INNER_LIP)]
        (uu, vu), (ul, vl) = self.nodes
        self.lips = torch.stack([uu, ul]), torch.stack([vu, vl])  # [2, 1, N]: both lips, for _curve at once
        self._table()
        self.max_gap = float((vl - vu).max())
        # Only truly parted lips are closed by jumping; dlib's slack between the
        # lips of a closed mouth is lip texture that simply rides along.
        self.parted = parted and self.max_gap > 0.5
        # Lip thickness rides along with the lip edge; the skin beyond absorbs the shift.
        self.thick_up = 0.045 * face_width
        self.thick_lo = 0.08 * face_width
        self.fade = 0.07 * face_width

    def keep(self, un: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """Half the photo's remaining gap, px [B, ...], at normalised mouth positions un."""
        gap, _ = self._gap_mid(un * self.half)
        return (_bcast(1 - sigma, un) if self.parted else 1.0) * gap / 2

    def _table(self, step: float = 1 / 64) -> None:
        """The photo's lips never move, so their gap and middle are tabled once every ``step`` px along the mouth
        and read by linear interpolation (within 1e-3 px of the curves): a cubic per segment at each of a 512 px
        frame's mouth pixels, three times a frame, was a quarter of the frame's time. Beyond the nodes both
        curves are flat, so the table's ends hold there."""
        un, vn = self.lips
        self._u0 = float(un.min())
        k = int(np.ceil((float(un.max()) - self._u0) / step)) + 2
        self._du = step
        u = self._u0 + step * torch.arange(k, dtype=torch.float32)[None]
        top, bottom = _curve(un, vn, u)
        self._gap_tab, self._mid_tab = (bottom - top).clamp(min=0.0)[0], ((bottom + top) / 2)[0]

    def _gap_mid(self, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        k = len(self._gap_tab)
        x = ((u - self._u0) / self._du).clamp(0.0, k - 1.0)
        i = x.floor().long().clamp(max=k - 2)
        f = x - i
        gap = torch.lerp(self._gap_tab[i], self._gap_tab[i + 1], f)
        return gap, torch.lerp(self._mid_tab[i], self._mid_tab[i + 1], f)

    def _shift(self, u: torch.Tensor, v: torch.Tensor, sigma: torch.Tensor,
               rel_to_closed: bool) -> torch.Tensor:
        """Offset along the mouth normal, px [B, ...], for points at (u, v)."""
        gap, mid = self._gap_mid(u)
        d = v - mid
        below = d >= 0
        sig = _bcast(sigma, u)
        jump = sig * gap / 2
        inner = (1 - sig) * gap / 2 if rel_to_closed else gap / 2
        reach = inner + torch.where(below, self.thick_lo, self.thick_up)
        f = (1 - (d.abs() - reach) / self.fade).clamp(0.0, 1.0)
        return torch.where(below, jump, -jump) * f

    def to_photo(self, q: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """σ-closed source coords q [B, ..., 2] -> real photo coords, px."""
        rel = q - self.origin.view(*([1] * (q.ndim - 1)), 2)
        u, v = (rel * self.d[0]).sum(-1), (rel * self.n[0]).sum(-1)
        return q + self._shift(u, v, sigma, True)[..., None] * self.n[0]

    def to_closed(self, p: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        """Photo points p [B, K, 2] (outside the skipped band) -> σ-closed source coords, px."""
        rel = p - self.origin.view(1, 1, 2)
        u, v = (rel * self.d[0]).sum(-1), (rel * self.n[0]).sum(-1)
        # Each point keeps its side of the gap; the shift is constant next to the
        # lips, so measuring its falloff from the photo position is exact there.
        return p - self._shift(u, v, sigma, False)[..., None] * self.n[0]
