"""``data.avatar``: a real talking video in, crops aligned on the face's stable points, the fitted mouth out."""

from __future__ import annotations

import numpy as np

from talkhead.data.avatar import STABLE, AvatarDataConfig, apply, face_points, ingest, invert, similarity
from talkhead.metrics import pearson
from talkhead.rig.spec import SPEC


def test_similarity_recovers_a_known_map():
    rng = np.random.default_rng(0)
    src = rng.uniform(0, 100, (11, 2))
    a, t = 1.3 * np.array([[np.cos(0.2), -np.sin(0.2)], [np.sin(0.2), np.cos(0.2)]]), np.array([5.0, -7.0])
    m = similarity(src, src @ a.T + t)
    assert np.allclose(m[:, :2], a) and np.allclose(m[:, 2], t)
    assert np.allclose(apply(invert(m), apply(m, src)), src)


def test_two_faces_follow_the_largest_and_the_crops_hold_the_head_still(talking_video, tmp_path, capsys):
    from PIL import Image

    from talkhead.data.video import read_frames
    from talkhead.video import write_mp4

    video, true = talking_video
    frames = read_frames(video)
    canvas = np.full((len(frames), 256, 400, 3), 200, np.uint8)
    canvas[:, :, :256] = frames
    small = np.stack([np.asarray(Image.fromarray(f).resize((128, 128))) for f in frames])
    canvas[:, 64:192, 264:392] = small  # a second, smaller face beside the first
    two = tmp_path / "two.mp4"
    write_mp4(two, list(canvas), None)
    d = ingest([two], AvatarDataConfig(min_seconds=3.0, fit_iters=150), progress=False)
    assert capsys.readouterr().err.count("more than one face") == 1
    c = d.clips[0]
    n = len(c["frames"])
    assert n >= len(frames) - 2 and c["frames"].shape[1:] == (d.side, d.side, 3)
    assert pearson(c["motion"][:, SPEC["jawOpen"]], true[:n, SPEC["jawOpen"]]) > 0.9
    # The stable points of every frame land where the first face's do, in crop pixels.
    _, pts, _ = face_points(canvas[:n], "two")
    crop_pts = np.stack([apply(invert(a), p[STABLE]) for a, p in zip(c["affine"], pts)])
    assert np.abs(crop_pts - crop_pts[0]).max() < 0.05 * d.side
    assert 0.1 < d.paste.mean() < 0.6 and d.hidden.sum() >= (d.paste > 0.5).sum()
