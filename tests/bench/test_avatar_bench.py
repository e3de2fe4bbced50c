"""``talkhead bench avatar``: the speech-driven rows on a real recording, the pairs' videos and the command's errors
(its measures: ``test_face_metrics.py``)."""

from __future__ import annotations

from talkhead.bench.avatar import AvatarBenchConfig, speech_driven


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


def test_the_command_names_an_unknown_pair_or_a_missing_folder(tmp_path, capsys):
    from talkhead.cli import main

    base = ["bench", "avatar", "--out", str(tmp_path / "out"), "--videos", str(tmp_path), "--talking", str(tmp_path)]
    assert main([*base, "--pairs", "cap12", "nobody"]) == 2
    assert "unknown pair 'nobody'; known: cap12, pexels, edtalk, andrew" in capsys.readouterr().err
    assert main([*base[:-1], str(tmp_path / "none"), "--pairs", "edtalk"]) == 2
    assert "no such folder of videos" in capsys.readouterr().err
    assert main([*base, "--extra", str(tmp_path / "none"), "--pairs", "macron"]) == 2
    assert "recipes/talking_clips.py" in capsys.readouterr().err
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
