"""The server's registered faces: photos and ``.avatar`` files by content id (never a path), bounded.

With a store (``--avatar-store DIR``; ``serve --ray`` keeps one in the cache folder by default) every
upload is also written there under its content id, atomically, and an id this process has not seen is
looked up there before it is refused: so an avatar uploaded to one replica is usable from every replica
that shares the folder, and from the same server after a restart. The stored bytes are checked against
their id when read back, so a damaged or foreign file is refused, never drawn.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections import OrderedDict
from pathlib import Path

import numpy as np

from talkhead.errors import InputError
from talkhead.util import atomic_write, check_writable

_KINDS = (".avatar", ".photo")  # the stored file's suffix says how to read it back


class Avatars:
    """Registered photos and avatar files by content id (never a path); bounded, oldest dropped first."""

    def __init__(self, cfg) -> None:  # a ServeConfig: max_photo, max_avatar_file, max_side, max_avatars, size,
        # avatar_store, max_stored_avatars
        self.cfg, self.photos = cfg, OrderedDict()
        self.store = Path(cfg.avatar_store) if getattr(cfg, "avatar_store", None) else None
        if self.store is not None:
            try:
                self.store.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                raise InputError(f"avatar store {self.store}: {e.strerror or e}") from None
            check_writable(self.store / "probe")

    def add(self, data: bytes) -> str:
        """A photo (PNG, JPEG, ...) or an ``.avatar`` file; returns its id for ``start`` and ``avatar``."""
        aid, kind = self._register(data)
        self._save(aid, kind, data)
        return aid

    def _register(self, data: bytes, expect: str | None = None) -> tuple[str, str]:
        """Decode and keep a face in memory: (its content id, its store suffix). ``expect``: the id it must have."""
        if data[8:10] == b'{"':  # a safetensors header: an avatar file
            return self._add_avatar_file(data, expect), ".avatar"
        photo = self._decode(data)
        aid = hashlib.sha256(photo.tobytes() + str(photo.shape).encode()).hexdigest()[:16]
        _check_id(aid, expect)
        self.renderer(photo, aid)  # registers the face now (an error here is the upload's)
        self._remember(aid, photo)
        return aid, ".photo"

    def _decode(self, data: bytes) -> np.ndarray:
        from PIL import Image, UnidentifiedImageError

        if len(data) > self.cfg.max_photo:
            raise InputError(f"photo over {self.cfg.max_photo >> 20} MB")
        try:
            with Image.open(io.BytesIO(data)) as im:
                if max(im.size) > self.cfg.max_side:
                    raise InputError(f"photo over {self.cfg.max_side} px a side")
                return np.asarray(im.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
            raise InputError(f"not a readable image: {e}") from None

    def _add_avatar_file(self, data: bytes, expect: str | None = None) -> str:
        import tempfile

        from talkhead.render.avatar import load_avatar

        if len(data) > self.cfg.max_avatar_file:
            raise InputError(f"avatar file over {self.cfg.max_avatar_file >> 20} MB")
        aid = hashlib.sha256(data).hexdigest()[:16]
        _check_id(aid, expect)
        if aid not in self.photos:
            with tempfile.TemporaryDirectory() as d:  # read once into memory; nothing stays on disk
                path = Path(d) / f"{aid}.avatar"
                path.write_bytes(data)
                self._remember(aid, load_avatar(path))
        return aid

    def _remember(self, aid: str, face) -> None:
        self.photos[aid] = face
        self.photos.move_to_end(aid)
        while len(self.photos) > self.cfg.max_avatars:
            self.photos.popitem(last=False)

    # -- the shared store --
    def _save(self, aid: str, kind: str, data: bytes) -> None:
        """The upload under its content id (once: the same id is the same bytes' face), then the store bounded."""
        if self.store is None:
            return
        path = self.store / f"{aid}{kind}"
        if path.exists():
            os.utime(path)  # recently used: pruned last
            return
        atomic_write(path, data)
        stored = sorted((p for k in _KINDS for p in self.store.glob(f"*{k}")), key=_mtime)
        for old in stored[:max(0, len(stored) - self.cfg.max_stored_avatars)]:
            old.unlink(missing_ok=True)  # another replica may have pruned it already

    def _load(self, aid: str) -> bool:
        """An id this process has not seen, from the store; True if it was there (and is registered now)."""
        if self.store is None:
            return False
        for kind in _KINDS:
            path = self.store / f"{aid}{kind}"
            try:
                if path.stat().st_size > max(self.cfg.max_photo, self.cfg.max_avatar_file):
                    raise InputError(f"stored avatar {aid!r} is larger than an upload may be")
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            self._register(data, expect=aid)
            os.utime(path)  # recently used: pruned last
            return True
        return False

    def renderer(self, photo: np.ndarray | None = None, aid: str | None = None):
        from talkhead.render import make_renderer
        from talkhead.render.avatar import Avatar, AvatarRenderer
        from talkhead.render.face import default_photo

        if photo is None:
            if aid is not None and aid not in self.photos and not self._load(aid):
                raise InputError(f"unknown avatar {aid!r}")
            photo = self.photos[aid] if aid is not None else default_photo()
        if isinstance(photo, Avatar):  # a person's own frames: each session draws on its own copy of the loop
            return AvatarRenderer(photo, seed=0)
        return make_renderer("warp", photo, self.cfg.size, photo_name=aid or "astronaut")


def _check_id(aid: str, expect: str | None) -> None:
    if expect is not None and aid != expect:  # the stored bytes are not the face this id names: never draw them
        raise InputError(f"stored avatar {expect!r} does not match its id")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0
