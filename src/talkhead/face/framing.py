"""Where a frame's mouth is: the rig's projected lips as latent-size maps, a conditioning that any face shares.

The rig is fitted to the reference crop's own 68 landmarks; a frame's motion moves it, and the inner
mouth (the opening) and the outer lips are drawn as filled polygons, then averaged down to the latent
grid. A network that sees where this face's mouth opens need not learn it per person.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image, ImageDraw

from talkhead.errors import InputError

CHANNELS = 2  # the opening (inner lips) and the lips (outer contour)
_DRAW = 4  # polygons are drawn at this many times the latent side, then averaged


def reference_rig(crop: np.ndarray):
    """The rig fitted to a reference crop's landmarks (found at 2x: dlib misses small faces)."""
    from talkhead.face.detect import detect_face
    from talkhead.face.template import fit_rig

    big = np.asarray(Image.fromarray(crop).resize((crop.shape[1] * 2, crop.shape[0] * 2), Image.BICUBIC))
    try:
        face = detect_face(big, "the reference crop")
    except InputError:
        raise InputError("no face found in the reference crop of the latent engine") from None
    return fit_rig(face.landmarks / 2)


def mouth_maps(rig, motion: np.ndarray | torch.Tensor, crop: int, side: int) -> torch.Tensor:
    """[T, 2, side, side] in [0, 1]: the share of each latent cell inside the mouth opening and the lips."""
    from talkhead.face.template import project_points

    pts = project_points(rig, torch.as_tensor(np.asarray(motion, np.float32)))[:, :68].detach().numpy()
    k = side * _DRAW / crop
    out = np.zeros((len(pts), CHANNELS, side, side), np.float32)
    for t, p in enumerate(pts * k):
        for c, idx in enumerate((range(60, 68), range(48, 60))):
            img = Image.new("L", (side * _DRAW, side * _DRAW), 0)
            ImageDraw.Draw(img).polygon([tuple(p[i]) for i in idx], fill=255)
            a = np.asarray(img, np.float32).reshape(side, _DRAW, side, _DRAW).mean(axis=(1, 3)) / 255
            out[t, c] = a
    return torch.from_numpy(out)
