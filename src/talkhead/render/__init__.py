"""Renderers: motion [T, 58] -> frames uint8 [T, H, W, 3], chosen by name (``generate --renderer``).

A renderer is anything with ``size`` ((width, height)), ``frame_shape`` ((H, W, 3)) and
``frames(motion, batch) -> iterator of uint8 [H, W, 3]``; the pipeline needs nothing else. Each engine
registers one, drawing from a photo (``warp``: training-free, the default; ``latent``: the latent face
engine) or from a person's avatar file (``avatar``: their own frames, its size its video's). This package
stays light and knows no engine's insides: a renderer's module is imported when one is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from pathlib import Path
from typing import Protocol

import numpy as np

from talkhead.config import VIDEO_SIZE
from talkhead.errors import InputError


class Renderer(Protocol):
    size: tuple[int, int]

    @property
    def frame_shape(self) -> tuple[int, int, int]: ...

    def frames(self, motion: np.ndarray, batch: int = 32) -> Iterator[np.ndarray]: ...


# name -> (module, class, what it draws from: "photo" or "avatar")
RENDERERS = {"warp": ("talkhead.warp.renderer", "WarpRenderer", "photo"),
             "latent": ("talkhead.latent.renderer", "LatentRenderer", "photo"),
             "avatar": ("talkhead.avatar.renderer", "AvatarRenderer", "avatar")}


def make_renderer(name: str, photo: np.ndarray | None = None, size: int | tuple[int, int] = VIDEO_SIZE,
                  device: str = "cpu", photo_name: str = "photo", *, avatar: str | Path | object | None = None,
                  **options) -> Renderer:
    """The renderer ``name`` for ``photo`` at ``size`` (registered once per photo, cached), or for the
    ``avatar`` (a file, or an ``avatar.file.Avatar`` loaded already; at its own size, on the CPU).

    ``options`` go to the renderer (the latent one takes ``engine``, ``stride``, ``seed``, ``output``; the
    avatar one ``seed``).
    """
    if name not in RENDERERS:
        raise InputError(f"unknown renderer {name!r}; known: {', '.join(RENDERERS)}")
    module, cls, source = RENDERERS[name]
    make = getattr(import_module(module), cls)
    if source == "avatar":
        if avatar is None or photo is not None:
            raise InputError(f"the {name} renderer draws a person's avatar: give an avatar file (--avatar), not a photo")
        return make(avatar, **options)
    if avatar is not None or photo is None:
        raise InputError(f"the {name} renderer draws a photo: give --image PHOTO (or none for the built-in one), "
                         "not --avatar")
    return make(photo, size, device, name=photo_name, **options)
