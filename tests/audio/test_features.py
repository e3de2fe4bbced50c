"""Audio front ends on real speech: shapes, the Whisper spectrum, chunking, silence rows, augmentation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from talkhead.audio.augment import augment, telephone
from talkhead.audio.features import FeatureConfig, extract, silence_row
from talkhead.audio.io import load_audio
from talkhead.audio.whisper import mel_filters, whisper_features, whisper_log_mel

SPEECH = Path(__file__).resolve().parents[1] / "assets" / "speech"


@pytest.fixture(scope="module")
def arctic():
    return load_audio(SPEECH / "arctic_a0007.wav")


def test_feature_config_names_its_front_end():
    assert FeatureConfig().dim == 320 and FeatureConfig(kind="whisper").dim == 384
    assert FeatureConfig(kind="whisper", pool="stack").dim == 768
    with pytest.raises(ValueError, match="unknown audio front end"):
        FeatureConfig(kind="mfcc")


def test_whisper_filters_cover_the_band_once():
    fb = mel_filters()
    assert fb.shape == (80, 201) and (fb >= 0).all()
    # Slaney filters are area-normalised: each integrates to about the same (2 / bandwidth) * bandwidth / 2.
    area = fb.sum(1) * (8000 / 200)
    assert torch.allclose(area, torch.ones(80), rtol=0.15)


def test_whisper_spectrum_range(arctic):
    m = whisper_log_mel(arctic)
    assert m.shape == (80, len(arctic) // 160)
    assert float(m.max() - m.min()) <= 2.0 + 1e-6  # 80 dB of range, scaled by 1/4 as Whisper does


@pytest.mark.parametrize("kind,pool", [("logmel", "mean"), ("whisper", "mean"), ("whisper", "stack")])
def test_one_row_per_video_frame(arctic, kind, pool):
    cfg = FeatureConfig(kind=kind, pool=pool)
    f = extract(arctic, cfg)
    assert f.shape == (int(np.ceil(len(arctic) / 640)), cfg.dim)
    assert torch.isfinite(f).all()
    assert silence_row(cfg).shape == (cfg.dim,)
    # The silence row pads windows past a clip's end, in training and sampling alike. For log-mel it is
    # exactly digital silence after speech; Whisper's states depend on context (and its spectrum's floor
    # on the loudest frame), so there it is a fixed token instead: the features of a silent second.
    tail = extract(np.concatenate([arctic, np.zeros(16_000, np.float32)]), cfg)[-12:-8]
    if kind == "logmel":
        assert torch.allclose(tail, silence_row(cfg).expand_as(tail), atol=1e-3)
    assert torch.equal(silence_row(cfg), extract(np.zeros(16_000, np.float32), cfg)[12])


def test_chunked_encoding_agrees_with_whole(arctic):
    whole = whisper_features(arctic, 100)
    chunked = whisper_features(arctic, 100, chunk_s=1.6, context_s=0.8)
    assert chunked.shape == whole.shape
    r = np.corrcoef(whole[10:90].ravel(), chunked[10:90].ravel())[0, 1]
    assert r > 0.8  # with 0.8 s of context each way, chunks see most of what the whole clip does


def test_augment_is_seeded_and_bounded(arctic):
    a = augment(arctic, np.random.default_rng(3))
    assert a.shape == arctic.shape and a.dtype == np.float32 and np.abs(a).max() <= 1
    assert np.array_equal(a, augment(arctic, np.random.default_rng(3)))
    assert not np.array_equal(a, augment(arctic, np.random.default_rng(4)))


def test_telephone_removes_the_upper_band(arctic):
    t = telephone(arctic.astype(np.float64), np.random.default_rng(0))
    spec = lambda x: np.abs(np.fft.rfft(x)) ** 2
    f = np.fft.rfftfreq(len(arctic), 1 / 16_000)
    share = lambda x: spec(x)[f > 4500].sum() / spec(x).sum()
    assert share(arctic) > 1e-3 and share(t) < 0.05 * share(arctic)
