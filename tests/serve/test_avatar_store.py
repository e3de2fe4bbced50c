"""The shared avatar store: an upload to one server is found by another that shares the folder; damage is refused."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from talkhead.errors import InputError
from talkhead.render.face import default_photo
from talkhead.serve.app import ServeConfig
from talkhead.serve.avatars import Avatars


def _png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="PNG")
    return buf.getvalue()


def test_an_upload_is_found_by_another_server_sharing_the_store(tmp_path):
    cfg = ServeConfig(size=64, avatar_store=str(tmp_path / "store"))
    first, second = Avatars(cfg), Avatars(cfg)  # two replicas: separate processes in production
    aid = first.add(_png(default_photo()))
    assert sorted(p.name for p in (tmp_path / "store").iterdir()) == [f"{aid}.photo"]
    assert aid not in second.photos
    frame = next(iter(second.renderer(None, aid).frames(np.zeros((1, 58), np.float32), 1)))
    assert frame.shape == (64, 64, 3) and aid in second.photos
    with pytest.raises(InputError, match="unknown avatar"):
        Avatars(ServeConfig(size=64)).renderer(None, aid)  # no store: memory only, as before


def test_a_stored_file_that_does_not_match_its_id_is_refused(tmp_path):
    cfg = ServeConfig(size=64, avatar_store=str(tmp_path))
    photo = default_photo()
    aid = Avatars(cfg).add(_png(photo))
    (tmp_path / f"{aid}.photo").write_bytes(_png(photo[:, ::-1].copy()))  # another face under this id
    with pytest.raises(InputError, match="does not match its id"):
        Avatars(cfg).renderer(None, aid)
    assert [p.name for p in tmp_path.iterdir()] == [f"{aid}.photo"]  # the foreign face was not stored either
    (tmp_path / f"{aid}.photo").write_bytes(b"not an image")
    with pytest.raises(InputError, match="not a readable image"):
        Avatars(cfg).renderer(None, aid)


def test_the_store_is_bounded_and_an_unwritable_one_is_refused(tmp_path):
    cfg = ServeConfig(size=64, avatar_store=str(tmp_path / "s"), max_stored_avatars=2)
    avatars, photo = Avatars(cfg), default_photo()
    ids = [avatars.add(_png(np.roll(photo, 4 * i, axis=1))) for i in range(3)]
    assert len(set(ids)) == 3 and len(list((tmp_path / "s").iterdir())) == 2
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="avatar store"):
        Avatars(ServeConfig(avatar_store=str(tmp_path / "file" / "sub")))
