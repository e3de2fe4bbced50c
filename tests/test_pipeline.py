"""One path for offline and live: ``generate`` is ``stream`` fed the whole recording, and a stream fed
small chunks gives the same frames, frame for frame (real recording, shipped model, warp renderer)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from talkhead.audio.io import load_audio
from talkhead.cli import main
from talkhead.face.detect import default_photo
from talkhead.motion.model import load_model
from talkhead.motion.stream import MotionConfig
from talkhead.pipeline import GenerateConfig, generate, stream
from talkhead.render import make_renderer
from talkhead.rig.io import load_motion

WAV = Path(__file__).resolve().parent / "assets" / "speech" / "arctic_a0009.wav"


@pytest.fixture(scope="module")
def parts():
    return load_model(None), make_renderer("warp", default_photo(), 128, photo_name="astronaut"), load_audio(WAV)


@pytest.mark.parametrize("stride", [1, 3])
def test_a_stream_fed_in_40_ms_chunks_gives_the_frames_of_one_fed_at_once(parts, stride):
    model, renderer, wav = parts
    cfg = MotionConfig(seed=5)
    whole = list(stream([wav], model, renderer, cfg, stride=stride, batch=8))
    chunks = (wav[i:i + 640] for i in range(0, len(wav), 640))
    chunked = list(stream(chunks, model, renderer, cfg, stride=stride, batch=8))
    assert len(whole) == len(chunked) == int(np.ceil(len(wav) / 640))
    assert [f.index for f in chunked] == list(range(len(whole)))
    for a, b in zip(whole, chunked):
        assert np.array_equal(a.image, b.image) and np.array_equal(a.motion, b.motion)


def test_generate_writes_what_the_stream_makes(parts, tmp_path):
    import av

    model, renderer, wav = parts
    frames = list(stream([wav], model, renderer, MotionConfig(seed=5), batch=32))
    out, motion = tmp_path / "g.mp4", tmp_path / "g.npy"
    generate(GenerateConfig(audio=str(WAV), size=128, motion=MotionConfig(seed=5)), str(out), str(motion), progress=False)
    assert np.array_equal(load_motion(motion), np.stack([f.motion for f in frames]))
    with av.open(str(out)) as c:
        decoded = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])
    ours = np.stack([f.image for f in frames]).astype(np.float32)
    mse = float(np.mean((decoded.astype(np.float32) - ours) ** 2))
    assert decoded.shape == ours.shape and 10 * np.log10(255**2 / mse) > 30  # H.264 of the same frames (32.7 dB)


def test_unknown_renderer_is_one_line_exit_2(tmp_path, capsys):
    assert main(["generate", "--text", "Hi.", "--driver", "phones", "--renderer", "oil-paint", "-o",
                 str(tmp_path / "x.mp4"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown renderer 'oil-paint'" in err and err.count("\n") == 1 and not (tmp_path / "x.mp4").exists()


def test_a_stream_continues_from_the_motion_shown_before_it(parts):
    """A live face going from idle to speech: with ``tail``, the first frame starts where the idle face was."""
    from talkhead.rig.spec import SPEC
    from talkhead.serve.session import idle_track

    model, renderer, wav = parts
    idle = idle_track(30, seed=2)
    idle[:, SPEC.pose.start] += 0.05  # the head was pitched away from rest (about 2 s.d. of the corpus)
    cold = list(stream([wav], model, renderer, MotionConfig(seed=5)))
    warm = list(stream([wav], model, renderer, MotionConfig(seed=5), tail=idle))
    pitch = SPEC.pose.start
    jump = lambda frames: abs(frames[0].motion[pitch] - idle[-1, pitch])  # noqa: E731
    assert jump(warm) < 0.5 * jump(cold)  # measured: 0.044 against 0.106 rad
    assert len(warm) == len(cold) == int(np.ceil(len(wav) / 640))
