"""Renderers: photo + motion [T, 58] -> frames uint8 [T, H, W, 3], chosen by name (``generate --renderer``).

A renderer is anything with ``size`` ((width, height)), ``frame_shape`` ((H, W, 3)) and
``frames(motion, batch) -> iterator of uint8 [H, W, 3]``; the pipeline needs nothing else.
``WarpRenderer`` (training-free, the default) lives in ``render.warp``; face registration in
``render.face``, the 3D landmark rig in ``render.template``. This package stays light: a renderer's
module is imported when one is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import import_module
from typing import Protocol

import numpy as np

from talkhead.errors import InputError


class Renderer(Protocol):
    size: tuple[int, int]

    @property
    def frame_shape(self) -> tuple[int, int, int]: ...

    def frames(self, motion: np.ndarray, batch: int = 32) -> Iterator[np.ndarray]: ...


RENDERERS = {"warp": ("talkhead.render.warp", "WarpRenderer"),
             "latent": ("talkhead.render.latent.renderer", "LatentRenderer")}


def make_renderer(name: str, photo: np.ndarray, size: int | tuple[int, int], device: str = "cpu",
                  photo_name: str = "photo", **options) -> Renderer:
    """The renderer ``name`` for ``photo`` at ``size``, registered once per photo (cached).

    ``options`` go to the renderer (the latent one takes ``engine``, ``stride``, ``seed``, ``output``).
    """
    if name not in RENDERERS:
        raise InputError(f"unknown renderer {name!r}; known: {', '.join(RENDERERS)}")
    module, cls = RENDERERS[name]
    return getattr(import_module(module), cls)(photo, size, device, name=photo_name, **options)
