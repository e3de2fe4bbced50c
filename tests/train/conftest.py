"""A tiny corpus and a tiny trained teacher, made once per test session from real TTS speech."""

from __future__ import annotations

import pytest

from talkhead.data.corpus import CorpusConfig, synth_corpus
from talkhead.motion.denoiser import DenoiserConfig
from talkhead.train.loop import TrainConfig, train

TINY = DenoiserConfig(width=32, depth=1, heads=2, ff_mult=2)


def tiny_train_cfg(**kw) -> TrainConfig:
    base = dict(steps=8, batch=8, lr=1e-3, warmup=2, val_every=8, ckpt_every=4, val_clips=2, seed=0)
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
