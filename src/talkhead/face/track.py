"""A face followed through a stream of frames, and frames read again by number: video in bounded memory.

A phone's two minutes of 1080p are 18 GB as decoded frames; of 4K, 75 GB. So a video is read twice, never
held: once to follow the face (its points, boxes and the mirror cue need each frame only while it is
there), and once more for the frames the first pass chose, each cut to what will be kept (an aligned crop,
a base frame at the size it is drawn at) as it goes by. Peak memory is one frame plus what is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from talkhead.config import FPS
from talkhead.errors import InputError


@dataclass
class FaceTrack:
    """What following the largest face through a video finds."""

    keep: list[int]  # numbers of the frames with a face
    points: np.ndarray  # [N, 68, 2] float32: their landmarks, frame pixels
    boxes: np.ndarray  # [N, 4] float32: the boxes the points were found in (left, top, right, bottom)
    mirror: np.ndarray  # [N] float32: the mirror cue of each (``face.occlusion.mirror_gap``); empty if not asked
    frames: int  # frames read
    size: tuple[int, int]  # (width, height) of the frames
    faces: int  # faces seen in the first frame that has one


def track_faces(frames: Iterable[np.ndarray], name: str, progress: bool = False, redetect: int = 10,
                mirror: bool = False, total: int | None = None) -> FaceTrack:
    """Follow the largest face through ``frames`` (an array or a stream: each frame is looked at once).

    dlib's detector runs every ``redetect`` frames (and whenever the track is lost); between, the landmark
    predictor runs in the last detection's box moved with the face: the detector is ~50x slower than the
    predictor. A failed detection ends the track until the next one succeeds. ``mirror`` also takes the
    mirror cue of each frame with a face (it needs the frame itself, so it is taken then).
    """
    import dlib
    from tqdm import tqdm

    from talkhead.face.detect import detect_face, detect_faces, dlib_models
    from talkhead.face.occlusion import mirror_gap

    _, predictor = dlib_models()
    keep, pts, boxes, cues, box, faces, size, n = [], [], [], [], None, 0, (0, 0), 0
    for n, f in enumerate(tqdm(frames, desc=f"landmarks {name}", unit="frame", total=total, disable=not progress), 1):
        i, size = n - 1, (f.shape[1], f.shape[0])
        if box is None or i % redetect == 0:
            try:
                face = detect_face(f, f"{name} frame {i}")
            except InputError:
                box = None
                continue
            p, box = face.landmarks, face.box
            faces = faces or len(detect_faces(f, name))  # counted once: a second face is said, not followed
        else:
            shape = predictor(f, dlib.rectangle(*(int(round(v)) for v in box)))
            p = np.array([[q.x, q.y] for q in shape.parts()], np.float32)
            shift = p.mean(0) - pts[-1].mean(0)
            box = (box[0] + shift[0], box[1] + shift[1], box[2] + shift[0], box[3] + shift[1])
        keep.append(i)
        pts.append(p)
        boxes.append(box)
        if mirror:
            cues.append(mirror_gap(f, p, box))
    return FaceTrack(keep, np.asarray(pts, np.float32).reshape(-1, 68, 2), np.asarray(boxes, np.float32).reshape(-1, 4),
                     np.asarray(cues, np.float32), n, size, faces)


def face_points(frames: Iterable[np.ndarray], name: str, progress: bool = False, redetect: int = 10
                ) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(numbers of the frames with a face, their 68 points [N, 68, 2], their boxes [N, 4]): ``track_faces``."""
    t = track_faces(frames, name, progress, redetect)
    return t.keep, t.points, t.boxes


def track_video(path: str | Path, fps: int = FPS, progress: bool = False, mirror: bool = False) -> FaceTrack:
    """``track_faces`` over a video file's frames at ``fps``, streamed (``video.iter_frames``)."""
    from talkhead.video import frame_estimate, iter_frames

    return track_faces(iter_frames(path, fps), Path(path).name, progress, mirror=mirror,
                       total=frame_estimate(path, fps))


def cached_track(path: str | Path, fps: int, folder: str | Path | None, progress: bool = False) -> FaceTrack:
    """``track_video(path, fps, mirror=True)``, kept in ``folder`` under the video's content hash (None: not kept):
    following the face is most of the time a video takes to ingest, and a run killed after it resumes here."""
    import io

    from talkhead.util import atomic_write, file_sha256

    if folder is None:
        return track_video(path, fps, progress, mirror=True)
    keep = Path(folder) / f"track-{file_sha256(path)[:16]}-{fps}.npz"
    if keep.is_file():
        z = np.load(keep)
        return FaceTrack(z["keep"].tolist(), z["points"], z["boxes"], z["mirror"], int(z["frames"]),
                         tuple(int(v) for v in z["size"]), int(z["faces"]))
    t = track_video(path, fps, progress, mirror=True)
    buf = io.BytesIO()
    np.savez(buf, keep=np.asarray(t.keep, np.int64), points=t.points, boxes=t.boxes, mirror=t.mirror,
             frames=np.int64(t.frames), size=np.asarray(t.size, np.int64), faces=np.int64(t.faces))
    atomic_write(keep, buf.getvalue())
    return t


def frames_at(path: str | Path, numbers: Iterable[int], fps: int = FPS) -> Iterator[tuple[int, np.ndarray]]:
    """(number, frame) for each of ``numbers`` (as ``iter_frames`` counts them), in order, read in one pass that
    stops after the last; a number the video does not reach is an InputError (the file changed under us)."""
    from talkhead.video import iter_frames

    wanted = sorted(set(int(k) for k in numbers))
    if not wanted:
        return
    j = 0
    for i, frame in enumerate(iter_frames(path, fps)):
        if i == wanted[j]:
            yield i, frame
            j += 1
            if j == len(wanted):
                return
    raise InputError(f"{Path(path).name} ends before frame {wanted[j]}: was it changed while being read?")


def cut_frames(path: str | Path, numbers: list[int], cut: Callable[[int, np.ndarray], np.ndarray], fps: int = FPS,
               progress: bool = False, desc: str = "frames") -> list[np.ndarray]:
    """``cut(position, frame)`` of each frame in ``numbers`` (sorted), read again from the video: only what
    ``cut`` returns is kept (a crop, a smaller copy)."""
    from tqdm import tqdm

    if list(numbers) != sorted(set(numbers)):
        raise ValueError("cut_frames takes frame numbers in order, each once")
    out = []
    with tqdm(total=len(numbers), desc=desc, unit="frame", disable=not progress) as bar:
        for j, (_, frame) in enumerate(frames_at(path, numbers, fps)):
            out.append(cut(j, frame))
            bar.update(1)
    return out


class ForwardFrames:
    """Frames ``numbers`` of a video as a read-only sequence read forward: position k is video frame numbers[k].
    Indexing (a position or an array of them) reads on to the furthest position asked; positions asked in the
    last call stay at hand and earlier ones are let go, so a renderer that walks its base in batches holds one
    batch, whatever the video's length. Asking for a position already let go is a ValueError."""

    def __init__(self, path: str | Path, numbers: list[int], size: tuple[int, int], fps: int = FPS) -> None:
        self.numbers, self.shape = list(numbers), (len(numbers), size[1], size[0], 3)
        self._frames = frames_at(path, self.numbers, fps)
        self._read = 0  # positions read so far
        self._held: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, idx):
        want = np.atleast_1d(np.asarray(idx, int))
        if want.size and (want.min() < 0 or want.max() >= len(self)):
            raise IndexError(f"positions {want.min()}..{want.max()} of {len(self)} frames")
        while self._read <= (want.max() if want.size else -1):
            self._held[self._read] = next(self._frames)[1]
            self._read += 1
        missing = [int(k) for k in want if int(k) not in self._held]
        if missing:
            raise ValueError(f"frame positions {missing[:3]} were read and let go: ForwardFrames reads forward only")
        out = np.stack([self._held[int(k)] for k in want]) if want.size else np.zeros((0, *self.shape[1:]), np.uint8)
        if np.ndim(idx) > 0:  # a batch: what comes before it is let go
            lo = int(want.min()) if want.size else self._read
            self._held = {k: v for k, v in self._held.items() if k >= lo}
        return out if np.ndim(idx) > 0 else out[0]
