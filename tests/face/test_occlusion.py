"""``face.occlusion``: a hand over the mouth of a real face video is found, a visible mouth is not; lips
outside the picture are found; crops past the picture's edge repeat its edge instead of going black."""

from __future__ import annotations

import numpy as np

from talkhead.face.occlusion import OcclusionConfig, lips_outside, mirror_disagreement, mirror_permutation, occluded


def _hide_mouth(frames: np.ndarray, pts: np.ndarray, where: slice) -> np.ndarray:
    """The frames with the lips' box painted, in ``where``, the colour of the same face's cheek, as a hand
    would cover them. (A larger cover hides the face from dlib's detector: those frames are lost instead.)"""
    out = frames.copy()
    for i in range(*where.indices(len(frames))):
        p = pts[i]
        (x0, y0), (x1, y1) = p[48:68].min(0).astype(int), p[48:68].max(0).astype(int)
        cheek = (p[2] + (p[31] - p[2]) * 0.3).astype(int)
        out[i, y0:y1, x0:x1] = out[i, cheek[1], cheek[0]]
    return out


def test_a_covered_mouth_is_flagged_and_a_visible_one_is_not(talking_video):
    from talkhead.face.track import face_points
    from talkhead.video import read_frames

    frames = read_frames(talking_video[0])
    keep, pts, boxes = face_points(frames, "talk")
    assert len(keep) == len(frames)
    clean = mirror_disagreement(frames, keep, pts, boxes)
    assert np.median(clean) < 0.02 and not occluded(clean, keep).any()
    hidden = slice(20, 50)
    covered = _hide_mouth(frames, pts, hidden)
    keep2, pts2, boxes2 = face_points(covered, "covered")
    flags = occluded(mirror_disagreement(covered, keep2, pts2, boxes2), keep2)
    at = np.asarray(keep2)[flags]
    assert np.isin(np.arange(24, 46), at).all()  # the stretch, but for its first and last few frames
    m = OcclusionConfig().margin  # grown by the margin for a hand coming and going, and nothing far from it
    assert (at >= 10 - m).all() and (at <= 60 + m).all() and len(at) < len(keep2) / 2


def test_ingest_learns_from_none_of_the_covered_frames(talking_video, tmp_path, capsys):
    from talkhead.avatar.data import AvatarDataConfig, ingest
    from talkhead.face.track import face_points
    from talkhead.video import read_frames, write_mp4

    frames = read_frames(talking_video[0])
    _, pts, _ = face_points(frames, "talk")
    video = tmp_path / "covered.mp4"
    write_mp4(video, list(_hide_mouth(frames, pts, slice(100, 140))), None)
    d = ingest([video], AvatarDataConfig(min_seconds=3.0, fit_iters=150), progress=False)
    (a, b), = d.report["covered.mp4"]["occluded"]
    m = OcclusionConfig().margin
    assert a <= 104 - m + 4 and b >= 135 + m - 4 and a >= 90 - m and b <= 150 + m
    learnt = np.concatenate([c["frame_index"] for c in d.clips])
    assert not np.isin(np.arange(a, b + 1), learnt).any() and len(d.clips) == 2
    assert capsys.readouterr().err.count("the mouth is hidden in frames") == 1


def test_the_mirror_permutation_swaps_sides():
    perm = mirror_permutation()
    assert (perm[perm] == np.arange(68)).all()
    assert perm[36] == 45 and perm[48] == 54 and perm[8] == 8 and perm[62] == 62 and perm[0] == 16


def test_lips_outside_the_picture():
    pts = np.tile(np.array([[50.0, 50.0]]), (3, 68, 1))
    pts[1, 57] = [50, 100]  # the lower lip below a 100-high picture
    pts[2, 30] = [-5, 50]  # the nose outside: not the lips
    assert lips_outside(pts, (100, 100)).tolist() == [False, True, False]


def test_a_crop_past_the_picture_repeats_its_edge(talking_video):
    from talkhead.avatar.data import extract
    from talkhead.video import read_frames

    frame = read_frames(talking_video[0])[0]
    h = frame.shape[0]
    low = np.array([[1.0, 0, 0], [0, 1.0, h - 64]])  # a 128 px crop whose lower half is below the picture
    crop = extract(frame, low, 128)
    assert np.abs(crop[64:].astype(int) - frame[-1:, :128].astype(int)).max() <= 2
    assert np.array_equal(crop[:60], frame[h - 64:h - 4, :128]) or np.abs(
        crop[:60].astype(int) - frame[h - 64:h - 4, :128]).mean() < 1
