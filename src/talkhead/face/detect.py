"""Face registration: find the face in a photo and its 68 iBUG landmarks with dlib.

Landmarks are returned as float32 ``[68, 2]`` arrays of (x, y) pixel
coordinates in the full-resolution image (pixel centres at integers). A photo's
registration is cached by the image's content hash (``registration_cache()``),
so the second video of the same photo neither loads dlib's models (0.6 s) nor
searches the image again.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from talkhead.errors import InputError
from talkhead.util import cache_dir

PREDICTOR_FILE = "shape_predictor_68_face_landmarks.dat"
DETECT_MAX_SIDE = 640
# Detections whose area is within this fraction of the largest count as equally
# large; among those the most confident wins (dlib's false positives on busy
# backgrounds can be as large as the real face).
_SIZE_TIE = 0.8


@dataclass(frozen=True)
class Face:
    """One registered face: landmarks [68, 2] (x, y) px and its box (x0, y0, x1, y1)."""

    landmarks: np.ndarray
    box: tuple[int, int, int, int]

    @property
    def width(self) -> float:
        """Face width in pixels: jaw contour end to end (points 0 and 16)."""
        return float(np.linalg.norm(self.landmarks[16] - self.landmarks[0]))


def model_path(name: str = PREDICTOR_FILE) -> Path:
    """Path of one of dlib's models inside ``face_recognition_models`` (by default the 68-point predictor)."""
    # importlib.resources.files() would import the package, whose __init__ needs
    # pkg_resources (gone from modern setuptools); find_spec locates it without
    # running it.
    spec = importlib.util.find_spec("face_recognition_models")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("face_recognition_models is not installed")
    for root in spec.submodule_search_locations:
        path = Path(root) / "models" / name
        if path.is_file():
            return path
    raise RuntimeError(f"{name} not found in face_recognition_models")


@functools.lru_cache(maxsize=1)
def dlib_models():
    import dlib

    return dlib.get_frontal_face_detector(), dlib.shape_predictor(str(model_path()))


def default_photo() -> np.ndarray:
    """The demo photo (scikit-image's astronaut), uint8 [512, 512, 3].

    Read straight from the PNG that scikit-image ships: ``skimage.data`` itself costs 0.2 s to import.
    """
    spec = importlib.util.find_spec("skimage")
    png = Path(spec.origin).parent / "data" / "astronaut.png" if spec and spec.origin else None
    if png is None or not png.is_file():
        raise InputError("the demo photo comes with scikit-image, which is not installed; give --image PHOTO")
    return load_image(png)


def as_rgb(image: np.ndarray, name: str = "photo") -> np.ndarray:
    """Any 2D/3D image array as contiguous uint8 RGB [H, W, 3]."""
    img = np.asarray(image)
    if img.ndim == 2:
        img = np.repeat(img[:, :, None], 3, axis=2)
    if img.ndim != 3 or img.shape[2] not in (1, 3, 4) or min(img.shape[:2]) < 8:
        raise InputError(f"{name} is not an image (array of shape {img.shape})")
    if img.shape[2] == 1:
        img = np.repeat(img, 3, axis=2)
    if img.shape[2] == 4:
        img = img[:, :, :3]
    if img.dtype != np.uint8:
        scale = 255.0 if np.issubdtype(img.dtype, np.floating) and img.max() <= 1.0 else 1.0
        img = np.clip(img.astype(np.float32) * scale + 0.5, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(img)


def load_image(path: str | Path) -> np.ndarray:
    """Read an image file as uint8 RGB [H, W, 3]; InputError if missing or unreadable."""
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"photo not found: {path}")
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            arr = np.asarray(im, dtype=np.uint8)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InputError(f"cannot read image {path.name}: {exc}") from None
    return as_rgb(arr, path.name)


def _pick_face(rects, scores):
    """The largest detection; near-ties in size go to the higher score."""
    return rects[_face_order(rects, scores)[0]]


def _face_order(rects, scores) -> list[int]:
    """Detections in the order they are preferred: the near-largest by score, then the rest by size."""
    areas = np.array([r.width() * r.height() for r in rects], dtype=np.float64)
    big = areas >= _SIZE_TIE * areas.max()
    first = sorted(np.flatnonzero(big), key=lambda i: -scores[i])
    rest = sorted(np.flatnonzero(~big), key=lambda i: -areas[i])
    return [int(i) for i in first + rest]


def registration_cache() -> Path | None:
    """Where registrations are kept (``util.cache_dir``)."""
    return cache_dir()


def _cache_file(img: np.ndarray, max_side: int) -> Path | None:
    root = registration_cache()
    if root is None:
        return None
    h = hashlib.sha256(f"v1 {img.shape} {max_side} {model_path().stat().st_size}".encode())
    h.update(np.ascontiguousarray(img).data)  # hashed in place: a copy of a large photo is hundreds of MB
    return root / "faces" / f"{h.hexdigest()[:32]}.npz"


def _load_cached(path: Path | None) -> Face | None:
    try:
        with np.load(path) as z:
            return Face(landmarks=z["landmarks"].astype(np.float32), box=tuple(int(v) for v in z["box"]))
    except (OSError, KeyError, ValueError, TypeError):  # absent, unreadable or from another version: register again
        return None


def _store(path: Path | None, face: Face) -> None:
    from talkhead.util import atomic_write

    if path is None:
        return
    buf = io.BytesIO()
    np.savez(buf, landmarks=face.landmarks, box=np.array(face.box))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buf.getvalue())
    except (OSError, InputError):  # a cache that cannot be written only costs the next run time
        pass


def detect_face(image: np.ndarray, name: str = "photo", max_side: int = DETECT_MAX_SIDE, cache: bool = False) -> Face:
    """Register the largest face in an RGB image: 68 landmarks [68, 2] at full resolution.

    ``cache``: keep the result under ``registration_cache()`` by the image's content hash, and reuse it
    (for photos that are animated again and again, not for frames measured once).
    """
    img = as_rgb(image, name)
    path = _cache_file(img, max_side) if cache else None
    face = _load_cached(path) if path is not None else None
    if face is None:
        face = _register(img, name, max_side)
        _store(path, face)
    return face


def detect_faces(image: np.ndarray, name: str = "photo", max_side: int = DETECT_MAX_SIDE) -> list[Face]:
    """Every face in an RGB image, the one ``detect_face`` registers first (the largest), then the others
    by size; [] when there is none. For video frames, where a second face must be noticed, not refused."""
    img = as_rgb(image, name)
    _, predictor = dlib_models()
    rects, scores = _detections(img, max_side)
    faces = []
    for i in (_face_order(rects, scores) if rects else []):
        pts = np.array([[p.x, p.y] for p in predictor(img, rects[i]).parts()], dtype=np.float32)
        r = rects[i]
        faces.append(Face(landmarks=pts, box=(r.left(), r.top(), r.right(), r.bottom())))
    return faces


def _detections(img: np.ndarray, max_side: int) -> tuple[list, list]:
    """dlib's detections (boxes at full resolution) and their scores; searched at most ``max_side`` wide."""
    import dlib

    detector, _ = dlib_models()
    h, w = img.shape[:2]
    scale = min(1.0, max_side / max(h, w))
    small = img
    if scale < 1.0:
        from PIL import Image

        small = np.asarray(Image.fromarray(img).resize(
            (max(1, round(w * scale)), max(1, round(h * scale))), Image.BILINEAR))
    # One upsampling: dlib's detector window is 80 px, so faces down to ~40 px are found.
    rects, scores, _ = detector.run(small, 1, 0.0)
    # The predictor samples pixels rather than scanning, so running it on the
    # full-resolution image costs the same and gives sharper landmarks.
    full = [dlib.rectangle(int(r.left() / scale), int(r.top() / scale), int(r.right() / scale),
                           int(r.bottom() / scale)) for r in rects]
    return full, list(scores)


def _register(img: np.ndarray, name: str, max_side: int) -> Face:
    _, predictor = dlib_models()
    rects, scores = _detections(img, max_side)
    if not rects:
        raise InputError(f"no face found in {name}")
    full = _pick_face(rects, scores)
    shape = predictor(img, full)
    pts = np.array([[p.x, p.y] for p in shape.parts()], dtype=np.float32)
    box = (full.left(), full.top(), full.right(), full.bottom())
    return Face(landmarks=pts, box=box)
