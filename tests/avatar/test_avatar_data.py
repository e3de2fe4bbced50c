"""``avatar.data``: a real talking video in, crops aligned on the face's stable points, the fitted mouth out."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.avatar.data import STABLE, AvatarDataConfig, ingest
from talkhead.face.affine import apply, invert, similarity
from talkhead.face.track import face_points
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

    from talkhead.video import read_frames, write_mp4

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


def test_masks_follow_each_frames_head_with_the_mouth_at_rest(talking_video):
    import torch

    from talkhead.avatar.data import frame_masks, mask_points, masks
    from talkhead.face.template import fit_rig, project
    from talkhead.video import read_frames

    video, true = talking_video
    cfg = AvatarDataConfig(min_seconds=3.0, fit_iters=150)
    d = ingest([video], cfg, progress=False)
    c = d.clips[0]
    n = len(c["frames"])
    _, pts, _ = face_points(read_frames(video)[:n], "talk")
    own = np.stack([apply(invert(a), p) for a, p in zip(c["affine"], pts)])
    iou = lambda h: (h[0] & h[1]).sum() / (h[0] | h[1]).sum()  # noqa: E731
    hidden, raw = (frame_masks(p, d.side, cfg)[1] for p in (c["points"], own))
    jaw = c["motion"][:, SPEC["jawOpen"]]
    # Drawn from the frame's own points the mask grows as the mouth opens (r 0.87 on this video); with the
    # expression taken out it does not (0.13): it does not tell the network how far the mouth opens.
    assert pearson(raw.sum((1, 2)), jaw) > 0.7 and abs(pearson(hidden.sum((1, 2)), jaw)) < 0.35
    chin = np.round(own[:, 8]).astype(int)
    assert hidden[np.arange(n), chin[:, 1], chin[:, 0]].all()  # and it has room for the opened jaw
    # A turned head with an open, smiling mouth: the expression comes out, the turn stays.
    m = np.zeros((1, 58), np.float32)
    m[0, [SPEC["yaw"], SPEC["pitch"], SPEC["jawOpen"], SPEC["mouthSmileLeft"]]] = 0.35, 0.1, 0.7, 0.6
    rig = fit_rig(d.crop_points)
    at_rest = m.copy()
    at_rest[0, SPEC.expression] = 0
    got = mask_points(d.crop_points, project(rig, torch.from_numpy(m)).numpy(), m, cfg)
    assert np.abs(got - project(rig, torch.from_numpy(at_rest)).numpy()).max() < 0.05
    turned = masks(got[0], d.side, cfg)[1]
    assert iou([turned, d.hidden]) < 0.9  # the first face's mask would not have followed the turn
    first = mask_points(d.crop_points, own, c["motion"], AvatarDataConfig(mask="first"))
    assert np.array_equal(frame_masks(first[:3], d.side, cfg)[1], np.repeat(d.hidden[None], 3, 0))


def test_every_video_is_fitted_from_the_avatars_own_neutral(talking_video):
    """A clip that starts with the mouth open reads that opening as open, not as the motion's zero."""
    from talkhead.avatar.data import placed_neutral
    from talkhead.face.capture import VideoConfig, fit_motion
    from talkhead.video import read_frames

    _, pts, _ = face_points(read_frames(talking_video[0]), "talk")
    cfg = VideoConfig(fit_iters=150)
    whole = fit_motion(pts, cfg)
    k = int(np.argmax(whole[: len(whole) // 2, SPEC["jawOpen"]]))
    assert whole[k, SPEC["jawOpen"]] > 0.3
    own, placed = fit_motion(pts[k:], cfg), fit_motion(pts[k:], cfg, placed_neutral(pts[0], pts[k]))
    jaw = SPEC["jawOpen"]
    assert own[0, jaw] < 0.1  # its own first face is its zero
    assert abs(placed[0, jaw] - whole[k, jaw]) < 0.1
    assert pearson(placed[:, jaw], whole[k:, jaw]) > 0.95


def test_each_videos_followed_face_is_kept_by_content_and_a_rerun_resumes_from_it(talking_video, tmp_path,
                                                                                   monkeypatch):
    import shutil

    import talkhead.face.track as face_track

    video, _ = talking_video
    cfg = AvatarDataConfig(min_seconds=3.0, fit_iters=150)
    first = ingest([video], cfg, progress=False, cache=tmp_path)
    assert len(list(tmp_path.glob("track-*.npz"))) == 1
    renamed = shutil.copy(video, tmp_path / "renamed.mp4")  # the same content under another name
    monkeypatch.setattr(face_track, "track_video", lambda *a, **k: pytest.fail("the face was followed again"))
    again = ingest([renamed], cfg, progress=False, cache=tmp_path)
    assert len(again.clips) == len(first.clips)
    for a, b in zip(first.clips, again.clips):
        assert np.array_equal(a["frames"], b["frames"]) and np.array_equal(a["motion"], b["motion"])


@pytest.mark.parametrize("side", [64, 128, 256, 512])
def test_masks_grow_the_lower_face_as_pils_max_filter_did(side):
    """The hidden mask is the drawn lower face grown by side/64 px: scipy's square maximum now, PIL's MaxFilter when
    every shipped avatar was trained; the two agree to the pixel, edges included (faces cut off by the crop too)."""
    from PIL import ImageFilter

    from talkhead.avatar.data import lower_region, masks

    rng = np.random.default_rng(side)
    cfg = AvatarDataConfig()
    for shift in (0.0, 0.45, -0.45):  # the face inside, and pushed past the crop's bottom and top
        pts = _face_points(side, rng) + np.array([0.0, shift * side])
        want = np.asarray(lower_region(pts, side, cfg).filter(ImageFilter.MaxFilter(2 * max(1, side // 64) + 1))) > 0
        hidden = masks(pts, side, cfg)[1]
        assert 0 < hidden.sum() < side * side and np.array_equal(hidden, want)


def _face_points(side: int, rng: np.random.Generator) -> np.ndarray:
    """68 points [68, 2] of a face filling a crop of ``side`` px: the rig's standard face, scaled, jittered."""
    from talkhead.face.template import TEMPLATE

    p = TEMPLATE[:68, :2]  # template space: x right, y down, face width 1
    p = (p - p.mean(0)) / np.ptp(p[:, 0]) * 0.6 * side + side / 2
    return p + rng.normal(0, side / 200, p.shape)
