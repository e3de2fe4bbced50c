"""Shared fixtures: real TTS speech, made once per test session (a second or so)."""

from __future__ import annotations

import numpy as np
import pytest
from tiny_latent import ASTRONAUT, TINY_NET, TINY_TRAIN

from talkhead.motion.data.corpus import CorpusConfig, synth_corpus
from talkhead.motion.net import DenoiserConfig
from talkhead.motion.train.configs import TrainConfig
from talkhead.motion.train.teacher import train

SENTENCES_PER_VOICE = 8


@pytest.fixture(scope="session")
def tts_samples():
    """{voice: [(text, Speech), ...]}: 8 generated paragraphs per voice, every voice, fixed seed."""
    from talkhead.audio.tts import VOICES, synthesize
    from talkhead.motion.data.text import paragraph

    rng = np.random.default_rng(20240611)
    out = {}
    for voice in VOICES:
        texts = [paragraph(rng, 1 + k % 3) for k in range(SENTENCES_PER_VOICE)]
        out[voice] = [(t, synthesize(t, voice)) for t in texts]
    return out


@pytest.fixture(scope="session")
def tts_motions(tts_samples):
    """{voice: [target motion [T, 58], ...]} for ``tts_samples``, seed 0."""
    from talkhead.rig import target_motion

    return {v: [target_motion(sp.wav, sp.sample_rate, sp.phones, seed=0) for _, sp in s]
            for v, s in tts_samples.items()}


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """Tiny test models run fastest on one thread, and leave the other core to a second process."""
    import torch

    torch.set_num_threads(1)


# A tiny corpus and a tiny trained teacher, made once per test session from real TTS speech.

TINY = DenoiserConfig(width=32, depth=1, heads=2, ff_mult=2)


def tiny_train_cfg(**kw) -> TrainConfig:
    # Plain x0 MSE (no SNR weight, no temporal term): the tiny teacher's per-batch losses stay comparable.
    base = dict(steps=8, batch=8, lr=1e-3, warmup=2, val_every=8, ckpt_every=4, val_clips=2, seed=0,
                snr_min=0.0, velocity=0.0)
    return TrainConfig(**{**base, **kw})


@pytest.fixture(scope="session")
def tiny_cfg():
    return TINY


@pytest.fixture(scope="session")
def make_train_cfg():
    return tiny_train_cfg


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    synth_corpus(out, CorpusConfig(minutes=0.8, seed=11, clips_per_shard=4), workers=1)
    return out


@pytest.fixture(scope="session")
def tiny_teacher(tiny_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("teacher")
    return train(tiny_corpus, out, TINY, tiny_train_cfg(steps=40), progress=False)


@pytest.fixture(scope="session")
def real_corpus(tmp_path_factory):
    """The real recordings in tests/assets/speech, force-aligned: 2 held-out clips, 2 training clips (seed 3)."""
    from pathlib import Path

    from talkhead.motion.data.real import AlignConfig, align_folder

    speech = Path(__file__).resolve().parent / "assets" / "speech"
    out = tmp_path_factory.mktemp("real") / "corpus"
    align_folder(speech, speech / "transcripts.txt", out, AlignConfig(speaker="real", heldout=0.5, seed=3))
    return out


@pytest.fixture(autouse=True, scope="session")
def _private_registration_cache(tmp_path_factory):
    """Photo registrations go to a folder of this test session's, not the user's ~/.cache."""
    import os

    old = os.environ.get("TALKHEAD_CACHE")
    os.environ["TALKHEAD_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("TALKHEAD_CACHE", None)
    else:
        os.environ["TALKHEAD_CACHE"] = old


# A tiny latent face engine, made once per test session from real crops: VAE, teacher and a 1-step student.

@pytest.fixture(scope="session")
def tiny_faces(tiny_corpus, tmp_path_factory):
    """64 px crops of the astronaut (training) and her mirror image (held out), 2 corpus clips each."""
    from PIL import Image

    from talkhead.latent.data import FacesConfig, render_faces

    root = tmp_path_factory.mktemp("latent")
    mirrored = root / "mirrored.png"
    Image.open(ASTRONAUT).transpose(Image.Transpose.FLIP_LEFT_RIGHT).save(mirrored)
    out = root / "faces"
    render_faces(tiny_corpus, [ASTRONAUT, mirrored], out, FacesConfig(size=64, clips=2, heldout=("mirrored.png",)))
    return out


@pytest.fixture(scope="session")
def tiny_vae(tiny_faces, tmp_path_factory):
    from talkhead.latent.train_vae import train_vae
    from talkhead.latent.vae import VAEConfig

    run = tmp_path_factory.mktemp("vae")
    train_vae(tiny_faces, run, VAEConfig(size=64, widths=(8, 16, 16)), steps=80, batch=8, progress=False)
    return run / "vae.safetensors"


@pytest.fixture(scope="session")
def tiny_engine_run(tiny_vae, tiny_faces, tmp_path_factory):
    """A run folder holding teacher.safetensors and student-1.safetensors."""
    from talkhead.latent.train import distill_student, train_teacher

    run = tmp_path_factory.mktemp("engine")
    train_teacher(tiny_vae, tiny_faces, run, TINY_TRAIN, TINY_NET, progress=False)
    distill_student(run / "teacher.safetensors", tiny_faces, run, 1, TINY_TRAIN, progress=False)
    return run


# A tiny avatar, made once per test session from a real talking-head video that the project renders
# (the built-in photo driven by the phoneme targets of TTS speech).

TINY_AVATAR_TEXT = ("Bob bought a big blue map for papa. We were away a year ago. Mama made more jam. "
                    "Open wide and say ah, then shut your mouth.")


@pytest.fixture(scope="session")
def talking_video(tmp_path_factory):
    """(an mp4 of the astronaut speaking, 256 px, with sound; its true motion [T, 58])."""
    from talkhead.cli import main
    from talkhead.rig.io import load_motion

    root = tmp_path_factory.mktemp("avatar-video")
    video = root / "talk.mp4"
    assert main(["generate", "--text", TINY_AVATAR_TEXT, "--driver", "phones", "--size", "256", "-o", str(video),
                 "--motion-out", str(root / "true.npy"), "--quiet"]) == 0
    return video, load_motion(root / "true.npy")


@pytest.fixture(scope="session")
def talking_corpus(talking_video, tmp_path_factory):
    """A ``data talking`` corpus of the talking video: one trainable clip of one person, "ann"."""
    import json
    import shutil

    from talkhead.cli import main

    video, _ = talking_video
    root = tmp_path_factory.mktemp("talking")
    (root / "videos").mkdir()
    shutil.copy(video, root / "videos" / "talk.mp4")
    (root / "people.json").write_text(json.dumps({"people": {"talk": "ann"}}))
    assert main(["data", "talking", str(root / "videos"), "--out", str(root / "corpus"), "--people",
                 str(root / "people.json"), "--quiet", "--no-occlusion"]) == 0
    return root / "corpus"


def tiny_avatar_config():
    from talkhead.avatar.data import AvatarDataConfig
    from talkhead.avatar.train import AvatarTrainConfig

    return AvatarTrainConfig(data=AvatarDataConfig(min_seconds=3.0, fit_iters=150), vae_widths=(8, 16), vae_steps=40,
                             vae_batch=4, vae_patch=48, widths=(8, 16, 16), teacher_steps=40, batch=4,
                             student_steps=10, students=(1,), ship=0, base_seconds=1.0,
                             critic=0.2, critic_steps=12, bank_steps=10, bank_exclude=10,
                             bridge_steps=10, bridge_move="pixels")


@pytest.fixture(scope="session")
def tiny_avatar_cfg():
    """The settings ``tiny_avatar`` was trained with (its stages are reused by a run with the same ones)."""
    return tiny_avatar_config()


@pytest.fixture(scope="session")
def tiny_avatar(talking_video, tmp_path_factory):
    """A trained .avatar of the talking video (tiny networks: a few seconds of training)."""
    from talkhead.avatar.train import train_avatar

    out = tmp_path_factory.mktemp("avatar") / "astronaut.avatar"
    train_avatar([talking_video[0]], out, tiny_avatar_config(), progress=False, log=lambda *a: None)
    return out


def _write_video(path, frames, rate=25, codec="libx264", pix_fmt="yuv420p", rotation=0):
    """Frames as a video with no audio track; ``rotation``: shown turned so far counter-clockwise."""
    import av

    with av.open(str(path), "w") as c:
        s = c.add_stream(codec, rate=rate)
        s.width, s.height, s.pix_fmt = frames.shape[2], frames.shape[1], pix_fmt
        if rotation:
            s.set_display_rotation(rotation)
        if codec == "libx264":
            s.options = {"crf": "18"}
        for f in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(f), format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)
    return path


@pytest.fixture
def write_video():
    """``write_video(path, frames [T, H, W, 3], rate=25, codec="libx264", pix_fmt="yuv420p", rotation=0)``: frames
    as a silent video, as a camera or phone writes one (any codec PyAV has; a display rotation)."""
    return _write_video


@pytest.fixture(scope="session")
def server():
    """A real talkhead server (uvicorn on a free loopback port, in a thread): "127.0.0.1:PORT"."""
    from talkhead.serve.app import ServeConfig, serve_in_thread
    from talkhead.serve.webrtc import WebRtcConfig

    # A peer that never connects is freed after 3 s (15 s by default), and a socket that never starts after 3 s
    # (10 s), so the tests of them are short; one video job may wait (4).
    srv, address = serve_in_thread(ServeConfig(max_sessions=2, size=128, start_timeout=3.0, video_queue=1,
                                               webrtc=WebRtcConfig(ice_timeout_s=3.0)))
    yield address
    srv.should_exit = True
