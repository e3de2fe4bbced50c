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


def mouth_maps(rig, motion: np.ndarray | torch.Tensor, crop: int, side: int, fine: int = 1) -> torch.Tensor:
    """[T, 2 * fine², side, side] in [0, 1]: the share of each latent cell inside the mouth opening and the lips.

    ``fine`` > 1 draws each cell as fine x fine sub-cells, stacked as channels (a pixel unshuffle): where in a
    cell an edge runs, which a cell's share alone leaves the network to guess (a mouth 5 cells wide on an 8x
    VAE's grid)."""
    from talkhead.face.template import project_points

    pts = project_points(rig, torch.as_tensor(np.asarray(motion, np.float32)))[:, :68].detach().numpy()
    fine = max(1, int(fine))
    draw = max(2, _DRAW // fine)  # supersampling of each sub-cell
    n = side * fine
    k = n * draw / crop
    out = np.zeros((len(pts), CHANNELS, n, n), np.float32)
    for t, p in enumerate(pts * k):
        for c, idx in enumerate((range(60, 68), range(48, 60))):
            img = Image.new("L", (n * draw, n * draw), 0)
            ImageDraw.Draw(img).polygon([tuple(p[i]) for i in idx], fill=255)
            out[t, c] = np.asarray(img, np.float32).reshape(n, draw, n, draw).mean(axis=(1, 3)) / 255
    return torch.nn.functional.pixel_unshuffle(torch.from_numpy(out), fine) if fine > 1 else torch.from_numpy(out)


def map_detail(geometry: int) -> int:
    """The ``fine`` of maps that fill ``geometry`` input channels of a network (``LatentConfig.geometry``)."""
    fine = round((geometry / CHANNELS) ** 0.5)
    if CHANNELS * fine * fine != geometry:
        raise ValueError(f"{geometry} geometry channels are not mouth maps of any detail")
    return fine
