"""The warp renderer and its rig on the astronaut photo, checked by re-detecting the rendered face."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from matplotlib.path import Path
from scipy.ndimage import binary_dilation

from talkhead.face.detect import default_photo, detect_face
from talkhead.face.template import IGNORED_CHANNELS, TEMPLATE, fit_rig, project, template_basis
from talkhead.rig.spec import BLENDSHAPES, SPEC
from talkhead.warp.renderer import WarpRenderer

SIZE = 256
YAW, PITCH = np.radians(15), np.radians(10)


def motion(**values: float) -> np.ndarray:
    """One frame [58] with the named channels set."""
    m = np.zeros(SPEC.dim, np.float32)
    for name, v in values.items():
        m[SPEC[name]] = v
    return m


def inner_gap(landmarks: np.ndarray) -> float:
    """Mean vertical distance between the inner lips (61-63 vs 67-65), px."""
    return float(np.mean(landmarks[[67, 66, 65], 1] - landmarks[[61, 62, 63], 1]))


@pytest.fixture(scope="module")
def renderer():
    return WarpRenderer(default_photo(), size=SIZE)


def test_every_blendshape_is_rendered_or_ignored_with_a_reason():
    basis = template_basis()
    for i, name in enumerate(BLENDSHAPES):
        moved = np.abs(basis[i]).max() > 0
        assert moved != (name in IGNORED_CHANNELS), name
    assert all(isinstance(r, str) and r for r in IGNORED_CHANNELS.values())
    assert abs(np.linalg.norm(TEMPLATE[16, :2] - TEMPLATE[0, :2]) - 1.0) < 1e-9


def test_rig_reprojects_the_photo_landmarks_and_poses_them():
    lm = detect_face(default_photo()).landmarks
    rig = fit_rig(lm)
    m = np.stack([motion(), motion(yaw=YAW), motion(pitch=PITCH), motion(tz=0.4),
                  motion(tx=0.1)])
    p = project(rig, m).numpy()
    assert p.shape == (5, 68, 2)
    np.testing.assert_allclose(p[0], lm, atol=1e-3)
    assert p[1, 30, 0] > lm[30, 0] + 5       # yaw > 0: the nose turns to the image right
    assert p[2, 30, 1] > lm[30, 1] + 3       # pitch > 0: nods down
    width = lambda q: q[16, 0] - q[0, 0]  # noqa: E731
    assert width(p[3]) > 1.05 * width(p[0])  # toward the camera: larger
    np.testing.assert_allclose(p[4] - p[0], np.broadcast_to([rig.scale * 0.1, 0], (68, 2)),
                               atol=1e-3)


def test_neutral_motion_renders_the_photo(renderer):
    frames = renderer(np.zeros((2, SPEC.dim), np.float32))
    assert frames.shape == (2, SIZE, SIZE, 3) and frames.dtype == np.uint8
    assert np.abs(frames.astype(int) - renderer.background).max() <= 2


def _teeth_or_cavity(frame: np.ndarray, lm: np.ndarray) -> int:
    """Pixels inside the outer-lip outline that are not lip: white teeth or a dark mouth."""
    yy, xx = np.mgrid[: frame.shape[0], : frame.shape[1]]
    inside = Path(lm[48:60]).contains_points(np.stack([xx.ravel(), yy.ravel()], 1))
    px = frame.reshape(-1, 3)[inside].astype(float)
    luma = px @ [0.299, 0.587, 0.114]
    tint = (px.max(1) - px.min(1)) / np.maximum(px.max(1), 1)  # 0 grey .. 1 pure colour
    # The corners' deep red shadows are lip too: a cavity is dark and dull.
    return int(((tint < 0.16) & (luma > 150)).sum() + ((tint < 0.6) & (luma < 70)).sum())


def test_redetected_lips_part_with_jaw_open_and_close_for_a_bilabial(renderer):
    m = np.stack([motion(jawOpen=0.0), motion(jawOpen=0.4), motion(jawOpen=0.8),
                  motion(jawOpen=0.05, mouthClose=0.05, mouthPressLeft=0.6,
                         mouthPressRight=0.6)])
    frames = renderer(m)
    faces = [detect_face(f) for f in frames]
    gaps = [inner_gap(f.landmarks) / f.width for f in faces]
    assert gaps[0] + 0.03 < gaps[1] and gaps[1] + 0.02 < gaps[2], gaps
    # dlib puts the inner lips of this face's closed mouth ~0.05-0.07 face widths
    # apart, as for its slightly parted smile; what is between them tells them apart.
    assert gaps[3] < 0.075 and gaps[3] < 0.5 * gaps[1], gaps
    between = [_teeth_or_cavity(f, d.landmarks) for f, d in zip(frames, faces)]
    assert between[0] > 20 and between[1] > between[0] and between[3] <= 0.15 * between[0], between


def test_streaming_in_batches_matches_one_call(renderer):
    m = np.zeros((7, SPEC.dim), np.float32)
    m[:, SPEC["jawOpen"]] = np.linspace(0, 0.8, 7)
    m[:, SPEC["yaw"]] = np.linspace(-0.2, 0.2, 7)
    chunks = list(renderer.render_batches(m, batch=3))
    assert [len(c) for c in chunks] == [3, 3, 1]
    np.testing.assert_array_equal(np.concatenate(chunks), renderer(torch.from_numpy(m)))
    with pytest.raises(ValueError, match="58"):
        renderer(np.zeros((3, 57), np.float32))


def _max_edge(img: np.ndarray) -> np.ndarray:
    """Largest colour step to the right/down neighbour per pixel [H-1, W-1]."""
    g = img.astype(np.float32)
    return np.maximum(np.abs(np.diff(g, axis=0))[:, :-1].max(-1),
                      np.abs(np.diff(g, axis=1))[:-1].max(-1))


@pytest.mark.parametrize("pose", [dict(yaw=YAW), dict(yaw=-YAW), dict(pitch=PITCH),
                                  dict(pitch=-PITCH)], ids=["yaw+", "yaw-", "pitch+", "pitch-"])
def test_head_pose_has_no_tears_and_leaves_the_background(renderer, pose):
    m = motion(jawOpen=0.3, **pose)[None]
    frame = renderer(m)[0]
    x0, y0, x1, y1 = renderer.box
    outside = np.ones(frame.shape[:2], bool)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(frame[outside], renderer.background[outside])
    # No new hard edges: a tear or hole would add steps the photo does not have.
    src, out = _max_edge(renderer.background[y0:y1, x0:x1]), _max_edge(frame[y0:y1, x0:x1])
    assert np.percentile(out, 99.9) <= 1.15 * np.percentile(src, 99.9) + 8
    assert out.max() <= 1.2 * src.max() + 10
    # The backward map never folds (positive Jacobian) except where the new
    # mouth opening is painted over anyway.
    grid = renderer.sampling_grid(torch.from_numpy(m))[0].numpy()
    dx, dy = np.diff(grid, axis=1)[:-1], np.diff(grid, axis=0)[:, :-1]
    det = dx[..., 0] * dy[..., 1] - dx[..., 1] * dy[..., 0]
    lips = project(renderer.rig, m)[0, 60:68].numpy() - [x0, y0]
    yy, xx = np.mgrid[: det.shape[0], : det.shape[1]]
    mouth = Path(lips).contains_points(np.stack([xx.ravel(), yy.ravel()], 1)).reshape(det.shape)
    assert det[~binary_dilation(mouth, iterations=2)].min() > 0.05


def test_blink_covers_the_eyes_with_lid_skin(renderer):
    frames = renderer(np.stack([motion(), motion(eyeBlinkLeft=1.0, eyeBlinkRight=1.0)]))
    lm = renderer.landmarks
    yy, xx = np.mgrid[:SIZE, :SIZE]
    pts = np.stack([xx.ravel(), yy.ravel()], 1)
    for eye in (list(range(36, 42)), list(range(42, 48))):
        inside = Path(lm[eye]).contains_points(pts).reshape(SIZE, SIZE)
        open_, shut = (f[inside].astype(float).mean() for f in frames)
        assert shut > open_ + 8  # the dark iris is gone under skin
    # Away from the eyes nothing moved.
    np.testing.assert_array_equal(frames[1][int(lm[8, 1]):], frames[0][int(lm[8, 1]):])


def test_portrait_frames_keep_the_face_and_move_the_lips():
    portrait = WarpRenderer(default_photo(), size=(180, 320))
    frames = portrait(np.stack([motion(), motion(jawOpen=0.8)]))
    assert frames.shape == (2, 320, 180, 3)
    faces = [detect_face(f) for f in frames]
    # The face is framed upright and whole, not squashed: its box is about as tall as wide.
    box = faces[0].landmarks.max(0) - faces[0].landmarks.min(0)
    assert 0.8 < box[1] / box[0] < 1.4 and faces[0].width > 0.3 * 180
    gaps = [inner_gap(f.landmarks) / f.width for f in faces]
    assert gaps[0] + 0.05 < gaps[1], gaps


@pytest.mark.parametrize("parted", [True, False])
def test_the_photos_lip_curves_read_from_their_table_are_the_curves(parted):
    # The photo's lips are tabled once (a quarter of a frame's time went to evaluating them at every pixel).
    from talkhead.warp.mouth import LipGap, _curve

    lm = torch.as_tensor(detect_face(default_photo(), "photo").landmarks, dtype=torch.float32)
    gap = LipGap(lm, 100.0, parted)
    u = (torch.rand(4, 30, 40, generator=torch.Generator().manual_seed(0)) - 0.5) * 4 * gap.half
    un, vn = gap.lips
    top, bottom = _curve(un.expand(-1, 4, -1), vn.expand(-1, 4, -1), u)
    g, mid = gap._gap_mid(u)
    assert (g - (bottom - top).clamp(min=0)).abs().max() < 1e-3
    assert (mid - (bottom + top) / 2).abs().max() < 1e-3
