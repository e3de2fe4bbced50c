"""The renderer contract, checked on every registered renderer (as the samplers' contract test runs over
every sampler): whatever draws the frames, the pipeline relies on these and nothing else."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.errors import InputError
from talkhead.face.detect import default_photo
from talkhead.render import RENDERERS, make_renderer
from talkhead.rig.spec import SPEC


@pytest.fixture(params=sorted(RENDERERS))
def build(request):
    """A zero-argument maker of the named renderer, on the built-in photo or the tests' tiny avatar."""
    name = request.param
    if name == "warp":
        return lambda: make_renderer("warp", default_photo(), (96, 80), photo_name="astronaut")
    if name == "latent":  # the shipped one-step engine
        return lambda: make_renderer("latent", default_photo(), 64, photo_name="astronaut", engine="latent-student-1",
                                     seed=3)
    assert name == "avatar", f"a renderer without a contract fixture: {name}"
    avatar = request.getfixturevalue("tiny_avatar")
    return lambda: make_renderer("avatar", avatar=avatar, seed=3)


def _speaking(frames: int = 6) -> np.ndarray:
    m = np.zeros((frames, SPEC.dim), np.float32)
    m[:, SPEC["jawOpen"]] = np.linspace(0.0, 0.8, frames)
    m[:, SPEC.pose.start + 1] = np.linspace(0.0, 0.1, frames)  # a little yaw
    return m


def test_frames_are_the_promised_shape_one_per_motion_row(build):
    r = build()
    w, h = r.size
    assert r.frame_shape == (h, w, 3)
    frames = list(r.frames(_speaking(), batch=4))
    assert len(frames) == 6
    assert all(f.dtype == np.uint8 and f.shape == r.frame_shape for f in frames)


def test_a_new_renderer_with_the_same_seed_draws_the_same_frames(build):
    # Only a fresh renderer: one already drawing may go on from where it was (an avatar's own video plays
    # on behind the face), as a stream should.
    m = _speaking()
    first = np.stack(list(build().frames(m, batch=4)))
    np.testing.assert_array_equal(np.stack(list(build().frames(m, batch=4))), first)


def test_motion_moves_the_picture(build):
    r = build()
    still = np.stack(list(r.frames(np.zeros((2, SPEC.dim), np.float32))))
    moved = np.stack(list(r.frames(_speaking()[-2:])))
    assert np.abs(moved.astype(np.int16) - still).mean() > 0.5


def test_a_renderer_refuses_the_wrong_source_by_name():
    with pytest.raises(InputError, match="avatar"):
        make_renderer("avatar", default_photo(), 96)
    with pytest.raises(InputError, match="photo"):
        make_renderer("warp", avatar="someone.avatar")
    with pytest.raises(InputError, match="unknown renderer 'oil'"):
        make_renderer("oil", default_photo(), 96)
