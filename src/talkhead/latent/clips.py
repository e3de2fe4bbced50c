"""``talkhead data video``: a person's own clips (a face and speech) as latent-engine training crops.

Each video is read at 25 fps with its audio at 16 kHz and its motion captured (``face.capture``). Crops are
framed as ``data faces`` frames them, around the first frame's face, so a clip's crops, motion, audio and
reference (its first crop) form one shard in the same folder format (``load_faces`` reads it). A video
without audio or without a face is skipped and listed; a face lost mid-clip ends the clip there (kept if
at least a second long).
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict
from pathlib import Path

import numpy as np

from talkhead.errors import InputError
from talkhead.face.capture import VideoConfig, fit_motion
from talkhead.util import atomic_write, file_sha256
from talkhead.video import VIDEO_SUFFIXES, iter_frames


def video_clip(path: Path, cfg: VideoConfig = VideoConfig()) -> dict:
    """One video -> {frames [T, S, S, 3], motion [T, 58], audio int16, reference [S, S, 3], lost_at}: read as a
    stream until the first frame without a face, each frame kept only as its crop."""
    from talkhead.audio.io import load_audio
    from talkhead.face.detect import detect_face
    from talkhead.warp.renderer import frame_photo

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
