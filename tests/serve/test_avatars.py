"""The server's registered faces (serve.avatars): a photo is kept at the size it is drawn at, and what is kept in
memory is bounded in bytes as well as in count."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from talkhead.errors import InputError
from talkhead.face.detect import default_photo
from talkhead.serve.app import ServeConfig
from talkhead.serve.avatars import Avatars


def _png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "PNG")
    return buf.getvalue()


def _big(side: int, shift: int = 0) -> np.ndarray:
    """The astronaut at ``side`` px (a phone photo's size), shifted a little so each is another photo."""
    return np.asarray(Image.fromarray(np.roll(default_photo(), shift, axis=1)).resize((side, side), Image.BICUBIC))


def test_a_large_photo_is_kept_at_the_size_it_is_drawn_at_and_draws_the_same_face():
    avatars = Avatars(ServeConfig(size=128))
    photo = _big(3000)  # 27 MB of pixels
    aid = avatars.add(_png(photo))
    kept = avatars.photos[aid]
    assert max(kept.shape[:2]) <= 2 * 128 * 1.5 + 2 and kept.nbytes < 0.02 * photo.nbytes
    ours = avatars.renderer(aid=aid).background  # the frame drawn from what was kept
    full = Avatars(ServeConfig(size=128)).renderer(photo, "full").background  # and from the whole photo
    mse = np.mean((ours.astype(np.float64) - full) ** 2)
    assert 10 * np.log10(255 ** 2 / mse) > 28.0  # dB


def test_faces_kept_in_memory_are_bounded_in_bytes_oldest_dropped_first():
    sample = _nbytes_of_one()
    avatars = Avatars(ServeConfig(size=128, max_avatar_memory=int(2.5 * sample)))
    ids = [avatars.add(_png(_big(600, shift))) for shift in (0, 7, 14)]
    assert list(avatars.photos) == ids[1:]  # the third pushed the first out
    assert sum(avatars.sizes.values()) <= 2.5 * sample
    with pytest.raises(InputError, match="unknown avatar"):
        avatars.renderer(aid=ids[0])
    avatars.renderer(aid=ids[2])  # the newest draws


def _nbytes_of_one() -> int:
    a = Avatars(ServeConfig(size=128))
    return a.sizes[a.add(_png(_big(600)))]
