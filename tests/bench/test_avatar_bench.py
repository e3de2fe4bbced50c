"""``talkhead bench avatar``'s measures on real frames: they tell a copy, a blur and a frozen mouth apart."""

from __future__ import annotations

import numpy as np

from talkhead.bench.avatar import AvatarBenchConfig, face_metrics, speech_driven


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
    assert all(row[k] is not None for k in ("lip_gap_spread", "unranged_lip_gap_spread", "filmed_lip_gap_spread"))
    assert 0 < row["identity_found"] <= 1 and row["identity_distance"] is not None
    assert row["warp_lip_r_with_jawOpen"] is not None
    # The filmed base frames are the same person as the reference crop (dlib's "same person" is < 0.6).
    assert 0 <= row["filmed_identity_distance"] < 0.6
