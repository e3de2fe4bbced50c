"""Measuring faces the engine draws: dlib's face descriptor (identity) and the re-detected lip gap (lip sync).

dlib's ResNet descriptor (``face_recognition_models``) puts two photos of one person less than 0.6
apart. Crops are upscaled 2x before detection: dlib's detector misses faces under about 80 px.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image

from talkhead.face.detect import dlib_models, model_path

UPSCALE = 2


@lru_cache(maxsize=1)
def _recognition():
    import dlib

    return dlib.face_recognition_model_v1(str(model_path("dlib_face_recognition_resnet_model_v1.dat")))


def _big(crop: np.ndarray) -> np.ndarray:
    h, w = crop.shape[:2]
    return np.asarray(Image.fromarray(crop).resize((w * UPSCALE, h * UPSCALE), Image.BICUBIC))


def _shape(img: np.ndarray):
    detector, predictor = dlib_models()
    rects = detector(img, 0)
    if len(rects) == 0:
        return None
    r = max(rects, key=lambda r: r.area())
    return predictor(img, r)


def descriptor(crop: np.ndarray) -> np.ndarray | None:
    """dlib's 128-d face descriptor of a face crop uint8 [S, S, 3], or None where no face is found."""
    img = _big(crop)
    shape = _shape(img)
    if shape is None:
        return None
    return np.asarray(_recognition().compute_face_descriptor(img, shape), np.float32)


def identity_distance(reference: np.ndarray, crops: np.ndarray) -> dict:
    """Mean descriptor distance of ``crops`` [N, S, S, 3] to ``reference``, and the share where a face was found."""
    ref = descriptor(reference)
    if ref is None:
        raise ValueError("no face found in the reference crop")
    found = [d for d in map(descriptor, crops) if d is not None]
    dist = [float(np.linalg.norm(d - ref)) for d in found]
    return {"distance": float(np.mean(dist)) if dist else None, "found": len(found) / max(1, len(crops))}


def lip_gap(crop: np.ndarray) -> float | None:
    """Inner-lip opening over face width from the 68 re-detected landmarks (None: no face found)."""
    shape = _shape(_big(crop))
    if shape is None:
        return None
    p = np.array([[q.x, q.y] for q in shape.parts()], np.float32)
    gap = np.abs(p[[65, 66, 67], 1] - p[[63, 62, 61], 1]).mean()
    return float(gap / max(1.0, np.linalg.norm(p[16] - p[0])))
