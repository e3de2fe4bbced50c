"""Rig transfer: a canonical 3D 68-point face, fitted to detected landmarks and posed by motion.

Template space: x to the image right, y down, z toward the camera; the face is
one unit wide (jaw point 0 to 16) and the origin is the head's pivot (between
the ears, about nose height), so pose rotations turn the head rather than spin
the face about its nose. "Left"/"Right" in blendshape names are the subject's
own sides: in an unmirrored photo the subject's left is the image right (+x).

Pose conventions (radians, applied in camera space after the fitted photo
pose): pitch > 0 nods down (the nose moves down), yaw > 0 turns the nose
toward the image right, roll > 0 turns the face clockwise on screen. tx, ty
shift the head by face widths along image x/y; tz > 0 brings the head toward a
camera ``CAMERA_DISTANCE`` face widths away (weak perspective: a scale change).

Besides the 68 landmarks the rig carries ``len(FOREHEAD)`` forehead points so the warp moves the upper
head with the pose; ``project`` returns the 68 only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from talkhead.rig.spec import BLENDSHAPES, SPEC

CAMERA_DISTANCE = 4.0
# A bilabial closes the photo's own lip gap completely once mouthClose or mouthPress reaches this: ARKit
# puts p/b/m at about 0.3-0.6, not 1.
SEAL_FULL = 0.4
N_LANDMARKS = 68
# Neutral face in a unit box (x, y in [0, 1], brows at the top, chin at the bottom) with a relative depth z;
# converted to template space below.
_RIGHT_HALF = {  # image-left half and centre line; the other half is mirrored
    0: (0.00, 0.20, -0.45), 1: (0.01, 0.32, -0.42), 2: (0.03, 0.44, -0.36),
    3: (0.06, 0.56, -0.28), 4: (0.11, 0.67, -0.18), 5: (0.18, 0.77, -0.08),
    6: (0.27, 0.86, 0.00), 7: (0.38, 0.95, 0.05), 8: (0.50, 0.98, 0.07),
    17: (0.08, 0.09, -0.14), 18: (0.14, 0.04, -0.07), 19: (0.22, 0.02, -0.02),
    20: (0.30, 0.03, 0.01), 21: (0.38, 0.06, 0.02),
    27: (0.50, 0.17, 0.02), 28: (0.50, 0.26, 0.07), 29: (0.50, 0.35, 0.13),
    30: (0.50, 0.44, 0.20), 31: (0.41, 0.51, 0.05), 32: (0.45, 0.53, 0.09),
    33: (0.50, 0.545, 0.12),
    36: (0.17, 0.21, -0.12), 37: (0.22, 0.18, -0.04), 38: (0.28, 0.18, -0.03),
    39: (0.33, 0.22, -0.05), 40: (0.28, 0.235, -0.03), 41: (0.22, 0.235, -0.04),
    48: (0.34, 0.73, -0.02), 49: (0.39, 0.70, 0.05), 50: (0.45, 0.68, 0.08),
    51: (0.50, 0.69, 0.09), 57: (0.50, 0.81, 0.07), 58: (0.44, 0.80, 0.07),
    59: (0.39, 0.78, 0.04), 60: (0.36, 0.73, -0.02), 61: (0.44, 0.72, 0.05),
    62: (0.50, 0.725, 0.06), 66: (0.50, 0.74, 0.06), 67: (0.44, 0.735, 0.05),
}
# (right-half index, its mirror on the image-right half)
_MIRROR = [(i, 16 - i) for i in range(8)] + [(17 + i, 26 - i) for i in range(5)] + [
    (31, 35), (32, 34), (36, 45), (37, 44), (38, 43), (39, 42), (40, 47), (41, 46),
    (48, 54), (49, 53), (50, 52), (58, 56), (59, 55), (60, 64), (61, 63), (67, 65)]
FOREHEAD = np.array([  # unit box coordinates, above the brows
    (0.12, -0.10, -0.15), (0.30, -0.18, -0.02), (0.50, -0.20, 0.02),
    (0.70, -0.18, -0.02), (0.88, -0.10, -0.15)], dtype=np.float64)
_ORIGIN = np.array([0.5, 0.40, -0.45])  # head pivot in unit box coordinates


def _build_template() -> np.ndarray:
    pts = np.zeros((N_LANDMARKS, 3))
    for i, p in _RIGHT_HALF.items():
        pts[i] = p
    for a, b in _MIRROR:
        pts[b] = (1.0 - pts[a][0], pts[a][1], pts[a][2])
    allp = np.concatenate([pts, FOREHEAD]) - _ORIGIN
    return allp / np.linalg.norm(allp[16, :2] - allp[0, :2])


TEMPLATE = _build_template()  # [68 + 5, 3] template space, face width 1

IGNORED_CHANNELS: dict[str, str] = {
    **{f"eyeLook{d}{s}": "gaze needs iris tracking; dlib's 68 points have no iris"
       for s in ("Left", "Right") for d in ("Down", "In", "Out", "Up")},
    "tongueOut": "the tongue has no landmark; the mouth interior is synthesised closed-tongue",
}

UPPER_INNER = [61, 62, 63]
LOWER_INNER = [67, 66, 65]
UPPER_OUTER = [49, 50, 51, 52, 53]
LOWER_OUTER = [59, 58, 57, 56, 55]
LIPS = UPPER_OUTER + LOWER_OUTER + UPPER_INNER + LOWER_INNER + [48, 54, 60, 64]
# Mandible membership: how fully each point follows the lower jaw.
_MANDIBLE = {0: 0.0, 1: 0.0, 2: 0.07, 3: 0.18, 4: 0.36, 5: 0.6, 6: 0.82, 7: 0.95, 8: 1.0,
             57: 0.82, 58: 0.78, 59: 0.64, 66: 0.82, 67: 0.75, 48: 0.32, 60: 0.34}


def _side(name: str) -> float:
    return 1.0 if name.endswith("Left") else -1.0  # subject's left is image +x


def _mirror_index(i: int) -> int:
    for a, b in _MIRROR:
        if i == a:
            return b
        if i == b:
            return a
    return i


def _mandible() -> np.ndarray:
    w = np.zeros(len(TEMPLATE))
    for i, v in _MANDIBLE.items():
        w[i] = v
        w[_mirror_index(i)] = v
    return w


def _side_weight(side: float, soft: float = 0.06) -> np.ndarray:
    """Per point weight in [0, 1] of belonging to one side of the face (split at x = 0)."""
    return np.clip(0.5 + side * TEMPLATE[:, 0] / (2 * soft), 0.0, 1.0)


def _lip_profile() -> np.ndarray:
    """1 at the lip centre line, 0 beyond the mouth corners: how much a lip point moves."""
    return np.clip(1.0 - (TEMPLATE[:, 0] / 0.2) ** 2, 0.0, 1.0)


def _corner(side: float) -> list[int]:
    return [54, 64] if side > 0 else [48, 60]


def _beside_corner(side: float) -> list[int]:
    right = [49, 59, 61, 67]
    return [_mirror_index(i) for i in right] if side > 0 else right


def _brow(side: float) -> list[int]:
    """Brow points from inner to outer end on one side."""
    return [22, 23, 24, 25, 26] if side > 0 else [21, 20, 19, 18, 17]


def _eye(side: float) -> tuple[list[int], list[int]]:
    """(upper lid, lower lid) points of one eye, paired top to bottom."""
    return ([43, 44], [47, 46]) if side > 0 else ([38, 37], [40, 41])


def _jaw_and_lips(b: dict[str, np.ndarray], new) -> None:
    mand = _mandible()
    d = new()
    d[:, 1], d[:, 2] = 0.22 * mand, -0.05 * mand
    d[[48, 60], 0], d[[54, 64], 0] = 0.02, -0.02  # corners pulled in as the jaw drops
    b["jawOpen"] = d
    # ARKit's mouthClose closes the lips against an open jaw: lower lip up and
    # upper lip down until they meet when mouthClose == jawOpen.
    d = -0.7 * b["jawOpen"]
    d[[i for i in range(len(d)) if i not in LOWER_OUTER + LOWER_INNER + [48, 54, 60, 64]]] = 0
    d[[48, 54, 60, 64]] *= 0.5 / 0.7
    for up, lo in zip(UPPER_INNER + UPPER_OUTER[1:4], LOWER_INNER + LOWER_OUTER[1:4]):
        d[up, 1] = 0.3 * 0.22 * mand[lo]
    b["mouthClose"] = d
    d = new()
    d[:, 2] = 0.06 * mand
    b["jawForward"] = d
    for name, side in (("jawLeft", 1.0), ("jawRight", -1.0)):
        d = new()
        d[:, 0] = side * 0.06 * mand
        b[name] = d


def _mouth_shapes(b: dict[str, np.ndarray], new) -> None:
    prof, x = _lip_profile(), TEMPLATE[:, 0]
    mid = [i for i in LIPS if i not in (48, 54, 60, 64)]
    corners = [48, 54, 60, 64]
    d = new()
    d[corners, 0] = -np.sign(x[corners]) * 0.05
    d[mid, 0] = -0.15 * x[mid]
    d[LIPS, 2] = 0.05
    d[UPPER_INNER, 1], d[LOWER_INNER, 1] = -0.02, 0.03
    d[UPPER_OUTER, 1], d[LOWER_OUTER, 1] = -0.012, 0.015
    b["mouthFunnel"] = d
    d = new()
    d[corners, 0] = -np.sign(x[corners]) * 0.07
    d[mid, 0] = -0.3 * x[mid]
    d[LIPS, 2] = 0.07
    d[UPPER_OUTER, 1], d[LOWER_OUTER, 1] = 0.005, -0.008
    d[UPPER_INNER, 1], d[LOWER_INNER, 1] = 0.004, -0.004
    b["mouthPucker"] = d
    for name, sx in (("mouthLeft", 0.05), ("mouthRight", -0.05)):
        d = new()
        d[LIPS, 0] = sx
        b[name] = d
    upper, lower = UPPER_OUTER + UPPER_INNER, LOWER_OUTER + LOWER_INNER
    for name, idx, dy in (("mouthRollLower", LOWER_OUTER, -0.03),
                          ("mouthRollUpper", UPPER_OUTER, 0.025),
                          ("mouthShrugLower", lower, -0.02),
                          ("mouthShrugUpper", upper, -0.015)):
        d = new()
        d[idx, 1] = dy * prof[idx]
        b[name] = d
    b["mouthShrugLower"][[7, 8, 9], 1] = -0.012


def _sided_mouth(b: dict[str, np.ndarray], new) -> None:
    prof = _lip_profile()
    upper, lower = UPPER_OUTER + UPPER_INNER, LOWER_OUTER + LOWER_INNER
    for suffix in ("Left", "Right"):
        s = _side(suffix)
        w = _side_weight(s)
        c, nb = _corner(s), _beside_corner(s)
        shapes = {  # corner (dx outward, dy), neighbours (dx outward, dy)
            "mouthSmile": ((0.045, -0.04), (0.02, -0.02)),
            "mouthFrown": ((0.01, 0.035), (0.0, 0.015)),
            "mouthDimple": ((0.02, -0.005), (0.008, 0.0)),
            "mouthStretch": ((0.05, 0.012), (0.02, 0.008)),
        }
        for name, ((cx, cy), (nx, ny)) in shapes.items():
            d = new()
            d[c, 0], d[c, 1] = s * cx, cy
            d[nb, 0], d[nb, 1] = s * nx, ny
            b[name + suffix] = d
        b["mouthSmile" + suffix][[_mirror_index(3) if s > 0 else 3,
                                  _mirror_index(4) if s > 0 else 4], 1] = -0.01
        b["mouthDimple" + suffix][c, 2] = -0.02
        d = new()
        d[UPPER_INNER, 1], d[LOWER_INNER, 1] = 0.005, -0.005
        d[UPPER_OUTER, 1], d[LOWER_OUTER, 1] = 0.01, -0.012
        b["mouthPress" + suffix] = d * w[:, None]
        d = new()
        d[lower, 1] = 0.045 * prof[lower]
        b["mouthLowerDown" + suffix] = d * w[:, None]
        d = new()
        d[upper, 1] = -0.035 * prof[upper]
        b["mouthUpperUp" + suffix] = d * w[:, None]


def _upper_face(b: dict[str, np.ndarray], new) -> None:
    d = new()
    d[[21, 22], 1], d[[20, 23], 1], d[[19, 24], 1] = -0.05, -0.035, -0.015
    b["browInnerUp"] = d
    d = new()
    d[[3, 4, 5], 0], d[[11, 12, 13], 0] = -0.03, 0.03
    d[[3, 4, 5, 11, 12, 13] + LIPS, 2] = 0.02
    b["cheekPuff"] = d
    for suffix in ("Left", "Right"):
        s = _side(suffix)
        brow, (up, lo) = _brow(s), _eye(s)
        corners = [45, 42] if s > 0 else [36, 39]
        d = new()
        d[brow, 1] = 0.035 * np.array([1.0, 0.9, 0.7, 0.5, 0.35])
        d[brow, 0] = -s * 0.015 * np.array([1.0, 0.8, 0.5, 0.3, 0.1])
        b["browDown" + suffix] = d
        d = new()
        d[brow[2:], 1] = [-0.02, -0.04, -0.045]
        b["browOuterUp" + suffix] = d
        d = new()
        d[lo, 1], d[up, 1], d[corners, 1] = -0.012, 0.006, -0.003
        b["eyeSquint" + suffix] = d
        d = new()
        d[up, 1], d[lo, 1] = -0.02, 0.005
        b["eyeWide" + suffix] = d
        d = new()
        d[lo, 1], d[corners[0], 1] = -0.008, -0.004
        d[[13, 14] if s > 0 else [3, 2], 1] = -0.01
        b["cheekSquint" + suffix] = d
        d = new()
        ala = [35, 34] if s > 0 else [31, 32]
        d[ala, 1], d[53 if s > 0 else 49, 1], d[brow[0], 1] = [-0.015, -0.01], -0.01, 0.01
        b["noseSneer" + suffix] = d
        # Template blink; fit_rig replaces it with one that meets the photo's own lids.
        d = new()
        d[up] = TEMPLATE[lo] - TEMPLATE[up]
        b["eyeBlink" + suffix] = d


def template_basis() -> np.ndarray:
    """Displacement per unit coefficient for every blendshape [52, 73, 3] (zeros if ignored)."""
    b: dict[str, np.ndarray] = {}

    new = lambda: np.zeros_like(TEMPLATE)  # noqa: E731  (one blendshape's displacements, filled in place)
    _jaw_and_lips(b, new)
    _mouth_shapes(b, new)
    _sided_mouth(b, new)
    _upper_face(b, new)
    missing = set(BLENDSHAPES) - set(b) - set(IGNORED_CHANNELS)
    assert not missing, f"blendshapes neither rendered nor ignored: {sorted(missing)}"
    return np.stack([b.get(n, new()) for n in BLENDSHAPES])


_BASIS = template_basis()
# Lip points that close the photo's own gap, each with the inner pair it follows.
_SEAL_PAIRS = {(61, 67): (61, 67), (62, 66): (62, 66), (63, 65): (63, 65),
               (50, 58): (61, 67), (51, 57): (62, 66), (52, 56): (63, 65)}
_LID_PAIRS = [(37, 41), (38, 40), (43, 47), (44, 46)]


@dataclass(frozen=True)
class Rig:
    """A template fitted to one photo; tensors live on one device."""

    points: torch.Tensor    # [P, 3] neutral identity points, template space
    basis: torch.Tensor     # [52, P, 3] displacement per unit blendshape
    seal: torch.Tensor      # [P, 3] closes the photo's own lip gap
    rotation: torch.Tensor  # [3, 3] photo head pose, template -> camera
    center: torch.Tensor    # [2] pixel position of the head pivot
    scale: float            # pixels per face width

    def to(self, device: str | torch.device) -> "Rig":
        """The same rig with its tensors on ``device``."""
        move = {k: getattr(self, k).to(device) for k in ("points", "basis", "seal", "rotation", "center")}
        return Rig(scale=self.scale, **move)


def _fit_pose(x: np.ndarray, lm: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Weak-perspective fit lm ≈ s·R[:2]·x + t: (s, R [3, 3], t [2])."""
    xm, lmm = x.mean(0), lm.mean(0)
    a, *_ = np.linalg.lstsq(x - xm, lm - lmm, rcond=None)  # [3, 2]
    u, sv, vt = np.linalg.svd(a.T, full_matrices=False)   # nearest scaled rotation rows
    r12 = u @ vt
    rot = np.vstack([r12, np.cross(r12[0], r12[1])])
    s = float(sv.mean())
    return s, rot, lmm - s * r12 @ xm


def fit_rig(landmarks: np.ndarray) -> Rig:
    """Fit the template to detected landmarks [68, 2] px; the neutral rig reprojects onto them."""
    lm = np.asarray(landmarks, dtype=np.float64)
    if lm.shape != (N_LANDMARKS, 2):
        raise ValueError(f"expected landmarks of shape (68, 2), got {lm.shape}")
    s, rot, t = _fit_pose(TEMPLATE[:N_LANDMARKS], lm)
    resid = lm - (s * TEMPLATE[:N_LANDMARKS] @ rot[:2].T + t)
    # A residual in the image plane, taken back to template space with zero depth,
    # reprojects exactly onto the detected point and turns with the head.
    offsets = np.concatenate([resid, np.zeros((N_LANDMARKS, 1))], 1) @ rot / s
    points = TEMPLATE.copy()
    points[:N_LANDMARKS] += offsets
    points[N_LANDMARKS:] += offsets[17:27].mean(0)  # forehead follows the brows
    basis = _BASIS.copy()
    for up, lo in _LID_PAIRS:
        name = "eyeBlinkLeft" if up > 42 else "eyeBlinkRight"
        basis[SPEC[name], up] = points[lo] - points[up]
    seal = np.zeros_like(points)
    for (up, lo), (inner_up, inner_lo) in _SEAL_PAIRS.items():
        gap = points[inner_lo] - points[inner_up]
        if gap[1] > 0:
            seal[up], seal[lo] = gap / 2, -gap / 2
    f32 = lambda a: torch.as_tensor(a, dtype=torch.float32)  # noqa: E731
    return Rig(points=f32(points), basis=f32(basis), seal=f32(seal), rotation=f32(rot),
               center=f32(t), scale=s)


def pose_rotation(pitch: torch.Tensor, yaw: torch.Tensor, roll: torch.Tensor) -> torch.Tensor:
    """Camera-space rotation Rz(roll)·Rx(pitch)·Ry(yaw) for angles [T] -> [T, 3, 3]."""
    one, zero = torch.ones_like(yaw), torch.zeros_like(yaw)
    cy, sy, cp, sp, cr, sr = yaw.cos(), yaw.sin(), pitch.cos(), pitch.sin(), roll.cos(), roll.sin()
    ry = torch.stack([cy, zero, sy, zero, one, zero, -sy, zero, cy], -1).view(-1, 3, 3)
    rx = torch.stack([one, zero, zero, zero, cp, sp, zero, -sp, cp], -1).view(-1, 3, 3)
    rz = torch.stack([cr, -sr, zero, sr, cr, zero, zero, zero, one], -1).view(-1, 3, 3)
    return rz @ rx @ ry


BLINKS = [SPEC["eyeBlinkLeft"], SPEC["eyeBlinkRight"]]


def eyes_open(motion: torch.Tensor) -> torch.Tensor:
    """Motion [T, 58] with the blinks at 0: the face whose open lids a blink closes over."""
    return motion.index_fill(1, torch.tensor(BLINKS, device=motion.device), 0.0)


def coefficients(expr: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """ARKit semantics on top of the linear basis: (coefficients [T, 52], lip seal [T])."""
    e = expr.clamp(0.0, 1.0)  # changed out of place below: motion fitting differentiates through this
    close = e[:, SPEC["mouthClose"]]
    # Rolled-in lips half close the gap: in an "f" the upper teeth still show.
    seal = torch.stack([close, e[:, SPEC["mouthPressLeft"]], e[:, SPEC["mouthPressRight"]],
                        0.5 * e[:, SPEC["mouthRollLower"]], 0.5 * e[:, SPEC["mouthRollUpper"]]],
                       -1).amax(-1)
    seal = (seal / SEAL_FULL).clamp(max=1.0)
    # mouthClose only cancels the lip part of jawOpen; beyond it lips would cross.
    idx = torch.tensor([SPEC["mouthClose"]], device=e.device)
    e = e.index_copy(1, idx, torch.minimum(close, e[:, SPEC["jawOpen"]])[:, None])
    return e, seal


def lip_seal(motion: torch.Tensor) -> torch.Tensor:
    """How far the photo's own lip gap is closed, [T] in [0, 1], for motion [T, 58]."""
    return coefficients(motion[:, SPEC.expression])[1]


def project_points(rig: Rig, motion: torch.Tensor | np.ndarray) -> torch.Tensor:
    """All rig points (68 landmarks + forehead) for motion [T, 58] -> pixels [T, 73, 2]."""
    m = torch.as_tensor(motion, dtype=torch.float32, device=rig.points.device)
    if m.ndim != 2 or m.shape[1] != SPEC.dim:
        raise ValueError(f"motion must be [T, {SPEC.dim}], got {tuple(m.shape)}")
    e, seal = coefficients(m[:, SPEC.expression])
    x = rig.points + torch.einsum("tc,cpd->tpd", e, rig.basis) + seal[:, None, None] * rig.seal
    pose = m[:, SPEC.pose]
    rot = pose_rotation(pose[:, 0], pose[:, 1], pose[:, 2]) @ rig.rotation
    cam = x @ rot.transpose(1, 2)
    tz = pose[:, 5].clamp(max=0.5 * CAMERA_DISTANCE)
    k = (CAMERA_DISTANCE / (CAMERA_DISTANCE - tz)) * rig.scale
    shift = rig.center + rig.scale * pose[:, 3:5]
    return k[:, None, None] * cam[..., :2] + shift[:, None, :]


def project(rig: Rig, motion: torch.Tensor | np.ndarray) -> torch.Tensor:
    """Landmarks of the moved face for motion [T, 58] -> pixels [T, 68, 2]."""
    return project_points(rig, motion)[:, :N_LANDMARKS]
