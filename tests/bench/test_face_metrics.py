"""The bench's measures of a drawn lower face against real frames: they tell a copy, a blur and a frozen mouth apart,
and split PSNR by how far each frame's head pose is from the training poses."""

from __future__ import annotations

import numpy as np

from talkhead.bench.face_metrics import by_pose, face_metrics, pose_novelty
from talkhead.rig.spec import SPEC


def test_face_metrics_tell_truth_blur_and_freeze_apart(talking_video, tiny_avatar):
    from PIL import Image, ImageFilter

    from talkhead.avatar.data import extract
    from talkhead.avatar.file import load_avatar
    from talkhead.video import read_frames

    av = load_avatar(tiny_avatar)
    frames = read_frames(talking_video[0])[:60]
    real = np.stack([extract(f, av.base_affine[0], av.side) for f in frames])
    same = face_metrics(real, real, av.paste)
    assert same["psnr_db"] > 60 and same["detail_ratio"] == 1.0 and same["flicker_ratio"] == 1.0
    assert same["lip_r"] is not None and same["lip_r"] > 0.99
    blur = np.stack([np.asarray(Image.fromarray(c).filter(ImageFilter.GaussianBlur(2))) for c in real])
    b = face_metrics(blur, real, av.paste)
    assert b["detail_ratio"] < 0.5 and b["psnr_db"] < same["psnr_db"]
    frozen = face_metrics(np.repeat(real[:1], len(real), 0), real, av.paste)
    assert frozen["flicker_ratio"] == 0.0 and (frozen["lip_r"] is None or abs(frozen["lip_r"]) < 0.5)


def test_pose_novelty_and_psnr_by_pose(talking_video, tiny_avatar):
    """Degrees from the nearest training pose in pitch and yaw (roll is the aligned crop's), and PSNR per bin."""
    from talkhead.avatar.data import extract
    from talkhead.avatar.file import load_avatar
    from talkhead.video import read_frames

    av = load_avatar(tiny_avatar)
    train = av.bank["motion"]
    assert np.allclose(pose_novelty(train, train), 0.0)
    train = np.zeros((50, 58), np.float32)  # yaw 0-5 degrees at pitch 0
    train[:, SPEC["yaw"]] = np.radians(np.linspace(0, 5, 50))
    turned = np.zeros((3, 58), np.float32)
    turned[:, SPEC["yaw"]] = np.radians([6.0, 8.0, 15.0])
    turned[:, SPEC["roll"]] = 1.0
    assert np.allclose(pose_novelty(train, turned), [1.0, 3.0, 10.0], atol=1e-3)
    real = np.stack([extract(f, av.base_affine[0], av.side) for f in read_frames(talking_video[0])[:3]])
    noisy = np.clip(real + np.random.default_rng(0).normal(0, 8, real.shape), 0, 255).astype(np.uint8)
    rows = by_pose(pose_novelty(train, turned), {"same": real, "noisy": noisy}, real, av.paste)
    assert rows["bins_deg"] == ["0-2", "2-5", "5-inf"] and rows["frames"] == [1, 1, 1]
    assert min(rows["same"]) > 60 and max(rows["noisy"]) < 35
    none = by_pose(np.zeros(3), {"same": real}, real, av.paste)
    assert none["frames"] == [3, 0, 0] and none["same"][1:] == [None, None]
