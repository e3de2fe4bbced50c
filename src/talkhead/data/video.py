"""``talkhead data video``: a person's own clips (a face and speech) as latent-engine training crops.

Each video is read at 25 fps with its audio at 16 kHz; dlib's 68 points are found in every frame and
the 58-channel motion is fitted to them: the rig fitted to the first frame is the neutral face, and
each frame's blendshapes and head pose are those whose projected points best match its landmarks
(least squares, solved for all frames at once by Adam). Crops are framed as ``data faces`` frames them,
around the first frame's face, so a clip's crops, motion, audio and reference (its first crop) form
one shard in the same folder format (``load_faces`` reads it). A video without audio or without a
face is skipped and listed; a face lost mid-clip ends the clip there (kept if at least a second long).
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.errors import InputError
from talkhead.util import atomic_write

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v"}


@dataclass(frozen=True)
class VideoConfig:
    size: int = 128
    framing: float = 1.9  # as FacesConfig's
    fps: int = 25
    min_frames: int = 25  # a clip cut short by a lost face is kept if at least this long
    fit_iters: int = 300
    reg: float = 1e-3  # L2 pull of the blendshapes toward 0, against fitting landmark noise


def read_frames(path: Path, fps: int = 25) -> np.ndarray:
    """The video's frames resampled to ``fps`` (nearest earlier frame), uint8 [T, H, W, 3]."""
    import av

    out, times = [], []
    with av.open(str(path)) as c:
        if not c.streams.video:
            raise InputError(f"{path.name} has no video track")
        for f in c.decode(video=0):
            times.append(float(f.time or 0.0))
            out.append(f.to_ndarray(format="rgb24"))
    if not out:
        raise InputError(f"{path.name} has no frames")
    t = np.asarray(times)
    want = np.arange(0.0, t[-1] + 0.5 / fps, 1.0 / fps)
    idx = np.clip(np.searchsorted(t, want + 1e-6, side="right") - 1, 0, len(out) - 1)
    return np.stack([out[i] for i in idx])


def landmarks(frames: np.ndarray, name: str) -> list[np.ndarray]:
    """68 points per frame until the first frame without a face."""
    from talkhead.render.face import detect_face

    pts = []
    for i, f in enumerate(frames):
        try:
            pts.append(detect_face(f, f"{name} frame {i}").landmarks)
        except InputError:
            break
    return pts


def fit_motion(points: np.ndarray, cfg: VideoConfig = VideoConfig()) -> np.ndarray:
    """Motion [T, 58] whose rig points (the rig of frame 0) reproject onto landmarks [T, 68, 2]."""
    from talkhead.render.template import N_LANDMARKS, fit_rig, project_points
    from talkhead.rig.spec import SPEC

    rig = fit_rig(points[0])
    target = torch.from_numpy(np.asarray(points, np.float32))
    m = torch.zeros(len(points), SPEC.dim, requires_grad=True)
    opt = torch.optim.Adam([m], lr=0.02)
    expr = torch.zeros(SPEC.dim, dtype=torch.bool)
    expr[SPEC.expression] = True
    for _ in range(cfg.fit_iters):
        err = (project_points(rig, m)[:, :N_LANDMARKS] - target) / rig.scale
        loss = err.pow(2).sum(-1).mean() + cfg.reg * m[:, expr].pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            m[:, expr] = m[:, expr].clamp(0, 1)  # blendshapes are weights in [0, 1]
    return m.detach().numpy()


def video_clip(path: Path, cfg: VideoConfig = VideoConfig()) -> dict:
    """One video -> {frames [T, S, S, 3], motion [T, 58], audio int16, reference [S, S, 3], lost_at}."""
    from talkhead.audio.io import load_audio
    from talkhead.render.face import detect_face
    from talkhead.render.warp import frame_photo

    audio = load_audio(path)  # a video without audio is refused here, by name
    frames = read_frames(path, cfg.fps)
    pts = landmarks(frames, path.name)
    if len(pts) < cfg.min_frames:
        where = "no face in its first frame" if not pts else f"the face is lost at frame {len(pts)}"
        raise InputError(f"{path.name}: {where} (need {cfg.min_frames} frames with a face)")
    face0 = detect_face(frames[0], path.name)
    crops = np.stack([frame_photo(f, face0, (cfg.size, cfg.size), cfg.framing)[0] for f in frames[:len(pts)]])
    n = len(pts)
    audio = audio[: round(n / cfg.fps * 16_000)]
    return {"frames": crops, "motion": fit_motion(np.stack(pts), cfg).astype(np.float32),
            "audio": np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16), "reference": crops[0],
            "lost_at": n if n < len(frames) else None}


def video_folder(src: str | Path, out: str | Path, cfg: VideoConfig = VideoConfig(), progress=None) -> dict:
    """Every video in ``src`` (or ``src`` itself) as a shard in ``out``; returns the report (kept, skipped)."""
    src, out = Path(src), Path(out)
    files = [src] if src.is_file() else sorted(p for p in src.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    if not files:
        raise InputError(f"no videos ({', '.join(sorted(VIDEO_SUFFIXES))}) in {src}")
    (out / "shards").mkdir(parents=True, exist_ok=True)
    rows, skipped = [], []
    for i, p in enumerate(files):
        vid = hashlib.sha256(p.read_bytes()).hexdigest()[:12]
        shard = out / "shards" / f"{vid}.npz"
        try:
            if not shard.exists():  # a finished video is kept: the run resumes after it
                clip = video_clip(p, cfg)
                buf = io.BytesIO()
                np.savez(buf, **{f"{vid}/frames": clip["frames"], f"{vid}/motion": clip["motion"],
                                 f"{vid}/audio": clip["audio"], "reference": clip["reference"]})
                atomic_write(shard, buf.getvalue())
            frames = len(np.load(shard)[f"{vid}/motion"])
            rows.append({"id": f"{vid}/{vid}", "photo": vid, "photo_name": p.name, "clip": vid, "frames": frames,
                         "split": "train", "shard": f"shards/{shard.name}"})
        except InputError as e:
            skipped.append({"file": p.name, "why": str(e)})
        if progress is not None:
            progress(i + 1, len(files))
    atomic_write(out / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    report = {"config": asdict(cfg), "kept": [r["photo_name"] for r in rows], "skipped": skipped}
    atomic_write(out / "report.json", json.dumps(report, indent=1).encode())
    return report
