"""``talkhead bench avatar``'s measures on real frames: they tell a copy, a blur and a frozen mouth apart."""

from __future__ import annotations

import numpy as np

from talkhead.bench.avatar import AvatarBenchConfig, by_pose, face_metrics, pose_novelty, speech_driven
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


def test_speech_driven_rows_on_a_real_recording(tiny_avatar):
    row = speech_driven(tiny_avatar, AvatarBenchConfig().speech[0])
    assert row["frames"] > 50 and row["recording"] == "arctic_a0007.wav"
    assert all(row[k] is not None for k in ("lip_gap_spread", "unranged_lip_gap_spread", "filmed_lip_gap_spread",
                                            "flow_lip_gap_spread", "lips_lip_gap_spread"))
    # flow_: the bank's detail moved to the mouth; lips_: the lips filmed (``AvatarRenderer(mouth="lips")``)
    assert 0 < row["identity_found"] <= 1 and row["identity_distance"] is not None
    assert row["warp_lip_r_with_jawOpen"] is not None
    # What the motion asks of the lips, read as the gap it draws on each face: the warp renderer's geometry draws
    # exactly that gap, so dlib reads it back closely.
    assert row["warp_lip_r_with_motion_gap"] > 0.7 and row["lip_r_with_motion_gap"] is not None
    # The filmed base frames are the same person as the reference crop (dlib's "same person" is < 0.6).
    assert 0 <= row["filmed_identity_distance"] < 0.6


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


def test_the_command_names_an_unknown_pair_or_a_missing_folder(tmp_path, capsys):
    from talkhead.cli import main

    base = ["bench", "avatar", "--out", str(tmp_path / "out"), "--videos", str(tmp_path), "--talking", str(tmp_path)]
    assert main([*base, "--pairs", "cap12", "nobody"]) == 2
    assert "unknown pair 'nobody'; known: cap12, pexels, edtalk, andrew" in capsys.readouterr().err
    assert main([*base[:-1], str(tmp_path / "none")]) == 2
    assert "no such folder of videos" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_video_split_at_another_time_is_split_again(talking_video, tmp_path):
    """The bench's pairs are one video cut in two: a cut at another time in the same folder is made again, not the
    first cut read back (recipes/avatar_short.py cuts a pair's training video shorter)."""
    from talkhead.bench.avatar import _split_video
    from talkhead.video import probe

    video = talking_video[0]
    total = probe(video)["video_frames"]
    first, rest = _split_video(video, 1.0, tmp_path)
    assert (probe(first)["video_frames"], probe(rest)["video_frames"]) == (25, total - 25)
    short, _ = _split_video(video, 0.4, tmp_path)
    assert probe(short)["video_frames"] == 10 and probe(first)["video_frames"] == 25
