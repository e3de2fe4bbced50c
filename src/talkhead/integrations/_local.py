"""The in-process face of the Pipecat service: models read once per process, and the renderer of a photo or
``.avatar`` (the remote one is ``_remote``)."""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from talkhead.config import SAMPLE_RATE

_LOADING = threading.Lock()  # agents set up side by side load a model once, not once each


def shared_model(name: str):
    """A shipped model by name (or a checkpoint path), loaded and warmed once per process."""
    with _LOADING:
        return _load_model(name)


@lru_cache(maxsize=4)
def _load_model(name: str):
    """Models are read once per process: several agents in one process share them (as ``talkhead serve``).
    Each is run once on 1 s of quiet noise here: its first call (the speech encoder's load, the first
    window) costs 0.3-0.5 s, which the first utterance would otherwise wait for."""
    from talkhead.motion.model import load_model
    from talkhead.serve.session import warm_up

    model = load_model(name)
    warm_up(model, np.random.default_rng(0).normal(0, 1e-3, SAMPLE_RATE).astype(np.float32))
    return model


def face_renderer(avatar: str | Path | None, size: int):
    """A ``.avatar`` file (its own size), a photo drawn at ``size``, or the built-in photo."""
    from talkhead.avatar.renderer import AvatarRenderer
    from talkhead.face.detect import default_photo, load_image
    from talkhead.render import make_renderer

    if avatar is not None and Path(avatar).suffix == ".avatar":
        return AvatarRenderer(avatar, seed=0, window=True)  # live: the mask's window only, as serve draws it
    photo = default_photo() if avatar is None else load_image(avatar)
    return make_renderer("warp", photo, size, "cpu", "astronaut" if avatar is None else Path(avatar).stem)
