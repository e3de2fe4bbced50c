"""``talkhead data video``: a real talking-head video (ours, rendered from known motion) in, crops and fitted
motion out, the motion recovered; videos without audio or without a face are skipped and listed."""

from __future__ import annotations

import json

import numpy as np

from talkhead.cli import main
from talkhead.latent.data import load_faces
from talkhead.metrics import pearson
from talkhead.rig.io import load_motion
from talkhead.rig.spec import SPEC


def _silent_video(path, frames):
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(f, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)


def test_video_to_crops_and_recovered_motion(tmp_path, capsys):
    src, out = tmp_path / "videos", tmp_path / "faces"
    src.mkdir()
    assert main(["generate", "--text", "Bob bought a big blue map for papa.", "--driver", "phones", "--size", "384",
                 "-o", str(src / "talk.mp4"), "--motion-out", str(tmp_path / "true.npy"), "--quiet"]) == 0
    _silent_video(src / "mute.mp4", np.full((10, 64, 64, 3), 128, np.uint8))
    from talkhead.video import write_mp4
    write_mp4(src / "noface.mp4", [np.full((64, 64, 3), 90, np.uint8)] * 30, np.zeros(16_000 * 30 // 25, np.float32), 16_000)
    assert main(["data", "video", str(src), "--out", str(out), "--quiet"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["kept"] == ["talk.mp4"]
    why = {s["file"]: s["why"] for s in report["skipped"]}
    assert "no audio" in why["mute.mp4"] and "no face" in why["noface.mp4"]
    clip = load_faces(out)[0]
    true = load_motion(tmp_path / "true.npy")
    n = len(clip["motion"])
    assert n >= 25 and clip["frames"].shape == (n, 128, 128, 3) and np.array_equal(clip["reference"], clip["frames"][0])
    for channel, r in [("jawOpen", 0.95), ("yaw", 0.8), ("pitch", 0.8)]:  # fitted from the landmarks alone
        assert pearson(clip["motion"][:, SPEC[channel]], true[:n, SPEC[channel]]) > r, channel
    assert main(["data", "video", str(tmp_path / "nothing"), "--out", str(out)]) == 2
