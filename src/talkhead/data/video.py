"""``talkhead data video``: a person's own clips (a face and speech) as latent-engine training crops.

Each video is read at 25 fps with its audio at 16 kHz; dlib's 68 points are found in every frame and
the 58-channel motion is fitted to them: the rig fitted to the first frame is the neutral face, and
each frame's blendshapes and head pose are those whose projected points best match its landmarks
(least squares, solved for all frames at once by Adam). Crops are framed as ``data faces`` frames them,
around the first frame's face, so a clip's crops, motion, audio and reference (its first crop) form
one shard in the same folder format (``load_faces`` reads it). A video without audio or without a
face is skipped and listed; a face lost mid-clip ends the clip there (kept if at least a second long).

``capture`` (``talkhead motion --from-video``) is the same fit for any face video, silent or not: the
motion of every frame, frames where the face is lost filled from either side and listed.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.errors import InputError
from talkhead.util import atomic_write, file_sha256

VIDEO_SUFFIXES = {".mp4", ".mov", ".mkv", ".webm", ".avi", ".m4v"}


@dataclass(frozen=True)
class VideoConfig:
    size: int = 128
    framing: float = 1.9  # as FacesConfig's
    fps: int = 25
    min_frames: int = 25  # a clip cut short by a lost face is kept if at least this long
    fit_iters: int = 300
    reg: float = 1e-3  # L2 pull of the blendshapes toward 0, against fitting landmark noise


MAX_SECONDS = 3600.0  # a video's frames are read up to an hour: past it, a named error, not hours of filling
_limit = [MAX_SECONDS]  # the process's limit: ``video_limit`` (the commands' --max-seconds) sets it


@contextmanager
def video_limit(seconds: float | None) -> Iterator[None]:
    """Within the block, videos whose frame times run past ``seconds`` are refused (None: keep the limit)."""
    if seconds is not None and not 0 < seconds <= 24 * 3600:
        raise InputError(f"--max-seconds must be above 0 and at most 86400, got {seconds:g}")
    old = _limit[0]
    _limit[0] = old if seconds is None else float(seconds)
    try:
        yield
    finally:
        _limit[0] = old


def _too_long(path: Path, seconds: float, limit: float) -> InputError:
    return InputError(f"{path.name} runs past {limit:g} s (to {seconds:.0f} s): cut it shorter or raise --max-seconds")


def iter_frames(path: str | Path, fps: int = 25, max_seconds: float | None = None) -> Iterator[np.ndarray]:
    """The video's frames resampled to ``fps`` (each time takes the nearest earlier frame), uint8 [H, W, 3]
    one at a time, so a long video is never held whole, and upright (a display rotation applied). Any
    container and frame rate PyAV decodes; the audio is not looked at. A missing, corrupt or frameless
    file, or one that runs past ``max_seconds`` (default the ``video_limit``, an hour), is an InputError
    naming it: by the container's stated length before a frame is decoded, and by the frames' own times
    (a few frames hours apart would otherwise be repeated for hours)."""
    import av

    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such video: {path}")
    limit = _limit[0] if max_seconds is None else max_seconds
    step, k, prev, t_prev, last_gap = 1.0 / fps, 0, None, 0.0, 1.0 / fps
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise InputError(f"{path.name} has no video track")
            if c.duration is not None and c.duration / 1e6 > limit:
                raise _too_long(path, c.duration / 1e6, limit)
            for f in c.decode(video=0):
                t = float(f.time or 0.0)
                if t > limit:
                    raise _too_long(path, t, limit)
                while prev is not None and k * step < t - 1e-6:  # times before this frame show the previous one
                    yield prev
                    k += 1
                if prev is not None and t > t_prev:
                    last_gap = t - t_prev
                prev, t_prev = _upright(f), t
    except InputError:
        raise
    except (av.error.FFmpegError, OSError, ValueError) as e:  # not a video, or broken part-way
        raise InputError(f"cannot read video {path.name}: {e}") from None
    if prev is None:
        raise InputError(f"{path.name} has no frames")
    # The last frame lasts as long as the one before it did: 2 s at 60 fps are 50 frames at 25, not 51.
    while k * step < t_prev + last_gap - 1e-6:
        yield prev
        k += 1


def _upright(frame) -> np.ndarray:
    """A decoded frame as shown: a phone's portrait video is stored on its side with a display rotation."""
    img = frame.to_ndarray(format="rgb24")
    quarter = round((getattr(frame, "rotation", 0) or 0) / 90) % 4  # counter-clockwise, as np.rot90 turns
    return np.ascontiguousarray(np.rot90(img, quarter)) if quarter else img


def read_frames(path: Path, fps: int = 25) -> np.ndarray:
    """The video's frames resampled to ``fps`` (nearest earlier frame), uint8 [T, H, W, 3]."""
    return np.stack(list(iter_frames(path, fps)))


def frame_estimate(path: str | Path, fps: int = 25) -> int | None:
    """How many frames ``iter_frames`` will yield, from the container's duration (for a progress bar)."""
    import av

    try:
        with av.open(str(path)) as c:
            v = c.streams.video[0]
            secs = float(v.duration * v.time_base) if v.duration else (c.duration or 0) / 1e6
    except (av.error.FFmpegError, OSError, ValueError, IndexError):
        return None
    return round(secs * fps) or None


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
    from talkhead.render.template import N_LANDMARKS, fit_rig, project_points
    from talkhead.rig.spec import SPEC

    rig = fit_rig(neutral)
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
    """One video -> {frames [T, S, S, 3], motion [T, 58], audio int16, reference [S, S, 3], lost_at}: read as a
    stream until the first frame without a face, each frame kept only as its crop."""
    from talkhead.audio.io import load_audio
    from talkhead.render.face import detect_face
    from talkhead.render.warp import frame_photo

    audio = load_audio(path)  # a video without audio is refused here, by name
    pts, crops, face0, lost_at = [], [], None, None
    for i, frame in enumerate(iter_frames(path, cfg.fps)):
        try:
            face = detect_face(frame, f"{path.name} frame {i}")
        except InputError:
            lost_at = i  # the clip ends at its first frame without a face
            break
        face0 = face0 or face  # crops are framed around the first face, as ``data faces`` frames them
        pts.append(face.landmarks)
        crops.append(frame_photo(frame, face0, (cfg.size, cfg.size), cfg.framing)[0])
    if len(pts) < cfg.min_frames:
        where = "no face in its first frame" if not pts else f"the face is lost at frame {len(pts)}"
        raise InputError(f"{path.name}: {where} (need {cfg.min_frames} frames with a face)")
    crops = np.stack(crops)
    audio = audio[: round(len(pts) / cfg.fps * 16_000)]
    return {"frames": crops, "motion": fit_motion(np.stack(pts), cfg).astype(np.float32),
            "audio": np.round(np.clip(audio, -1, 1) * 32767).astype(np.int16), "reference": crops[0],
            "lost_at": lost_at}


def video_folder(src: str | Path, out: str | Path, cfg: VideoConfig = VideoConfig(), progress=None) -> dict:
    """Every video in ``src`` (or ``src`` itself) as a shard in ``out``; returns the report (kept, skipped)."""
    src, out = Path(src), Path(out)
    files = [src] if src.is_file() else sorted(p for p in src.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    if not files:
        raise InputError(f"no videos ({', '.join(sorted(VIDEO_SUFFIXES))}) in {src}")
    (out / "shards").mkdir(parents=True, exist_ok=True)
    rows, skipped = [], []
    for i, p in enumerate(files):
        vid = file_sha256(p)[:12]  # by content, read in chunks
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

    from talkhead.render.face import detect_faces

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
            last = _follow(faces, last)
            pts.append(last.landmarks)
            found.append(n - 1)
        bar.update(1)
    bar.close()
    return pts, found, n, info


def _follow(faces: list, last):
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


def frame_runs(frames: np.ndarray) -> list[tuple[int, int]]:
    """Sorted frame numbers -> runs of consecutive ones as (first, last)."""
    runs: list[tuple[int, int]] = []
    for f in (int(v) for v in frames):
        if runs and f == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], f)
        else:
            runs.append((f, f))
    return runs
