"""``talkhead motion --from-video``: a face video (ours, drawn from known motion) back to its motion, with or
without sound, in another container and frame rate, with a second face in view, with the face lost for a
stretch (listed and filled); a video without a face, or not a video, is one line and exit code 2."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.face.capture import Adam, capture
from talkhead.metrics import pearson
from talkhead.rig.io import load_motion
from talkhead.rig.spec import SPEC

SIZE = (400, 300)  # as the real webcam videos, whose faces are ~75 px wide: dlib's small end


@pytest.fixture(scope="module")
def talk(tmp_path_factory):
    """A talking astronaut drawn by the warp renderer from phone-driven motion (blinks and head too),
    written with its speech: (video path, frames [T, H, W, 3], true motion [T, 58])."""
    from talkhead.audio.tts import synthesize
    from talkhead.face.detect import default_photo
    from talkhead.rig import target_motion
    from talkhead.video import write_mp4
    from talkhead.warp.renderer import WarpRenderer

    sp = synthesize("Bob bought a big blue map for papa.", "us-female")
    true = target_motion(sp.wav, sp.sample_rate, sp.phones, seed=3)
    frames = WarpRenderer(default_photo(), SIZE)(true)
    path = tmp_path_factory.mktemp("capture") / "talk.mp4"
    write_mp4(path, frames, sp.wav, sp.sample_rate)
    return path, frames, true


def _recovered(motion, true, channels=(("jawOpen", 0.9), ("yaw", 0.8), ("pitch", 0.8)), keep=None):
    keep = np.ones(len(true), bool) if keep is None else keep
    for name, r in channels:
        got = pearson(motion[keep, SPEC[name]], true[keep, SPEC[name]])
        assert got >= r, f"{name}: r = {got:.3f} < {r}"


def test_capture_recovers_the_motion_a_video_was_drawn_from(talk):
    path, frames, true = talk
    notes = []
    got = capture(path, say=notes.append)
    assert got["motion"].shape == true.shape and got["motion"].dtype == np.float32
    assert got["lost"] == [] and got["faces"] == 1 and got["size"] == SIZE and notes == []
    _recovered(got["motion"], true)
    assert np.abs(got["motion"][:, SPEC["jawOpen"]] - true[:, SPEC["jawOpen"]]).mean() < 0.08


def test_a_silent_video_in_another_container_rate_and_size_is_captured(talk, tmp_path, write_video):
    _, frames, true = talk
    odd = frames[:, :299, :397]  # odd sides: MJPEG takes them, H.264 would not
    path = write_video(tmp_path / "mute.avi", np.repeat(odd, 2, axis=0), rate=50, codec="mjpeg", pix_fmt="yuvj420p")
    got = capture(path)
    assert got["motion"].shape == true.shape and got["size"] == (397, 299) and got["lost"] == []
    _recovered(got["motion"], true)


def test_a_phone_video_stored_on_its_side_is_turned_upright(talk, tmp_path, write_video):
    import av

    if not hasattr(av.video.stream.VideoStream, "set_display_rotation"):  # only recent PyAV writes a display matrix
        pytest.skip("this PyAV cannot write a rotated video")
    _, frames, true = talk
    n = 30
    sideways = np.rot90(frames[:n], -1, axes=(1, 2))  # stored turned clockwise, shown turned back
    got = capture(write_video(tmp_path / "phone.mp4", sideways, rotation=90))
    assert got["size"] == SIZE and got["lost"] == []
    _recovered(got["motion"], true[:n], channels=(("jawOpen", 0.9),))


def test_the_largest_of_two_faces_is_followed_and_said_once(talk, tmp_path, write_video):
    from PIL import Image

    _, frames, true = talk
    n = 40
    h, w = frames.shape[1:3]
    canvas = np.full((n, h, w + w // 2 + 8, 3), 40, np.uint8)
    canvas[:, :, :w] = frames[:n]
    small = [np.asarray(Image.fromarray(f).resize((w // 2 + 8, h // 2 + 6), Image.BILINEAR)) for f in frames[::-1][:n]]
    canvas[:, h // 4:h // 4 + h // 2 + 6, w:] = np.stack(small)  # another, smaller face moving otherwise
    notes = []
    got = capture(write_video(tmp_path / "two.mp4", canvas), say=notes.append)
    assert got["faces"] == 2 and got["lost"] == []
    assert len(notes) == 1 and notes[0].startswith("2 faces in frame 0") and "largest" in notes[0]
    _recovered(got["motion"], true[:n], channels=(("jawOpen", 0.9),))


def test_a_stretch_without_a_face_is_listed_and_filled(talk, tmp_path, capsys, write_video):
    _, frames, true = talk
    blank = frames.copy()
    a, b = 20, 31
    blank[a:b + 1] = frames[0].mean((0, 1)).astype(np.uint8)  # the face gone: a flat frame
    video, out = write_video(tmp_path / "blank.mp4", blank), tmp_path / "m.csv"
    assert main(["motion", "--from-video", str(video), "-o", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err.count("face lost in frames") == 1 and f"frames {a}-{b} " in err, err
    m = load_motion(out)
    assert m.shape == true.shape
    keep = np.ones(len(m), bool)
    keep[a:b + 1] = False
    _recovered(m, true, keep=keep)
    # Filled: a straight line between the frames either side of the gap, in every channel.
    t = (np.arange(a, b + 1) - (a - 1)) / (b + 1 - (a - 1))
    line = m[a - 1] + t[:, None] * (m[b + 1] - m[a - 1])
    np.testing.assert_allclose(m[a:b + 1], line, atol=1e-4)


def test_no_face_or_not_a_video_is_one_line_and_exit_2(tmp_path, capsys, talk, write_video):
    cases = {"noface.mp4": write_video(tmp_path / "noface.mp4", np.full((12, 96, 128, 3), 120, np.uint8))}
    (tmp_path / "junk.mp4").write_bytes(np.random.default_rng(0).bytes(5000))
    cases["junk.mp4"] = tmp_path / "junk.mp4"
    data = talk[0].read_bytes()
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) // 3])  # a copy cut off part-way
    cases["cut.mp4"] = tmp_path / "cut.mp4"
    cases["missing.mp4"] = tmp_path / "missing.mp4"
    for name, path in cases.items():
        assert main(["motion", "--from-video", str(path), "-o", str(tmp_path / "m.csv"), "--quiet"]) == 2, name
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and name in err and "Traceback" not in err, err
    assert "no face" in _run_err(["motion", "--from-video", str(cases["noface.mp4"]), "-o", str(tmp_path / "m.csv")],
                                 capsys)
    assert not (tmp_path / "m.csv").exists()
    both = ["motion", "--from-video", str(talk[0]), "--text", "hello", "-o", str(tmp_path / "m.csv")]
    assert "--text" in _run_err(both, capsys)


def _run_err(argv, capsys) -> str:
    assert main(argv + ["--quiet"]) == 2
    return capsys.readouterr().err


def test_frames_hours_apart_are_refused_at_once(tmp_path, capsys):
    """Two frames ten hours apart would be ten hours of repeated frames: a named error within a second instead."""
    import fractions
    import time

    import av

    path = tmp_path / "gap.mp4"
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=25)
        s.width = s.height = 64
        s.pix_fmt = "yuv420p"
        s.codec_context.time_base = fractions.Fraction(1, 25)
        for k, pts in enumerate([0, 25 * 36_000]):
            f = av.VideoFrame.from_ndarray(np.full((64, 64, 3), 100 * k, np.uint8), format="rgb24")
            f.pts, f.time_base = pts, fractions.Fraction(1, 25)
            for p in s.encode(f):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    t0 = time.perf_counter()
    assert main(["motion", "--from-video", str(path), "-o", str(tmp_path / "m.csv"), "--quiet"]) == 2
    assert time.perf_counter() - t0 < 10
    err = capsys.readouterr().err
    assert "runs past 3600 s" in err and "Traceback" not in err


def test_max_seconds_refuses_a_longer_video_before_its_frames_are_read(write_video, tmp_path, capsys):
    video = write_video(tmp_path / "four.mp4", np.full((100, 64, 64, 3), 90, np.uint8))  # 4 s at 25 fps
    out = tmp_path / "m.csv"
    assert main(["motion", "--from-video", str(video), "-o", str(out), "--max-seconds", "2", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "four.mp4 runs past 2 s" in err and "--max-seconds" in err and not out.exists()
    assert main(["motion", "--from-video", str(video), "-o", str(out), "--max-seconds", "0", "--quiet"]) == 2
    assert "--max-seconds must be above 0" in capsys.readouterr().err
    from talkhead.video import iter_frames, video_limit

    with video_limit(5.0):
        assert sum(1 for _ in iter_frames(video)) == 100
    with video_limit(3.0), pytest.raises(InputError, match="runs past 3 s"):
        next(iter(iter_frames(video)))


def test_the_fits_adam_steps_as_torchs_adam_does():
    """capture's own Adam (torch's first optimiser imports torch._dynamo, 1.1 s) moves a tensor as torch.optim.Adam
    does, to the bit, on a fit like capture's (a loss that is not a quadratic bowl, 200 steps)."""
    import torch

    gen = torch.Generator().manual_seed(0)
    target, start = torch.randn(40, 7, generator=gen), torch.randn(40, 7, generator=gen)
    ours, theirs = start.clone().requires_grad_(), start.clone().requires_grad_()
    mine, ref = Adam(ours, lr=0.02), torch.optim.Adam([theirs], lr=0.02)
    for _ in range(200):
        for p in (ours, theirs):
            p.grad = None
            ((torch.sin(p) * 2 - target) ** 2).sum().backward()
        mine.step()
        ref.step()
    assert torch.equal(ours, theirs) and not torch.equal(ours, start)
