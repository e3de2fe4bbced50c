"""The server's registered faces: photos and ``.avatar`` files by content id (never a path), bounded.

With a store (``--avatar-store DIR`` or ``ray:``, ``serve.avatar_store``; ``serve --ray`` keeps a folder in
the cache folder by default) every upload is also kept there under its content id, and an id this process
has not seen is looked up there before it is refused: so an avatar uploaded to one replica is usable from
every replica that shares the store, and from the same server after a restart. The stored bytes are checked
against their id when read back, whichever store they come from, so a damaged or foreign one is refused,
never drawn.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np

from talkhead.errors import InputError
from talkhead.serve.avatar_store import StoreLimits, open_store

KEEP_SIDE = 3072  # a photo's longer side as it is kept: its face window is then still over 2x any frame size


class Avatars:
    """Registered photos and avatar files by content id (never a path); bounded, oldest dropped first."""

    def __init__(self, cfg) -> None:  # a ServeConfig: max_photo, max_avatar_file, max_side, max_avatars, size,
        # avatar_store, max_stored_avatars, max_stored_bytes
        self.cfg, self.photos, self.sizes = cfg, OrderedDict(), {}
        self._decoding = threading.BoundedSemaphore(2)
        limits = StoreLimits(cfg.max_stored_avatars, cfg.max_stored_bytes, max(cfg.max_photo, cfg.max_avatar_file))
        self.store = open_store(cfg.avatar_store, limits)

    def add(self, data: bytes) -> str:
        """A photo (PNG, JPEG, ...) or an ``.avatar`` file; returns its id for ``start`` and ``avatar``."""
        aid, kind = self._register(data)
        self._save(aid, kind, data)
        return aid

    def _register(self, data: bytes, expect: str | None = None) -> tuple[str, str]:
        """Decode and keep a face in memory: (its content id, its store suffix). ``expect``: the id it must have."""
        if data[8:10] == b'{"':  # a safetensors header: an avatar file
            return self._add_avatar_file(data, expect), ".avatar"
        with self._decoding:  # a large photo is hundreds of MB while it is decoded: a few at a time
            photo = self._decode(data)
            return self._register_photo(photo, expect), ".photo"

    def _register_photo(self, photo: np.ndarray, expect: str | None) -> str:
        from talkhead.warp.renderer import drawn_part

        h = hashlib.sha256(photo.data)  # hashed in place (the same id as photo.tobytes() + shape)
        h.update(str(photo.shape).encode())
        aid = h.hexdigest()[:16]
        _check_id(aid, expect)
        r = self.renderer(photo, aid)  # registers the face now (an error here is the upload's)
        # Kept at the size it is drawn at: the renderer's window of it and a margin, at most twice the frame.
        self._remember(aid, drawn_part(photo, r.face, r.size, r.framing))
        return aid

    def _decode(self, data: bytes) -> np.ndarray:
        from PIL import Image, UnidentifiedImageError

        if len(data) > self.cfg.max_photo:
            raise InputError(f"photo over {self.cfg.max_photo >> 20} MB")
        try:
            with Image.open(io.BytesIO(data)) as im:
                if max(im.size) > self.cfg.max_side:
                    raise InputError(f"photo over {self.cfg.max_side} px a side")
                # Made smaller as it is decoded (a JPEG at a fraction of its scale): what is drawn of it is at
                # most twice the frame, and a 48 MP photo whole is 150 MB here, 3 times over while it is read.
                im.draft("RGB", (KEEP_SIDE, KEEP_SIDE))
                if max(im.size) > KEEP_SIDE:
                    im.thumbnail((KEEP_SIDE, KEEP_SIDE), Image.LANCZOS)
                return np.asarray(im if im.mode == "RGB" else im.convert("RGB"))  # one copy, not two
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
            raise InputError(f"not a readable image: {e}") from None

    def _add_avatar_file(self, data: bytes, expect: str | None = None) -> str:
        import tempfile

        from talkhead.avatar.file import load_avatar

        if len(data) > self.cfg.max_avatar_file:
            raise InputError(f"avatar file over {self.cfg.max_avatar_file >> 20} MB")
        aid = hashlib.sha256(data).hexdigest()[:16]
        _check_id(aid, expect)
        if aid not in self.photos:
            with tempfile.TemporaryDirectory() as d:  # read once into memory; nothing stays on disk
                path = Path(d) / f"{aid}.avatar"
                path.write_bytes(data)
                try:
                    avatar = load_avatar(path)
                except InputError as e:  # said of the upload, never of a path on the server
                    raise InputError(str(e).replace(str(path), "the avatar file")) from None
                avatar.base_views()  # paid once at upload, not at each session's start
                self._remember(aid, avatar)
        return aid

    def _remember(self, aid: str, face) -> None:
        """Keep a face, dropping the least recently added past ``max_avatars`` or ``max_avatar_memory`` bytes (the
        newest is always kept: it was just checked against the upload limits)."""
        self.photos[aid] = face
        self.photos.move_to_end(aid)
        self.sizes[aid] = _nbytes(face)
        while len(self.photos) > 1 and (len(self.photos) > self.cfg.max_avatars
                                        or sum(self.sizes.values()) > self.cfg.max_avatar_memory):
            old, _ = self.photos.popitem(last=False)
            self.sizes.pop(old, None)

    # -- the shared store --
    def _save(self, aid: str, kind: str, data: bytes) -> None:
        """The upload under its content id (once: the same id is the same bytes' face); the store bounds itself."""
        if self.store is not None:
            self.store.put(aid, kind, data)

    def _load(self, aid: str) -> bool:
        """An id this process has not seen, from the store; True if it was there (and is registered now)."""
        found = self.store.get(aid) if self.store is not None else None
        if found is None:
            return False
        self._register(found[1], expect=aid)  # decoded and hashed again: only the face the id names is drawn
        return True

    def renderer(self, photo: np.ndarray | None = None, aid: str | None = None):
        from talkhead.avatar.file import Avatar
        from talkhead.avatar.renderer import AvatarRenderer
        from talkhead.face.detect import default_photo
        from talkhead.render import make_renderer

        if photo is None:
            aid = avatar_id(aid)  # every client's id (WebSocket, WebRTC, /v1/videos) passes here first
            if aid is not None and aid not in self.photos and not self._load(aid):
                raise InputError(f"unknown avatar {aid!r}")
            photo = self.photos[aid] if aid is not None else default_photo()
        if isinstance(photo, Avatar):  # a person's own frames: each session draws on its own copy of the loop
            return AvatarRenderer(photo, seed=0, window=True)  # live: the mask's window only (1.8x faster)
        return make_renderer("warp", photo, self.cfg.size, photo_name=aid or "astronaut")


def _nbytes(face) -> int:
    """Bytes a kept face holds: a photo's pixels, or an avatar's arrays and tensors (its base frames, bank, engine)."""
    import torch

    if isinstance(face, np.ndarray):
        return face.nbytes
    seen, todo, total = set(), [vars(face)], 0
    while todo:
        for v in todo.pop().values():
            if id(v) in seen:
                continue
            seen.add(id(v))
            if isinstance(v, np.ndarray):
                total += v.nbytes
            elif isinstance(v, torch.Tensor):
                total += v.numel() * v.element_size()
            elif isinstance(v, torch.nn.Module):
                total += sum(t.numel() * t.element_size() for t in v.state_dict().values())
            elif isinstance(v, dict):
                todo.append(v)
            elif isinstance(v, tuple):
                todo.append(dict(enumerate(v)))
    return total


def avatar_id(value) -> str | None:
    """A client's avatar id, checked: 16 hex digits (never a path)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 16 or any(c not in "0123456789abcdef" for c in value):
        raise InputError("an avatar id is the 16 hex digits POST /v1/avatars returned")
    return value


def _check_id(aid: str, expect: str | None) -> None:
    if expect is not None and aid != expect:  # the stored bytes are not the face this id names: never draw them
        raise InputError(f"stored avatar {expect!r} does not match its id")

