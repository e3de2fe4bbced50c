"""`talkhead generate`: real TTS speech, the astronaut photo, an mp4 with both streams; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from talkhead.audio.io import write_wav
from talkhead.audio.tts import synthesize
from talkhead.cli import main
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import GenerateConfig, generate
from talkhead.rig.io import load_motion
from talkhead.rig.spec import SPEC
from talkhead.video import probe


def _decode(path):
    import av

    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def test_generate_from_text_with_phone_targets(tmp_path):
    out, motion = tmp_path / "a.mp4", tmp_path / "a.csv"
    info = generate(GenerateConfig(text="Bob bought a blue umbrella.", size=256,
                                   motion=MotionConfig(driver="phones")), str(out), str(motion), progress=False)
    p = probe(out)
    assert (p["video_codec"], p["audio_codec"], p["fps"]) == ("h264", "aac", 25.0)
    assert (p["width"], p["height"]) == (256, 256)
    assert abs(p["video_duration"] - p["audio_duration"]) <= 1 / 25 + 1e-6
    assert p["video_frames"] == info["frames"] == len(load_motion(motion))


def test_generate_from_an_audio_file_with_a_model(tmp_path, tiny_teacher):
    wav = tmp_path / "s.wav"
    speech = synthesize("Speech from a file.", "gb-male-deep")
    write_wav(wav, speech.wav, speech.sample_rate)
    out = tmp_path / "b.mp4"
    assert main(["generate", "--audio", str(wav), "-o", str(out), "--model", str(tiny_teacher), "--steps", "2",
                 "--size", "128", "--quiet"]) == 0
    p = probe(out)
    assert p["video_frames"] == int(np.ceil(len(speech.wav) / 640))


def test_generate_from_a_real_recording_and_its_transcript(tmp_path):
    from pathlib import Path

    wav = Path(__file__).resolve().parent / "assets" / "speech" / "allison-agent-alreadyon.wav"
    out, motion = tmp_path / "r.mp4", tmp_path / "r.csv"
    text = "That agent is already logged on. Please enter your agent number followed by the pound key."
    assert main(["generate", "--audio", str(wav), "--transcript", text, "-o", str(out), "--size", "128",
                 "--motion-out", str(motion), "--quiet"]) == 0
    m = load_motion(motion)
    assert probe(out)["video_frames"] == len(m) == 138  # 5.52 s of 8 kHz telephone speech
    # Driven by the aligned phones: the lips close on the bilabials of "number" and "by" and open between.
    jaw = m[:, SPEC["jawOpen"]]
    assert jaw.max() > 0.5 and jaw.min() < 0.05


def test_cadence_keeps_keyframes_and_blends_between(tmp_path):
    base = dict(text="Papa made more maps.", size=128, motion=MotionConfig(driver="phones"))
    full, half = tmp_path / "f.mp4", tmp_path / "h.mp4"
    generate(GenerateConfig(**base), str(full), progress=False)
    generate(GenerateConfig(**base, cadence_stride=2), str(half), progress=False)
    a, b = _decode(full), _decode(half)
    assert a.shape == b.shape
    # Keyframes carry the same motion; H.264 makes them close, not identical.
    diff_key = np.abs(a[::2].astype(float) - b[::2].astype(float)).mean()
    diff_mid = np.abs(a[1::2].astype(float) - b[1::2].astype(float)).mean()
    assert diff_key < 2.0 and diff_key <= diff_mid + 0.5


@pytest.mark.parametrize("case", ["corrupt_audio", "empty_audio", "bad_image", "no_face", "bad_out", "no_dir", "both"])
def test_bad_input_is_one_line_exit_2_and_no_file(case, tmp_path, capsys):
    out = tmp_path / "out.mp4"
    args = ["generate", "--text", "Hello.", "--driver", "phones", "--size", "128", "-o", str(out), "--quiet"]
    if case == "corrupt_audio":
        (tmp_path / "c.mp3").write_bytes(b"\xff\xfb" + bytes(range(256)) * 4)
        args = ["generate", "--audio", str(tmp_path / "c.mp3"), "-o", str(out), "--driver", "phones", "--quiet"]
    elif case == "empty_audio":
        write_wav(tmp_path / "e.wav", np.zeros(0, np.float32), 16_000)
        args = ["generate", "--audio", str(tmp_path / "e.wav"), "-o", str(out), "--quiet"]
    elif case == "bad_image":
        (tmp_path / "p.png").write_bytes(b"not a png")
        args += ["--image", str(tmp_path / "p.png")]
    elif case == "no_face":
        from PIL import Image

        Image.fromarray(np.full((200, 200, 3), 128, np.uint8)).save(tmp_path / "grey.png")
        args += ["--image", str(tmp_path / "grey.png")]
    elif case == "bad_out":
        out = tmp_path / "out.avi"
        args[args.index("-o") + 1] = str(out)
    elif case == "no_dir":
        out = tmp_path / "missing" / "out.mp4"
        args[args.index("-o") + 1] = str(out)
    elif case == "both":
        args += ["--audio", "x.wav"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("talkhead: error:") and len(err.splitlines()) == 1
    assert not out.exists() and not list(out.parent.glob(".*part*")) if out.parent.exists() else True


def test_e2e_bench_writes_stage_shares(tmp_path):
    from talkhead.bench.e2e import run_e2e_bench

    r = run_e2e_bench(tmp_path, size=128, runs=1, strides=(1, 2))
    assert [row["cadence_stride"] for row in r["rows"]] == [1, 2]
    row = r["rows"][0]
    assert abs(sum(row[f"{k}_share"] for k in ("tts", "motion", "render", "encode")) - 1) < 0.01
    assert row["psnr_vs_stride1_db"] == 99.0 and r["rows"][1]["psnr_vs_stride1_db"] < 99.0
    assert (tmp_path / "e2e.png").exists()


@pytest.mark.parametrize("text, size", [("512", (512, 512)), ("1080x1920", (1080, 1920)), ("96X160", (96, 160))])
def test_size_accepts_n_or_width_x_height(text, size):
    from talkhead.cli import build_parser

    assert build_parser().parse_args(["generate", "--text", "Hi.", "--size", text]).size == size


@pytest.mark.parametrize("bad", ["12", "wide", "100x", "1080x1920x3", "0x512"])
def test_bad_size_is_refused_with_a_message(bad, tmp_path, capsys):
    out = tmp_path / "s.mp4"
    with pytest.raises(SystemExit) as e:
        main(["generate", "--text", "Hi.", "--size", bad, "-o", str(out), "--quiet"])
    assert e.value.code == 2 and "--size" in capsys.readouterr().err and not out.exists()


def test_generate_portrait_video(tmp_path):
    out = tmp_path / "p.mp4"
    assert main(["generate", "--text", "Mama made maps.", "--driver", "phones", "--size", "96x160",
                 "-o", str(out), "--quiet"]) == 0
    p = probe(out)
    assert (p["width"], p["height"]) == (96, 160)


def test_unwritable_output_and_zero_steps_are_one_line_errors(tmp_path, capsys):
    assert main(["generate", "--text", "Hi.", "-o", "/proc/x.mp4", "--quiet"]) == 2
    assert "cannot write to /proc" in capsys.readouterr().err
    assert main(["generate", "--text", "Hi.", "--steps", "0", "-o", str(tmp_path / "x.mp4"), "--quiet"]) == 2
    assert "--steps must be at least 1" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
