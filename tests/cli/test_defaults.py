"""Each default exists once: every flag that mirrors a config field defaults to that field's default."""

from __future__ import annotations

import dataclasses

import pytest

from talkhead.cli import build_parser
from talkhead.motion.net import DenoiserConfig
from talkhead.motion.stream import MotionConfig
from talkhead.motion.train.configs import METHODS, TrainConfig
from talkhead.pipeline import GenerateConfig


def _defaults(argv: list[str]) -> dict:
    return vars(build_parser().parse_args(argv))


def _check(args: dict, cls: type, skip: tuple[str, ...] = ()) -> int:
    checked = 0
    for f in dataclasses.fields(cls):
        key = f.name
        if key in args and key not in skip:
            assert args[key] == f.default, f"--{key} defaults to {args[key]!r}, {cls.__name__}.{f.name} to {f.default!r}"
            checked += 1
    return checked


def test_generate_and_motion_flags_default_to_the_configs():
    gen = _defaults(["generate", "--text", "x", "-o", "x.mp4"])
    assert _check(gen, GenerateConfig, skip=("text", "size")) >= 6 and _check(gen, MotionConfig, skip=("driver",)) >= 3  # --driver: resolved by --transcript
    assert tuple(gen["size"]) == (GenerateConfig.size, GenerateConfig.size)
    assert _check(_defaults(["motion", "--text", "x", "-o", "x.csv"]), MotionConfig, skip=("driver",)) >= 4


def test_train_flags_default_to_train_config_and_the_network_to_its_config():
    args = _defaults(["train", "--data", "d", "--out", "o"])
    assert _check(args, TrainConfig) == len(dataclasses.fields(TrainConfig))
    assert all(args[k] is None for k in ("width", "depth", "heads", "audio_kernel"))  # DenoiserConfig's own
    assert DenoiserConfig().width == 192


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_distill_method_has_exactly_its_own_flags(method):
    cls = METHODS[method]
    args = _defaults(["distill", method, "--data", "d", "--out", "o"])
    assert _check(args, cls) == len(dataclasses.fields(cls))
    others = {f.name for c in METHODS.values() for f in dataclasses.fields(c)} - {f.name for f in dataclasses.fields(cls)}
    assert not others & set(args), f"distill {method} takes another method's flags: {others & set(args)}"


def test_latent_flags_are_the_configs_own():
    from talkhead.cli.common import config_from_args
    from talkhead.latent.net import LatentConfig
    from talkhead.latent.train import LatentTrainConfig
    from talkhead.latent.train_vae import VAETrainConfig
    from talkhead.latent.vae import VAEConfig

    parser = build_parser()
    vae = parser.parse_args(["latent", "vae", "--faces", "f", "--out", "o"])
    assert config_from_args(VAEConfig, vae) == VAEConfig() and config_from_args(VAETrainConfig, vae) == VAETrainConfig()
    off = parser.parse_args(["latent", "vae", "--faces", "f", "--out", "o", "--no-augment", "--widths", "8,16"])
    assert config_from_args(VAEConfig, off) == VAEConfig(augment=False, widths=(8, 16))  # True turned off
    train = _defaults(["latent", "train", "--vae", "v", "--faces", "f", "--out", "o"])
    assert _check(train, LatentConfig, skip=("geometry", "context")) == len(dataclasses.fields(LatentConfig)) - 2
    assert _check(train, LatentTrainConfig) == len(dataclasses.fields(LatentTrainConfig)) - 2  # not the student's
    student = _defaults(["latent", "distill", "--teacher", "t", "--to", "2", "--faces", "f", "--out", "o"])
    d = LatentTrainConfig()
    assert (student["steps"], student["lr"]) == (d.distill_steps, d.distill_lr)


def test_serve_flags_default_to_serve_config():
    from talkhead.serve.app import ServeConfig

    # threads: the command owns its process and sets 1 (sessions are the parallelism); a ServeConfig inside
    # someone else's process leaves their torch threads alone (None).
    assert _check(_defaults(["serve"]), ServeConfig, skip=("threads",)) >= 5


def test_data_flags_default_to_their_configs():
    from talkhead.latent.data import FacesConfig
    from talkhead.motion.data.corpus import VOICE_SETS, CorpusConfig

    faces = _defaults(["data", "faces", "p.png", "--corpus", "c", "--out", "o"])
    assert _check(faces, FacesConfig, skip=("heldout",)) == 3 and tuple(faces["heldout"]) == FacesConfig.heldout
    synth = _defaults(["data", "synth", "--minutes", "1", "--out", "o"])
    assert _check(synth, CorpusConfig, skip=("minutes", "voices")) == 1
    assert VOICE_SETS[synth["voices"]] == CorpusConfig.voices  # --voices names a set; its default is the config's
