"""Facial capture: the 58-channel motion of a face video, fitted to dlib's 68 points in every frame.

The rig fitted to the first frame with a face is the neutral face; each frame's blendshapes and head pose
are those whose projected points best match its landmarks (least squares, solved for all frames at once by
Adam). ``capture`` (``talkhead motion --from-video``) follows one face through any video, silent or not,
and fills the frames where it is lost from either side.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.video import frame_estimate, frame_runs, iter_frames


@dataclass(frozen=True)
class VideoConfig:
    size: int = 128
    framing: float = 1.9  # as FacesConfig's
    fps: int = FPS
    min_frames: int = 25  # a clip cut short by a lost face is kept if at least this long
    fit_iters: int = 300
    reg: float = 1e-3  # L2 pull of the blendshapes toward 0, against fitting landmark noise


def fit_motion(points: np.ndarray, cfg: VideoConfig = VideoConfig(), neutral: np.ndarray | None = None) -> np.ndarray:
    """Motion [T, 58] whose rig points reproject onto landmarks [T, 68, 2]; the rig is fitted to ``neutral``
    [68, 2] (in the same pixels), by default frame 0: its face is the motion's zero."""
    # The tensors are small ([T, 73, 3]): one thread is as fast as any on an idle machine, and on a busy
    # one a second thread waiting for its core made a 765-frame fit 4-20x slower (measured on 2 cores).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(points, cfg, points[0] if neutral is None else neutral)
    finally:
        torch.set_num_threads(threads)


def _fit(points: np.ndarray, cfg: VideoConfig, neutral: np.ndarray) -> np.ndarray:
    from talkhead.face.template import N_LANDMARKS, fit_rig, project_points
    from talkhead.rig.spec import SPEC

    rig = fit_rig(neutral)
    target = torch.from_numpy(np.asarray(points, np.float32))
    m = torch.zeros(len(points), SPEC.dim, requires_grad=True)
    opt = Adam(m, lr=0.02)
    expr = torch.zeros(SPEC.dim, dtype=torch.bool)
    expr[SPEC.expression] = True
    for _ in range(cfg.fit_iters):
        err = (project_points(rig, m)[:, :N_LANDMARKS] - target) / rig.scale
        loss = err.pow(2).sum(-1).mean() + cfg.reg * m[:, expr].pow(2).mean()
        m.grad = None
        loss.backward()
        opt.step()
        with torch.no_grad():
            m[:, expr] = m[:, expr].clamp(0, 1)  # blendshapes are weights in [0, 1]
    return m.detach().numpy()


class Adam:
    """torch.optim.Adam's step (its defaults: betas 0.9, 0.999, eps 1e-8), for the one tensor a fit moves. Building
    torch's first optimiser in a process imports torch._dynamo (1.1 s here), which every capture paid before its
    first frame was fitted; the same arithmetic, in the same order, gives the same numbers (tests/face)."""

    def __init__(self, p: torch.Tensor, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        self.p, self.lr, self.betas, self.eps, self.t = p, lr, betas, eps, 0
        self.avg, self.sq = torch.zeros_like(p), torch.zeros_like(p)

    @torch.no_grad()
    def step(self) -> None:
        (b1, b2), g = self.betas, self.p.grad
        self.t += 1
        self.avg.lerp_(g, 1 - b1)
        self.sq.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (self.sq.sqrt() / (1 - b2 ** self.t) ** 0.5).add_(self.eps)
        self.p.addcdiv_(self.avg, denom, value=-self.lr / (1 - b1 ** self.t))


def capture(path: str | Path, cfg: VideoConfig = VideoConfig(), progress: bool = False,
            say: Callable[[str], None] | None = None) -> dict:
    """A face video -> its motion: {"motion" [T, 58] float32 at ``cfg.fps``, "lost" [(first, last), ...],
    "faces" (the most faces seen in one frame), "size" (width, height)}.

    Any container, frame rate or size PyAV reads; no audio is needed. Where a frame shows several faces
    the largest is taken, then followed from frame to frame (the detection overlapping the last one).
    Frames where no face is found (numbered from 0) are listed in ``lost`` and filled from the motion
    either side: interpolated between the neighbours, held before the first face and after the last.
    The rig is fitted to the first frame with a face (its neutral), as ``video_clip`` does. ``say``
    gets each note (several faces, lost frames) once. A video with no face at all is an InputError.
    """
    path = Path(path)
    say = say or (lambda _msg: None)
    pts, found, n, info = _track_face(path, cfg.fps, progress)
    if not found:
        raise InputError(f"no face found in any of the {n} frames of {path.name}")
    if info["faces"] > 1:
        say(f"{info['faces']} faces in frame {info['several_at']} of {path.name}: following the largest")
    fitted = fit_motion(np.stack(pts), cfg)
    idx = np.arange(n)
    motion = np.stack([np.interp(idx, found, fitted[:, c]) for c in range(fitted.shape[1])], 1)
    lost = frame_runs(np.setdiff1d(idx, found))
    if lost:
        where = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in lost)
        say(f"face lost in frames {where} of {path.name} ({n - len(found)} of {n}): "
            "filled from the motion either side")
    return {"motion": motion.astype(np.float32), "lost": lost, "faces": info["faces"], "size": info["size"]}


def _track_face(path: Path, fps: int, progress: bool) -> tuple[list[np.ndarray], list[int], int, dict]:
    """Landmarks [68, 2] of the followed face in each frame that has one, those frames' numbers, the
    number of frames, and {"faces": most in one frame, "several_at": first frame with more, "size"}."""
    from tqdm import tqdm

    from talkhead.face.detect import detect_faces

    pts, found, last, info = [], [], None, {"faces": 0, "several_at": None, "size": None}
    bar = tqdm(total=frame_estimate(path, fps), unit="frame", desc="landmarks", disable=not progress)
    n = 0
    for n, frame in enumerate(iter_frames(path, fps), 1):
        info["size"] = info["size"] or (frame.shape[1], frame.shape[0])
        faces = detect_faces(frame, f"{path.name} frame {n - 1}")
        if len(faces) > max(1, info["faces"]) and info["several_at"] is None:
            info["several_at"] = n - 1
        info["faces"] = max(info["faces"], len(faces))
        if faces:
            last = follow(faces, last)
            pts.append(last.landmarks)
            found.append(n - 1)
        bar.update(1)
    bar.close()
    return pts, found, n, info


def follow(faces: list, last):
    """The face to follow: the one overlapping the last followed face most, else the largest (first)."""
    if last is None or len(faces) == 1:
        return faces[0]
    overlap = [_iou(f.box, last.box) for f in faces]
    best = int(np.argmax(overlap))
    return faces[best] if overlap[best] > 0.3 else faces[0]


def _iou(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Intersection over union of two boxes (x0, y0, x1, y1)."""
    w = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0
