"""The training-free photo renderer: landmarks moved by the rig, photo warped to follow.

Per photo (once): register the face, frame a square around it, fit the rig,
choose a crop box around the head, and precompute the source crop, the TPS
grid, the border anchors and the feathered upsampling. Per batch of frames:
project the rig, solve one thin-plate spline per frame that maps target
landmarks back to source landmarks (batched ``linalg.solve`` on ~90 points),
evaluate it on a coarse grid, upsample it (fading to no motion at the crop
border, so the background stays put), sharpen it at the lips and eyelids
(``mouth``), ``grid_sample`` the crop once, paint the new mouth opening, and
paste the crop into the unmoved frame.

Output frames are ``width x height`` (even sides, square by default): the photo's
rectangle of that aspect, ``framing`` face widths across its short side and centred
on the face (smaller if the photo is), resized. ``full_frame=True`` keeps the whole
photo instead: with ``size=None`` at its own size and coordinates (a photo with an odd
side loses its last column or row, as H.264 needs even sides), else the largest rectangle
of ``size``'s aspect, centred on the face as far as the photo allows, resized.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from talkhead.config import VIDEO_SIZE
from talkhead.face.detect import Face, as_rgb, detect_face
from talkhead.face.template import BLINKS, Rig, eyes_open, fit_rig, lip_seal, project_points
from talkhead.rig.spec import SPEC
from talkhead.warp import mouth

_TPS_REG = 1e-4        # smoothing: coincident targets (closed lips) keep the system solvable
_ANCHORS_PER_SIDE = 6
_MARGIN = (0.45, 0.35, 0.45, 0.5)  # crop margin left, top, right, bottom in face widths
_FEATHER = 0.12        # motion fades out over this much of the crop's short side
_POSE_ZOOM = 1.2       # room in the paint windows for head motion toward the camera


def frame_size(size: int | tuple[int, int]) -> tuple[int, int]:
    """An int (square) or (width, height) -> (width, height), both even and at least 64."""
    w, h = (size, size) if isinstance(size, int) else size
    return max(64, int(w) // 2 * 2), max(64, int(h) // 2 * 2)  # H.264 wants even sides


def photo_window(shape: tuple[int, ...], face: Face, size: tuple[int, int], framing: float
                 ) -> tuple[int, int, int, int]:
    """Where ``frame_photo`` crops a photo of ``shape``: (x0, y0, width, height) in photo pixels."""
    h, w = shape[:2]
    out_w, out_h = size
    short = framing * face.width / min(out_w, out_h)
    fit = min(short, w / out_w, h / out_h)  # a small photo gives a tighter crop, never a stretched one
    cw, ch = max(1, int(fit * out_w)), max(1, int(fit * out_h))
    cx, cy = face.landmarks.mean(0)
    cy -= 0.1 * face.width  # room for the forehead above the landmarks
    x0 = int(np.clip(round(cx - cw / 2), 0, w - cw))
    y0 = int(np.clip(round(cy - ch / 2), 0, h - ch))
    return x0, y0, cw, ch


def drawn_part(photo: np.ndarray, face: Face, size: tuple[int, int], framing: float = 4.0, margin: float = 0.25,
               detail: float = 2.0) -> np.ndarray:
    """The part of a photo a renderer of ``size`` draws from (``photo_window`` and ``margin`` of it around), made
    smaller where its window is over ``detail`` times the drawn size: a server keeps this, not an 8000 px photo
    (192 MB) of which it draws 256 px. A renderer made from it frames the same face the same way."""
    x0, y0, cw, ch = photo_window(photo.shape, face, size, framing)
    mx, my = int(cw * margin), int(ch * margin)
    part = photo[max(0, y0 - my):y0 + ch + my, max(0, x0 - mx):x0 + cw + mx]
    k = detail * max(size) / max(cw, ch)
    if k >= 1.0:
        return np.ascontiguousarray(part)
    small = (max(8, round(part.shape[1] * k)), max(8, round(part.shape[0] * k)))
    return np.asarray(Image.fromarray(part).resize(small, Image.LANCZOS))


def frame_photo(photo: np.ndarray, face: Face, size: tuple[int, int], framing: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Crop of the frame's aspect around the face, resized: (frame uint8 [H, W, 3], landmarks [68, 2])."""
    out_w, out_h = size
    x0, y0, cw, ch = photo_window(photo.shape, face, size, framing)
    crop = photo[y0:y0 + ch, x0:x0 + cw]
    frame = np.asarray(Image.fromarray(crop).resize((out_w, out_h), Image.LANCZOS))
    k = np.array([out_w / cw, out_h / ch])
    lm = (face.landmarks - [x0, y0] + 0.5) * k - 0.5  # pixel centres map to pixel centres
    return np.array(frame, dtype=np.uint8), lm.astype(np.float32)


def _tps_kernel(r2: torch.Tensor) -> torch.Tensor:
    """Thin-plate radial basis U = r² log r² from squared distances."""
    return 0.5 * r2 * torch.log(r2.clamp(min=1e-12))


def _sq_dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Squared distances between points a [.., M, 2] and b [.., N, 2] -> [.., M, N]."""
    return ((a[..., :, None, :] - b[..., None, :, :]) ** 2).sum(-1)


def tps_solve(targets: torch.Tensor, sources: torch.Tensor, reg: float = _TPS_REG
              ) -> torch.Tensor:
    """Per-frame TPS f(target_i) = source_i; targets [B, N, 2], sources [(B,) N, 2] -> [B, N+3, 2]."""
    b, n, _ = targets.shape
    t = targets.double()
    k = _tps_kernel(_sq_dist(t, t)) + reg * torch.eye(n, dtype=t.dtype, device=t.device)
    p = torch.cat([torch.ones_like(t[..., :1]), t], -1)
    top = torch.cat([k, p], -1)
    bottom = torch.cat([p.transpose(1, 2), torch.zeros(b, 3, 3, dtype=t.dtype, device=t.device)], -1)
    rhs = torch.cat([sources.double().expand(b, n, 2),
                     torch.zeros(b, 3, 2, dtype=t.dtype, device=t.device)], 1)
    return torch.linalg.solve(torch.cat([top, bottom], 1), rhs).float()


def tps_eval(coef: torch.Tensor, targets: torch.Tensor, pts: torch.Tensor) -> torch.Tensor:
    """Evaluate TPS coef [B, N+3, 2] (control points targets [B, N, 2]) at pts [M, 2] -> [B, M, 2]."""
    n = targets.shape[1]
    # |p - t|² through one batched matmul: no [B, M, N, 2] temporary.
    r2 = torch.baddbmm((pts * pts).sum(-1)[None, :, None] + (targets * targets).sum(-1)[:, None, :],
                       pts.expand(targets.shape[0], -1, -1), targets.transpose(1, 2), alpha=-2.0)
    r2 = r2.clamp_(min=1e-20)
    u = torch.log(r2).mul_(r2).mul_(0.5)  # vectorised log; xlogy is several times slower
    return torch.baddbmm(coef[:, n:n + 1] + pts @ coef[:, n + 1:], u, coef[:, :n])


def border_points(x0: float, y0: float, x1: float, y1: float, per_side: int) -> np.ndarray:
    """Evenly spaced points around a rectangle's border [4·(per_side-1), 2]."""
    s = np.linspace(0.0, 1.0, per_side)[:-1]
    top = np.stack([x0 + s * (x1 - x0), np.full_like(s, y0)], 1)
    right = np.stack([np.full_like(s, x1), y0 + s * (y1 - y0)], 1)
    bottom = np.stack([x1 - s * (x1 - x0), np.full_like(s, y1)], 1)
    left = np.stack([np.full_like(s, x0), y1 - s * (y1 - y0)], 1)
    return np.concatenate([top, right, bottom, left])


def _lerp_matrix(n_out: int, n_in: int) -> torch.Tensor:
    """Linear upsampling n_in -> n_out nodes, ends aligned, as a matrix [n_out, n_in]."""
    pos = torch.linspace(0, n_in - 1, n_out, dtype=torch.float64)
    lo = pos.floor().long().clamp(max=n_in - 2)
    frac = pos - lo
    m = torch.zeros(n_out, n_in, dtype=torch.float64)
    m[torch.arange(n_out), lo] = 1 - frac
    m[torch.arange(n_out), lo + 1] += frac
    return m


def _feather(n: int, ramp: float) -> torch.Tensor:
    """1 inside, smoothly 0 at both ends: [n]."""
    i = torch.arange(n, dtype=torch.float64)
    t = (torch.minimum(i, n - 1 - i) / max(ramp, 1.0)).clamp(0, 1)
    return t * t * (3 - 2 * t)


def _window(center: torch.Tensor, h: int, w: int, hc: int, wc: int
            ) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer pixel rows [B, h] and columns [B, w] of windows centred on center [B, 2]."""
    oy = (center[:, 1] - h / 2).round().long().clamp(0, hc - h)
    ox = (center[:, 0] - w / 2).round().long().clamp(0, wc - w)
    return (oy[:, None] + torch.arange(h, device=center.device),
            ox[:, None] + torch.arange(w, device=center.device))


class WarpRenderer:
    """Animate one photo: motion [T, 58] -> frames uint8 [T, H, W, 3]; ``size`` is W = H or (W, H), or None
    for the photo's own; ``full_frame``: the frame shows the whole photo, not ``framing`` face widths."""

    def __init__(self, photo: np.ndarray, size: int | tuple[int, int] | None = VIDEO_SIZE,
                 device: str | torch.device = "cpu", framing: float = 4.0, grid: int = 48, name: str = "photo",
                 full_frame: bool = False) -> None:
        photo = as_rgb(photo, name)
        if full_frame:  # the whole photo: no face-sized window (framing), only the output's aspect bounds it
            framing = math.inf
            if size is None:  # its own size: even sides by dropping an odd last column/row, nothing resampled
                photo = photo[: photo.shape[0] // 2 * 2, : photo.shape[1] // 2 * 2]
        if size is None:
            size = (photo.shape[1], photo.shape[0])
        self.size = frame_size(size)
        self.device = torch.device(device)
        self.face, self.framing = detect_face(photo, name, cache=True), framing
        self.background, self.landmarks = frame_photo(photo, self.face, self.size, framing)
        rig = fit_rig(self.landmarks)
        self.rig = rig.to(self.device)
        self.lip_rig = rig  # the face speech-driven lips are solved on (pipeline.stream, motion.model.on_face)
        self._setup_crop(rig, grid)
        self._setup_features(rig.scale)

    def _setup_crop(self, rig: Rig, grid: int) -> None:
        """Crop box around the head, TPS sources and anchors, the coarse grid and its upsampling."""
        dev, fw, (sw, sh) = self.device, rig.scale, self.size
        neutral = project_points(rig, torch.zeros(1, SPEC.dim))[0]
        lo = neutral.amin(0).numpy() - fw * np.array(_MARGIN[:2])
        hi = neutral.amax(0).numpy() + fw * np.array(_MARGIN[2:])
        x0, y0 = (int(max(0, np.floor(v))) for v in lo)
        x1, y1 = (int(min(lim, np.ceil(v) + 1)) for v, lim in zip(hi, (sw, sh)))
        self.box = (x0, y0, x1, y1)
        hc, wc = y1 - y0, x1 - x0
        self._origin = torch.tensor([x0, y0], dtype=torch.float32, device=dev)
        self._neutral = neutral.to(dev) - self._origin                # [P, 2] crop px
        self._norm = float(max(hc, wc))  # TPS works in isotropic units ~[0, 1]
        # Fixed points on the crop border keep the background where it is.
        self._anchors = torch.as_tensor(border_points(0, 0, wc - 1, hc - 1, _ANCHORS_PER_SIDE),
                                        dtype=torch.float32, device=dev) / self._norm
        self._sources = torch.cat([self._neutral / self._norm, self._anchors])
        gy, gx = torch.meshgrid(torch.linspace(0, hc - 1, grid), torch.linspace(0, wc - 1, grid),
                                indexing="ij")
        self._grid = grid
        self._grid_pts = (torch.stack([gx, gy], -1).view(-1, 2) / self._norm).to(dev)
        # Coarse displacement -> full crop by two matmuls (bilinear upsampling),
        # with the border feather folded in: mask(y)·mask(x)·D = diag·U·D·Uᵀ·diag.
        # Feathering the displacement, not the pixels, keeps the border exact and
        # avoids ghosting in the ramp.
        ramp = _FEATHER * min(hc, wc)
        self._up_y = (_feather(hc, ramp)[:, None] * _lerp_matrix(hc, grid)).float().to(dev)
        self._up_x = (_feather(wc, ramp)[:, None] * _lerp_matrix(wc, grid)).float().to(dev)
        iy, ix = torch.meshgrid(torch.arange(hc, dtype=torch.float32),
                                torch.arange(wc, dtype=torch.float32), indexing="ij")
        self._identity = torch.stack([ix, iy], -1).to(dev)            # [hc, wc, 2] px
        self._gs_scale = torch.tensor([2.0 / wc, 2.0 / hc], device=dev)
        crop = torch.from_numpy(self.background[y0:y1, x0:x1]).to(dev).float()
        self._crop_chw = crop.permute(2, 0, 1)[None].contiguous()   # [1, 3, hc, wc]

    def _setup_features(self, fw: float) -> None:
        """Paint windows for mouth and eyes, and the photo's own lip gap."""
        hc, wc = self._identity.shape[:2]
        z = _POSE_ZOOM * fw
        self._eye_hw = (min(hc, int(np.ceil(0.3 * z))), min(wc, int(np.ceil(0.36 * z))))
        self._gap_hw = (min(hc, int(np.ceil(0.6 * z))), min(wc, int(np.ceil(0.65 * z))))
        # The lip-gap jump fades out toward the window's edges: a pose that pushes
        # its reach past the window bends the lips a little instead of tearing.
        ty, tx = (_feather(n, 0.15 * n).float() for n in self._gap_hw)
        self._gap_taper = (ty[:, None] * tx[None, :])[None, :, :, None].to(self.device)
        parted = mouth.lips_parted(self.background, self.landmarks)
        self._lipgap = mouth.LipGap(self._neutral, fw, parted)
        self.palette = mouth.sample_palette(self.background, self.landmarks,
                                            self._lipgap.parted).to(self.device)

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        """(H, W, 3) of every frame."""
        return self.background.shape

    def __call__(self, motion: np.ndarray | torch.Tensor) -> np.ndarray:
        """Render all of motion [T, 58] -> uint8 [T, H, W, 3]."""
        parts = list(self.render_batches(motion))
        return np.concatenate(parts) if parts else np.zeros((0, *self.frame_shape), np.uint8)

    def render_batches(self, motion: np.ndarray | torch.Tensor, batch: int = 32
                       ) -> Iterator[np.ndarray]:
        """Stream motion [T, 58] as chunks of frames uint8 [<=batch, H, W, 3]."""
        m = motion.float() if torch.is_tensor(motion) else torch.from_numpy(
            np.asarray(motion, dtype=np.float32))
        if m.ndim != 2 or m.shape[1] != SPEC.dim:
            raise ValueError(f"motion must be [T, {SPEC.dim}], got {tuple(m.shape)}")
        for i in range(0, m.shape[0], batch):
            yield self.render_batch(m[i:i + batch])

    def frames(self, motion: np.ndarray | torch.Tensor, batch: int = 32) -> Iterator[np.ndarray]:
        """Stream motion [T, 58] frame by frame, uint8 [H, W, 3] each (what write_mp4 takes)."""
        for chunk in self.render_batches(motion, batch):
            yield from chunk

    @torch.inference_mode()
    def render_batch(self, motion: torch.Tensor) -> np.ndarray:
        """Render one chunk: motion [B, 58] -> uint8 [B, H, W, 3]."""
        geo = self._geometry(motion)
        grid = self._sampling_grid(geo)
        b = grid.shape[0]
        crop = F.grid_sample(self._crop_chw.expand(b, -1, -1, -1), grid, mode="bilinear",
                             padding_mode="border", align_corners=False)   # [B, 3, hc, wc]
        self._paint_mouth(crop, geo)
        crop = crop.add_(0.5).clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
        out = np.empty((b, *self.frame_shape), dtype=np.uint8)
        out[:] = self.background
        x0, y0, x1, y1 = self.box
        out[:, y0:y1, x0:x1] = crop
        return out

    @torch.inference_mode()
    def sampling_grid(self, motion: torch.Tensor) -> torch.Tensor:
        """Backward map of the crop for motion [B, 58]: source px of each target px [B, hc, wc, 2]."""
        grid = self._sampling_grid(self._geometry(motion))
        return (grid + 1.0) / self._gs_scale - 0.5

    def _geometry(self, motion: torch.Tensor) -> dict:
        """Crop-space rig points with/without blinks [B, P, 2], lip seal [B], mouth window."""
        m = torch.as_tensor(motion, dtype=torch.float32).to(self.device)
        # The face with and without its blinks, projected in one call.
        full, opened = (project_points(self.rig, torch.cat([m, eyes_open(m)])) - self._origin).chunk(2)
        geo = {"full": full, "open": opened, "seal": lip_seal(m), "blink": bool((m[:, BLINKS] > 0).any())}
        hc, wc = self._identity.shape[:2]
        ys, xs = _window(geo["full"][:, 60:68].mean(1), *self._gap_hw, hc, wc)
        geo["ys"], geo["xs"] = ys, xs
        geo["mouth"] = mouth.inner_mouth(ys.float(), xs.float(), geo["full"])
        geo["keep"] = self._lipgap.keep(geo["mouth"]["un"], geo["seal"])
        return geo

    def _sampling_grid(self, geo: dict) -> torch.Tensor:
        """grid_sample coordinates [B, hc, wc, 2] for one batch's geometry."""
        targets, seal = geo["open"], geo["seal"]
        b = targets.shape[0]
        closing = self._lipgap.parted and bool((seal > 0).any())
        sources = self._sources
        if closing:  # the TPS aims at the photo with its lips σ-closed (mouth.LipGap)
            moved = self._lipgap.to_closed(self._neutral.expand(b, -1, -1), seal) / self._norm
            sources = torch.cat([moved, self._anchors.expand(b, -1, -1)], 1)
        ctrl = torch.cat([targets / self._norm, self._anchors.expand(b, -1, -1)], 1)
        coef = tps_solve(ctrl, sources)
        disp = (tps_eval(coef, ctrl, self._grid_pts) - self._grid_pts) * self._norm
        # The matmuls land straight in grid_sample's [B, h, w, 2] layout.
        g = self._grid
        rows = (self._up_x @ disp.view(b, g, g, 2)).reshape(b, g, -1)   # [B, g, wc, 2]
        hc, wc = self._identity.shape[:2]
        px = (self._up_y @ rows).view(b, hc, wc, 2).add_(self._identity)
        if self._lipgap.max_gap > 0.5:  # sharp jumps at the lips: full resolution, mouth window only
            bi = torch.arange(b, device=px.device)[:, None, None]
            ys, xs = geo["ys"][:, :, None], geo["xs"][:, None, :]
            win = px[bi, ys, xs]
            win += mouth.open_shift(geo["mouth"], geo["keep"])[..., None] * self._lipgap.n[0]
            if closing:
                win += (self._lipgap.to_photo(win, seal) - win) * self._gap_taper
            px[bi, ys, xs] = win
        if geo["blink"]:
            self._close_lids(px, targets, geo["full"])
        return torch.addcmul(0.5 * self._gs_scale - 1.0, px, self._gs_scale)

    def _close_lids(self, px: torch.Tensor, targets: torch.Tensor, lids: torch.Tensor) -> None:
        """Edit source positions px [B, hc, wc, 2] in place so the upper lids cover the eyes."""
        b, hc, wc = px.shape[:3]
        bi = torch.arange(b, device=px.device)[:, None, None]
        for side in ("right", "left"):
            idx = mouth.EYES[side][0] + mouth.EYES[side][1]
            ys, xs = _window(targets[:, idx].mean(1), *self._eye_hw, hc, wc)
            # The field is smooth near the eye, so a target-space offset is close
            # enough to the same offset in source space.
            shift = mouth.lid_shift(ys.float(), xs.float(), targets, lids, side)
            px[bi, ys[:, :, None], xs[:, None, :]] += shift

    def _paint_mouth(self, crop: torch.Tensor, geo: dict) -> None:
        """Paint the new mouth opening into the warped crop [B, 3, hc, wc], in place."""
        g = geo["mouth"]
        if float((g["bottom"] - g["top"] - 2 * geo["keep"]).max()) <= 0.5:
            return
        bi = torch.arange(crop.shape[0], device=crop.device)[:, None, None]
        ys, xs = geo["ys"][:, :, None], geo["xs"][:, None, :]
        patch = crop[bi, :, ys, xs]                                      # [B, h, w, 3]
        width = (geo["full"][:, 54] - geo["full"][:, 48]).norm(dim=-1)
        mouth.paint_mouth(patch, g, geo["keep"], width, self.palette, self._lipgap.parted)
        crop[bi, :, ys, xs] = patch
