"""The shared avatar store, both backends (a folder; Ray's object store on a one-node cluster the test starts):
an upload to one server is found by another that shares the store, damage is refused, the store is bounded."""

from __future__ import annotations

import io
import os
import uuid

import numpy as np
import pytest
from PIL import Image

from talkhead.errors import InputError
from talkhead.face.detect import default_photo
from talkhead.serve.app import ServeConfig
from talkhead.serve.avatar_store import StoreLimits, open_store
from talkhead.serve.avatars import Avatars

pytestmark = pytest.mark.filterwarnings("ignore:Using extra keyword arguments on `Field`")  # Ray's own pydantic use


def _png(image: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray")  # CI installs it (the test extra)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.fixture(params=["dir", "ray"])
def store(request, tmp_path) -> str:
    """An empty store's ``--avatar-store``: a fresh folder, or a fresh Ray store (a new actor name)."""
    if request.param == "ray":
        request.getfixturevalue("ray_cluster")
        return f"ray:test-{uuid.uuid4().hex[:8]}"
    return str(tmp_path / "store")


def test_an_upload_is_found_by_another_server_sharing_the_store(store):
    cfg = ServeConfig(size=64, avatar_store=store)
    first, second = Avatars(cfg), Avatars(cfg)  # two replicas: separate processes in production
    aid = first.add(_png(default_photo()))
    assert aid not in second.photos
    frame = next(iter(second.renderer(None, aid).frames(np.zeros((1, 58), np.float32), 1)))
    assert frame.shape == (64, 64, 3) and aid in second.photos
    with pytest.raises(InputError, match="unknown avatar"):
        Avatars(ServeConfig(size=64)).renderer(None, aid)  # no store: memory only, as before
    if not store.startswith("ray:"):
        assert sorted(os.listdir(store)) == [f"{aid}.photo"]


def test_stored_bytes_that_do_not_match_their_id_are_refused(store):
    cfg = ServeConfig(size=64, avatar_store=store)
    photo = default_photo()
    aid = Avatars(ServeConfig(size=64)).add(_png(photo))  # the id, from a server without the store
    limits = StoreLimits(8, 1 << 30, 1 << 26)
    open_store(store, limits).put(aid, ".photo", _png(photo[:, ::-1]))  # another face under this id
    with pytest.raises(InputError, match="does not match its id"):
        Avatars(cfg).renderer(None, aid)
    other = f"{int(aid, 16) ^ 1:016x}"
    open_store(store, limits).put(other, ".photo", b"not an image")
    with pytest.raises(InputError, match="not a readable image"):
        Avatars(cfg).renderer(None, other)


def test_the_store_is_bounded_by_count_and_by_bytes(store):
    photo = default_photo()
    pngs = [_png(np.roll(photo, 4 * i, axis=1)) for i in range(3)]
    for limit, kept in ((dict(max_stored_avatars=2), 2), (dict(max_stored_bytes=len(pngs[0]) * 3 // 2), 1)):
        cfg = ServeConfig(size=64, avatar_store=f"{store}-{kept}", **limit)
        uploader = Avatars(cfg)
        ids = [uploader.add(png) for png in pngs]
        found = []
        for aid in ids:  # a fresh server each time: only the store can know the id
            try:
                found.append(Avatars(cfg).renderer(None, aid) is not None)
            except InputError:
                found.append(False)
        assert found == [False] * (3 - kept) + [True] * kept, (limit, found)  # the least recently used went


def test_a_store_that_cannot_work_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="avatar store"):
        Avatars(ServeConfig(avatar_store=str(tmp_path / "file" / "sub")))
    with pytest.raises(InputError, match="a name is 1-64 letters"):
        Avatars(ServeConfig(avatar_store="ray:a/b"))
