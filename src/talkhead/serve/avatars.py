"""The server's registered faces: photos and ``.avatar`` files by content id (never a path), bounded."""

from __future__ import annotations

import hashlib
import io
from collections import OrderedDict
from pathlib import Path

import numpy as np

from talkhead.errors import InputError


class Avatars:
    """Registered photos and avatar files by content id (never a path); bounded, oldest dropped first."""

    def __init__(self, cfg) -> None:  # a ServeConfig: max_photo, max_avatar_file, max_side, max_avatars, size
        self.cfg, self.photos = cfg, OrderedDict()

    def add(self, data: bytes) -> str:
        """A photo (PNG, JPEG, ...) or an ``.avatar`` file; returns its id for ``start`` and ``avatar``."""
        from PIL import Image, UnidentifiedImageError

        if data[8:10] == b'{"':  # a safetensors header: an avatar file
            return self._add_avatar_file(data)
        if len(data) > self.cfg.max_photo:
            raise InputError(f"photo over {self.cfg.max_photo >> 20} MB")
        try:
            with Image.open(io.BytesIO(data)) as im:
                if max(im.size) > self.cfg.max_side:
                    raise InputError(f"photo over {self.cfg.max_side} px a side")
                photo = np.asarray(im.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
            raise InputError(f"not a readable image: {e}") from None
        aid = hashlib.sha256(photo.tobytes() + str(photo.shape).encode()).hexdigest()[:16]
        self.renderer(photo, aid)  # registers the face now (an error here is the upload's)
        self.photos[aid] = photo
        while len(self.photos) > self.cfg.max_avatars:
            self.photos.popitem(last=False)
        return aid

    def _add_avatar_file(self, data: bytes) -> str:
        import tempfile

        from talkhead.render.avatar import load_avatar

        if len(data) > self.cfg.max_avatar_file:
            raise InputError(f"avatar file over {self.cfg.max_avatar_file >> 20} MB")
        aid = hashlib.sha256(data).hexdigest()[:16]
        if aid not in self.photos:
            with tempfile.TemporaryDirectory() as d:  # read once into memory; nothing stays on disk
                path = Path(d) / f"{aid}.avatar"
                path.write_bytes(data)
                self.photos[aid] = load_avatar(path)
        while len(self.photos) > self.cfg.max_avatars:
            self.photos.popitem(last=False)
        return aid

    def renderer(self, photo: np.ndarray | None = None, aid: str | None = None):
        from talkhead.render import make_renderer
        from talkhead.render.avatar import Avatar, AvatarRenderer
        from talkhead.render.face import default_photo

        if photo is None:
            if aid is not None and aid not in self.photos:
                raise InputError(f"unknown avatar {aid!r}")
            photo = self.photos[aid] if aid is not None else default_photo()
        if isinstance(photo, Avatar):  # a person's own frames: each session draws on its own copy of the loop
            return AvatarRenderer(photo, seed=0)
        return make_renderer("warp", photo, self.cfg.size, photo_name=aid or "astronaut")
