"""Audio front ends on real speech: shapes, the Whisper spectrum, chunking, silence rows, augmentation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from talkhead.audio.augment import augment, telephone
from talkhead.audio.features import FeatureConfig, FeatureStream, extract, silence_row
from talkhead.audio.io import load_audio
from talkhead.audio.whisper import mel_filters, whisper_log_mel

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


def test_short_blocks_agree_with_whole_clip_features(arctic):
    cfg = FeatureConfig(kind="whisper")
    whole = extract(arctic, cfg)
    stream = FeatureStream(cfg, block_s=1.6, context_s=0.8)
    blocked = torch.cat([stream.push(arctic), stream.flush()])
    assert blocked.shape == whole.shape
    r = np.corrcoef(whole[10:-10].ravel(), blocked[10:-10].ravel())[0, 1]
    assert r > 0.8  # with 0.8 s of context each way, blocks see most of what the whole clip does


@pytest.mark.parametrize("kind", ["logmel", "whisper"])
def test_feature_stream_rows_do_not_depend_on_how_the_audio_is_chunked(arctic, kind):
    """Fed in 37 ms pieces or all at once, the stream gives the same rows; log-mel blocks match the whole clip."""
    cfg = FeatureConfig(kind=kind)
    audio = np.concatenate([arctic, arctic[:20_000]])  # 4.3 s: three 1.2 s blocks and a part
    at_once = FeatureStream(cfg, block_s=1.2, context_s=0.4)
    whole = torch.cat([at_once.push(audio), at_once.flush()])
    pieces, rows = FeatureStream(cfg, block_s=1.2, context_s=0.4), []
    for s in range(0, len(audio), 600):
        rows.append(pieces.push(audio[s:s + 600]))
        done = sum(len(r) for r in rows)
        assert done <= max(0, (s + 600) // 640 - 10)  # a row waits for its 0.4 s of right context
    rows.append(pieces.flush())
    assert torch.equal(torch.cat(rows), whole) and len(whole) == int(np.ceil(len(audio) / 640))
    if kind == "logmel":  # log-mel rows are local: blocks with any context give the whole clip's rows
        torch.testing.assert_close(whole, extract(audio, cfg), atol=1e-4, rtol=0)


def test_first_short_blocks_come_early_and_do_not_depend_on_the_chunking(arctic):
    """A say's ramp (``first``): short blocks at the start, each out once its own context is in, then the
    regular blocks; fed in pieces or at once the rows are the same."""
    cfg = FeatureConfig(kind="whisper")
    audio = np.concatenate([arctic] * 3)  # 7.8 s
    first = ((16, 1), (24, 2), (44, 4), (80, 12))
    at_once = FeatureStream(cfg, block_s=2.0, context_s=1.0, first=first)
    whole = torch.cat([at_once.push(audio), at_once.flush()])
    pieces, rows, out_at = FeatureStream(cfg, block_s=2.0, context_s=1.0, first=first), [], []
    for s in range(0, len(audio), 640):
        rows.append(pieces.push(audio[s:s + 640]))
        out_at.append(sum(len(r) for r in rows))  # rows out after s // 640 + 1 frames of audio
    rows.append(pieces.flush())
    assert torch.equal(torch.cat(rows), whole) and len(whole) == int(np.ceil(len(audio) / 640))
    # The first 16 rows after 17 frames of audio, 24 after 26, 44 after 48, 80 after 92; then 2 s blocks
    # with 1 s of context: 130 after 155.
    assert [out_at[i] for i in (15, 16, 24, 25, 46, 47, 90, 91, 153, 154)] == [0, 16, 16, 24, 24, 44, 44, 80, 80, 130]
    with pytest.raises(ValueError):
        FeatureStream(cfg, first=((10, 1), (10, 2)))


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


def test_right_context_sets_when_a_row_is_out_and_the_left_context_only_what_it_sees(arctic):
    """Live speech: 2-frame blocks, 0.4 s of context before and 2 frames after; a row waits for those 2 only,
    chunking still does not matter, and the rows follow the whole clip's (they see little of the future)."""
    cfg = FeatureConfig(kind="whisper")
    audio = arctic[: 16000 * 2]
    at_once = FeatureStream(cfg, block_s=0.08, context_s=0.4, right_s=0.08)
    whole = torch.cat([at_once.push(audio), at_once.flush()])
    pieces, rows = FeatureStream(cfg, block_s=0.08, context_s=0.4, right_s=0.08), []
    for s in range(0, len(audio), 640):
        rows.append(pieces.push(audio[s:s + 640]))
        frames_in = (s + 640) // 640
        assert sum(len(r) for r in rows) == max(0, (frames_in - 2) // 2 * 2)  # blocks of 2 after 2 more frames
    rows.append(pieces.flush())
    assert torch.equal(torch.cat(rows), whole)
    offline = extract(audio, cfg)
    r = np.corrcoef(whole[5:-5].ravel(), offline[5:-5].ravel())[0, 1]
    assert 0.5 < r < 0.999  # like the whole clip's rows, but not the same: the future is missing


def test_the_encoder_serves_threads_side_by_side_with_the_same_states(arctic):
    # Live sessions and Pipecat agents call it from their own threads at once: each gets what it alone would.
    from concurrent.futures import ThreadPoolExecutor

    from talkhead.audio.whisper import encode

    clips = [arctic[k * 3200:k * 3200 + 16_000] for k in range(6)]
    alone = [encode(c) for c in clips]
    with ThreadPoolExecutor(3) as pool:
        together = list(pool.map(encode, clips * 3))
    for k, states in enumerate(together):
        assert np.array_equal(states, alone[k % 6]), k


def test_int8_states_are_close_to_float32_and_a_bad_precision_is_named(arctic):
    # A live session's encoder runs in int8 (serve.session.LIVE_PRECISION): the same rows, nearly.
    from talkhead.audio.features import FeatureStream
    from talkhead.audio.whisper import encode

    cfg = FeatureConfig(kind="whisper")
    rows = {p: FeatureStream(cfg, 0.04, 0.8, 0.04, precision=p).push(arctic[:32_000]) for p in ("float32", "int8")}
    a, b = rows["float32"], rows["int8"]
    assert a.shape == b.shape and len(a) >= 45 and not torch.equal(a, b)
    assert float(torch.nn.functional.cosine_similarity(a, b, dim=1).min()) > 0.99
    with pytest.raises(ValueError, match="float32 or int8"):
        encode(arctic[:3200], precision="float16")


def test_a_warmed_encoder_is_loaded_once_and_encodes_as_before(arctic):
    # generate has the encoder load beside the photo and the speech; an encode meanwhile waits for that load.
    from talkhead.audio import whisper
    from talkhead.audio.features import warm

    before = whisper.encode(arctic[:16_000])
    whisper._load.cache_clear()
    warm(FeatureConfig(kind="whisper"))
    during = whisper.encode(arctic[:16_000])
    assert np.array_equal(during, before) and whisper._load.cache_info().currsize == 1
    warm(FeatureConfig(kind="logmel"))  # nothing to load
    assert whisper._load.cache_info().misses == 1
