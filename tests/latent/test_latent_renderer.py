"""``generate --renderer latent``: the whole pipeline with the latent engine, paste-back, cadence, E2, bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tiny_latent import ASTRONAUT

from talkhead.cli import main
from talkhead.face.detect import default_photo
from talkhead.latent.renderer import LatentRenderer, LatentVideo, feather_mask


def _decode(path):
    import av

    with av.open(str(path)) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


@pytest.fixture(scope="module")
def student(tiny_engine_run):
    return str(tiny_engine_run / "student-1.safetensors")


def _motion(n: int = 40) -> np.ndarray:
    rng = np.random.default_rng(0)
    m = np.zeros((n, 58), np.float32)
    m[:, :10] = np.abs(np.sin(np.arange(n)[:, None] / 4 + rng.uniform(0, 3, 10))) * 0.6
    return m


def test_frames_keep_the_photo_outside_the_feathered_box(student):
    r = LatentRenderer(default_photo(), 256, engine=student)
    frames = np.stack(list(r.frames(_motion(), 16)))
    assert frames.shape == (40, 256, 256, 3)
    x0, y0, x1, y1 = (int(round(v)) for v in r.box)
    outside = np.ones((256, 256), bool)
    outside[max(0, y0):y1, max(0, x0):x1] = False
    assert np.array_equal(frames[:, outside], np.broadcast_to(r.background[outside], frames[:, outside].shape))
    cy, cx = (y0 + y1) // 2, (x0 + x1) // 2  # the box's middle is the engine's face, not the photo
    assert np.abs(frames[:, cy - 8:cy + 8, cx - 8:cx + 8].astype(int) - r.background[cy - 8:cy + 8, cx - 8:cx + 8]).mean() > 1
    m = feather_mask(40, 60)
    assert m[20, 30] == 1 and m[0, 0] < 0.01 and torch.all(m >= 0)


def test_cadence_samples_keyframes_only_and_chunks_do_not_matter(student):
    photo, motion = default_photo(), _motion(45)
    full = LatentRenderer(photo, 128, engine=student, stride=1).latents(motion)
    r3 = LatentRenderer(photo, 128, engine=student, stride=3)
    z3 = torch.cat([r3.latents(motion[i:i + 16]) for i in range(0, 45, 16)])  # batches of 16, as the stage sends
    keys = [i for i in range(45) if i % 3 == 0 or i in (15, 31, 44)]  # multiples of 3 and each batch's last
    assert torch.allclose(z3[keys], full[keys], atol=1e-5)
    between = [i for i in range(45) if i not in keys]
    assert not torch.allclose(z3[between], full[between], atol=1e-3)  # interpolated, not sampled
    again = LatentRenderer(photo, 128, engine=student, stride=3)
    assert torch.allclose(torch.cat([again.latents(motion[i:i + 16]) for i in range(0, 45, 16)]), z3)


def test_generate_e1_and_e2_then_decode(student, tmp_path, capsys):
    out, lat, dec = tmp_path / "e1.mp4", tmp_path / "e2.npz", tmp_path / "dec.mp4"
    base = ["generate", "--text", "Hello there.", "--renderer", "latent", "--latent-engine", student,
            "--driver", "phones", "--size", "192", "--quiet"]
    assert main([*base, "-o", str(out), "--latents-out", str(lat)]) == 0
    assert main(["decode", str(lat), "-o", str(dec), "--quiet"]) == 0
    a, b = _decode(out), _decode(dec)
    assert a.shape == b.shape and a.shape[1:] == (192, 192, 3)
    assert np.abs(a.astype(int) - b).mean() < 1.0  # the same latents decode to the same video
    only = tmp_path / "only.npz"
    assert main([*base, "--latents-out", str(only)]) == 0  # E2 alone: no decoding, no video
    v1, v2 = LatentVideo.load(lat), LatentVideo.load(only)
    assert np.array_equal(v1.latents, v2.latents) and v1.latents.dtype == np.float16
    assert len(v1.audio) / 16_000 == pytest.approx(len(v1.latents) / 25, abs=0.05)


def test_bad_input_is_named(student, tmp_path, capsys):
    from PIL import Image

    small = tmp_path / "small.png"
    Image.open(ASTRONAUT).resize((180, 180)).save(small)  # found, but its face crop is 60 px
    cases = [
        (["--image", str(small), "-o", str(tmp_path / "a.mp4")], "too small"),
        (["--renderer", "warp", "--latents-out", str(tmp_path / "b.npz")], "needs --renderer latent"),
        (["--latent-engine", "latent-nobody", "-o", str(tmp_path / "c.mp4")], "unknown latent engine"),
        ([], "give -o"),
    ]
    for extra, message in cases:
        args = ["generate", "--text", "Hi.", "--driver", "phones", "--quiet", "--renderer", "latent",
                "--latent-engine", student, *extra]
        if "--latent-engine" in extra:
            args = [a for a in args[:-len(extra) - 2]] + extra
        assert main(args) == 2, extra
        assert message in capsys.readouterr().err
    assert not list(tmp_path.glob("*.mp4")) and not list(tmp_path.glob("*.npz"))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    assert main(["decode", str(tmp_path / "junk.npz"), "-o", str(tmp_path / "d.mp4")]) == 2
    assert "not a latents file" in capsys.readouterr().err
