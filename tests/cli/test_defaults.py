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
