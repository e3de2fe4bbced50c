"""Each default exists once: the flags are generated from the config dataclasses (or a benchmark function's own
keyword defaults), and a flag that mirrors a config field defaults to that field's default."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from talkhead.cli import build_parser
from talkhead.motion.net import DenoiserConfig
from talkhead.motion.stream import MotionConfig
from talkhead.motion.train.configs import METHODS, TrainConfig
from talkhead.pipeline import GenerateConfig

# Flags whose defaults are written in the CLI on purpose: what a command reads (a corpus, a folder, the model a
# run starts from), a voice set by name (VOICE_SETS), and the torch threads a command sets for its own process.
INPUTS = {"data", "real", "videos", "bench", "doc", "teacher", "base", "init", "voices", "threads"}


def _defaults(argv: list[str]) -> dict:
    return vars(build_parser().parse_args(argv))


def _flags(p: argparse.ArgumentParser, path: str = ""):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _flags(sp, f"{path} {name}".strip())
        elif a.option_strings and a.dest != "help":
            yield path, a


def test_every_flag_with_a_default_is_generated_from_a_config():
    flags = list(_flags(build_parser()))
    assert len(flags) > 300  # every command's
    written = [f"{cmd} {a.option_strings[-1]}={a.default!r}" for cmd, a in flags
               if a.default not in (None, False, []) and not hasattr(a, "config_field") and a.dest not in INPUTS]
    assert written == [], f"defaults written in the CLI, not in a config: {written}"
    generated = sum(hasattr(a, "config_field") for _, a in flags)
    assert generated > 250, generated


def _check(args: dict, cls: type, skip: tuple[str, ...] = ()) -> int:
    checked = 0
    for f in dataclasses.fields(cls):
        key = f.name
        if key in args and key not in skip:
            default = list(f.default) if isinstance(args[key], list) else f.default
            assert args[key] == default, f"--{key} defaults to {args[key]!r}, {cls.__name__}.{f.name} to {default!r}"
            checked += 1
    return checked


def test_generate_and_motion_flags_default_to_the_configs():
    gen = _defaults(["generate", "--text", "x", "-o", "x.mp4"])
    assert _check(gen, GenerateConfig, skip=("text",)) == 11 and _check(gen, MotionConfig, skip=("driver",)) == 5
    assert gen["driver"] is None  # resolved by --transcript
    assert _check(_defaults(["motion", "--text", "x", "-o", "x.csv"]), MotionConfig, skip=("driver",)) == 5


def test_a_generated_flag_parses_into_its_config():
    from talkhead.cli.common import config_from_args

    args = build_parser().parse_args(["generate", "--text", "x", "--size", "96x160", "--sampler", "unipc",
                                      "--steps", "3", "--device", "cpu"])
    gen, motion = config_from_args(GenerateConfig, args, motion=MotionConfig()), config_from_args(MotionConfig, args)
    assert gen.size == (96, 160) and gen.text == "x" and (motion.sampler, motion.steps) == ("unipc", 3)
    with pytest.raises(SystemExit):  # a choice the config does not list
        build_parser().parse_args(["generate", "--text", "x", "--sampler", "euler"])


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
    student = parser.parse_args(["latent", "distill", "--teacher", "t", "--to", "2", "--faces", "f", "--out", "o",
                                 "--lr", "0.01"])
    d = config_from_args(LatentTrainConfig, student)
    assert (d.distill_steps, d.distill_lr, d.steps) == (LatentTrainConfig.distill_steps, 0.01, LatentTrainConfig.steps)


def test_serve_flags_default_to_serve_config():
    from talkhead.scale.ray import RayServeConfig
    from talkhead.serve.app import ServeConfig
    from talkhead.serve.guard import GuardConfig
    from talkhead.serve.webrtc import WebRtcConfig

    # threads: the command owns its process and sets 1 (sessions are the parallelism); a ServeConfig inside
    # someone else's process leaves their torch threads alone (None).
    args = _defaults(["serve"])
    assert _check(args, ServeConfig, skip=("threads",)) == 5 and _check(args, GuardConfig) == 4
    assert _check(args, WebRtcConfig) == 3 and args["port"] == RayServeConfig.port
    assert args["replicas"] is None  # unset: RayServeConfig's own, and not both it and autoscaling


def test_data_flags_default_to_their_configs():
    from talkhead.latent.data import FacesConfig
    from talkhead.motion.data.corpus import VOICE_SETS, CorpusConfig

    faces = _defaults(["data", "faces", "p.png", "--corpus", "c", "--out", "o"])
    assert _check(faces, FacesConfig) == 4  # clips_per_shard: not a flag
    synth = _defaults(["data", "synth", "--minutes", "1", "--out", "o"])
    assert _check(synth, CorpusConfig, skip=("minutes", "voices")) == 1
    assert VOICE_SETS[synth["voices"]] == CorpusConfig.voices  # --voices names a set; its default is the config's
