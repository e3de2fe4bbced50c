"""``talkhead render``: motion captured from a video (or a Live Link Face export) drawn on a photo, by default
the whole photo at its own size: drawn on the video's first frame it re-enacts the video in its own frame."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from talkhead.cli import main
from talkhead.rig.spec import SPEC
from talkhead.video import probe, read_frames

SIZE = (400, 300)  # as the real webcam videos (faces ~75 px wide)


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    """A talking face drawn from known motion (with its speech), its first frame as a PNG, and the motion
    ``talkhead motion --from-video`` fits to it: (dir, video, real frames, frame0.png, motion.csv)."""
    from PIL import Image

    from talkhead.audio.tts import synthesize
    from talkhead.face.detect import default_photo
    from talkhead.rig import target_motion
    from talkhead.video import write_mp4
    from talkhead.warp.renderer import WarpRenderer

    d = tmp_path_factory.mktemp("render")
    sp = synthesize("Bob bought a big blue map for papa.", "us-female")
    true = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=3)
    write_mp4(d / "talk.mp4", WarpRenderer(default_photo(), SIZE)(true), sp.wav, sp.sample_rate)
    real = read_frames(d / "talk.mp4")
    Image.fromarray(real[0]).save(d / "frame0.png")
    assert main(["motion", "--from-video", str(d / "talk.mp4"), "-o", str(d / "m.csv"), "--quiet"]) == 0
    return d, d / "talk.mp4", real, d / "frame0.png", d / "m.csv"


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    """Mean over frames of each frame's PSNR (dB)."""
    mse = ((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean(axis=(1, 2, 3))
    return float(np.mean(10 * np.log10(255.0 ** 2 / np.maximum(mse, 1e-10))))


def test_captured_motion_on_the_first_frame_reenacts_the_video(captured):
    from talkhead.face.detect import detect_face

    d, video, real, frame0, motion = captured
    out = d / "reenact.mp4"
    assert main(["render", "--image", str(frame0), "--motion", str(motion), "-o", str(out), "--quiet"]) == 0
    info = probe(out)
    assert (info["width"], info["height"]) == SIZE and info["video_frames"] == len(real)
    assert info["audio_codec"] is None  # no --audio: a silent video
    fake = read_frames(out)
    lm = detect_face(real[0]).landmarks  # the lower face: nose tip to chin, jaw side to side
    x0, x1, y0, y1 = int(lm[:, 0].min()), int(lm[:, 0].max()) + 1, int(lm[30, 1]), int(lm[8, 1]) + 4
    lower = np.s_[:, y0:y1, x0:x1]
    still = np.repeat(real[:1], len(real), axis=0)  # the neutral face: the first frame held
    # Measured: lower face 25.6 dB re-enacted against 16.6 dB for the still frame; whole frame 34.6 vs 27.3.
    assert _psnr(fake[lower], real[lower]) > max(22.0, _psnr(still[lower], real[lower]) + 6.0)
    assert _psnr(fake, real) > _psnr(still, real) + 4.0


def test_odd_photo_sides_size_and_audio(captured):
    from PIL import Image

    d, video, real, _, motion = captured
    Image.fromarray(real[0][:299, :399]).save(d / "odd.png")
    out = d / "odd.mp4"
    assert main(["render", "--image", str(d / "odd.png"), "--motion", str(motion), "--audio", str(video),
                 "-o", str(out), "--quiet"]) == 0
    info = probe(out)
    assert (info["width"], info["height"]) == (398, 298)  # the odd last column and row dropped
    assert info["audio_codec"] == "aac" and abs(info["audio_duration"] - len(real) / 25) < 0.1
    fake = read_frames(out)
    assert _psnr(fake[:1, :, :100], real[:1, :298, :100]) > 35  # same coordinates: the background unmoved
    small = d / "small.mp4"
    assert main(["render", "--image", str(d / "odd.png"), "--motion", str(motion), "--size", "200x150",
                 "-o", str(small), "--quiet"]) == 0
    assert (probe(small)["width"], probe(small)["height"]) == (200, 150)


def test_a_live_link_face_export_renders_at_25_fps(captured):
    d, _, _, frame0, motion = captured
    from talkhead.rig.io import load_motion

    m = load_motion(motion)
    t60 = np.arange(round(len(m) / 25 * 60)) / 60  # Live Link Face records at 60 fps
    path = d / "llf.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Timecode", "BlendShapeCount"] + [n[0].upper() + n[1:] for n in SPEC.names[:52]]
                   + ["HeadYaw", "HeadPitch", "HeadRoll", "LeftEyeYaw", "LeftEyePitch", "LeftEyeRoll"])
        for t in t60:
            row = np.array([np.interp(t, np.arange(len(m)) / 25, m[:, c]) for c in range(58)])
            sec, frame = divmod(round(t * 60), 60)
            w.writerow([f"14:02:{sec:02d}:{frame:02d}.000", 61] + [f"{v:.6f}" for v in row[:52]]
                       + [f"{row[SPEC[k]]:.6f}" for k in ("yaw", "pitch", "roll")] + ["0.01"] * 3)
    out = d / "llf.mp4"
    assert main(["render", "--image", str(frame0), "--motion", str(path), "-o", str(out), "--quiet"]) == 0
    assert abs(probe(out)["video_frames"] - len(m)) <= 1


def test_bad_motion_and_photo_are_one_line_and_exit_2(captured, tmp_path, capsys):
    d, _, real, frame0, motion = captured
    (tmp_path / "junk.csv").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "few.csv").write_text("jawOpen,mouthClose\n0.1,0.2\n")
    lines = motion.read_text().splitlines()
    (tmp_path / "nan.csv").write_text("\n".join(lines[:3] + ["nan" + lines[3][lines[3].index(","):]]) + "\n")
    (tmp_path / "empty.csv").write_text(lines[0] + "\n")
    from PIL import Image

    Image.fromarray(np.full((120, 160, 3), 90, np.uint8)).save(tmp_path / "noface.png")
    cases = [(tmp_path / n, frame0, "x.mp4") for n in ("junk.csv", "few.csv", "nan.csv", "empty.csv", "none.csv")]
    cases += [(motion, tmp_path / "noface.png", "x.mp4"), (motion, frame0, "x.avi")]
    for m, image, name in cases:
        argv = ["render", "--image", str(image), "--motion", str(m), "-o", str(tmp_path / name), "--quiet"]
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith("talkhead: error:") and "Traceback" not in err, err
    assert not list(tmp_path.glob("x.*"))
