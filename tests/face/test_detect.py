"""Face registration on real photos: the astronaut from scikit-image."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from talkhead.errors import InputError
from talkhead.face.detect import default_photo, detect_face, load_image, model_path

# The astronaut's face in skimage.data.astronaut() (512 x 512), generous bounds.
FACE_AREA = (160, 70, 290, 195)  # x0, y0, x1, y1


@pytest.fixture(scope="module")
def astronaut():
    return default_photo()


def test_predictor_ships_with_face_recognition_models():
    path = model_path()
    assert path.name == "shape_predictor_68_face_landmarks.dat" and path.stat().st_size > 1e6


def test_astronaut_has_68_landmarks_inside_the_face(astronaut):
    face = detect_face(astronaut)
    lm = face.landmarks
    assert lm.shape == (68, 2) and lm.dtype == np.float32
    x0, y0, x1, y1 = FACE_AREA
    assert (lm[:, 0] > x0).all() and (lm[:, 0] < x1).all()
    assert (lm[:, 1] > y0).all() and (lm[:, 1] < y1).all()
    # iBUG layout sanity: eyes above the nose tip above the mouth above the chin.
    assert lm[36:48, 1].mean() < lm[30, 1] < lm[48:68, 1].mean() < lm[8, 1]
    assert lm[36, 0] < lm[45, 0] and 70 < face.width < 120


def test_large_photo_is_detected_small_and_landmarked_at_full_size(astronaut):
    big = np.asarray(Image.fromarray(astronaut).resize((1280, 1280), Image.BICUBIC))
    small = detect_face(astronaut).landmarks
    large = detect_face(big).landmarks
    # Same face, coordinates in the big image's pixels (pixel centres scale about -0.5).
    err = np.abs((large + 0.5) / 2.5 - 0.5 - small)
    assert np.median(err) < 1.5 and err.max() < 6


def test_no_face_is_an_input_error():
    grey = np.full((240, 320, 3), 128, np.uint8)
    with pytest.raises(InputError, match="no face found in grey.png"):
        detect_face(grey, name="grey.png")


def test_load_image_round_trip_and_bad_files(tmp_path, astronaut):
    png = tmp_path / "a.png"
    Image.fromarray(astronaut).save(png)
    assert np.array_equal(load_image(png), astronaut)
    grey = tmp_path / "g.png"
    Image.fromarray(astronaut[:, :, 0]).save(grey)
    assert load_image(grey).shape == (512, 512, 3)
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    with pytest.raises(InputError, match="broken.jpg"):
        load_image(bad)
    with pytest.raises(InputError, match="not found"):
        load_image(tmp_path / "missing.png")


def test_registration_is_cached_by_content(astronaut, tmp_path, monkeypatch):
    import time

    from talkhead.face import detect as face_mod

    monkeypatch.setenv("TALKHEAD_CACHE", str(tmp_path))
    first = detect_face(astronaut, cache=True)
    assert len(list((tmp_path / "faces").glob("*.npz"))) == 1

    def no_dlib():
        raise AssertionError("a cached photo must not load dlib's models")

    monkeypatch.setattr(face_mod, "dlib_models", no_dlib)
    t = time.perf_counter()
    again = detect_face(astronaut.copy(), cache=True)
    assert time.perf_counter() - t < 0.03  # the source blog's sub-30 ms avatar load
    assert np.array_equal(again.landmarks, first.landmarks) and again.box == first.box
    with pytest.raises(AssertionError, match="must not load"):  # other pixels: registered again
        detect_face(astronaut[:, ::-1].copy(), cache=True)
    # A damaged cache file is ignored, not trusted.
    next((tmp_path / "faces").glob("*.npz")).write_bytes(b"not an npz")
    monkeypatch.undo()
    monkeypatch.setenv("TALKHEAD_CACHE", str(tmp_path))
    assert np.array_equal(detect_face(astronaut, cache=True).landmarks, first.landmarks)
