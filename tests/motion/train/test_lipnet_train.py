"""``talkhead distill lipnet`` on a ``data talking`` corpus of the astronaut drawn speaking (its lips are the
phone rig's, so the clip's lip gap follows its speech): the net learns that gap from the Whisper states,
the checkpoint names the people it learnt from, a stopped run resumes, and bad settings are named errors."""

from __future__ import annotations

import json

import pytest
import torch

from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.motion.data.talking import lagged_r
from talkhead.motion.lipnet import load_head
from talkhead.motion.train.lipnet import WHISPER, LipNetTrainConfig, gap_clips, train_lipnet


def test_the_net_learns_the_clips_lip_gap(talking_corpus, tmp_path):
    out = tmp_path / "lips.safetensors"
    cfg = LipNetTrainConfig(iters=300, batch=8, frames=48, augmented=0)
    report = train_lipnet(talking_corpus, out, cfg, progress=False)
    assert report["people"] == ["ann"] and report["steps"] == 300
    head = load_head(out)
    assert head.meta["train"]["people"] == ["ann"] and head.fits(WHISPER) and head.gap_std > 0
    data, _ = gap_clips(talking_corpus, (), 0)
    pred = head.opening(data.feats[0][0][None])[0].numpy()
    lag, r, _ = lagged_r(data.gap[0].numpy(), pred, data.seen[0].numpy(), 2)
    assert r > 0.6 and abs(lag) <= 1, (r, lag)


def test_a_stopped_run_resumes_to_the_same_weights(talking_corpus, tmp_path, monkeypatch):
    import talkhead.motion.train.lipnet as lipnet_train
    from talkhead.train.loop import FitConfig

    cfg = LipNetTrainConfig(iters=20, batch=4, frames=32, augmented=0)
    train_lipnet(talking_corpus, tmp_path / "a.safetensors", cfg, progress=False)
    with monkeypatch.context() as m:  # the same run stopped at step 10, as a kill after its checkpoint leaves it
        m.setattr(lipnet_train, "FitConfig", lambda **k: FitConfig(**{**k, "stop_at": 10}))
        train_lipnet(talking_corpus, tmp_path / "b.safetensors", cfg, progress=False)
    with pytest.raises(InputError, match="--resume"):
        train_lipnet(talking_corpus, tmp_path / "b.safetensors", cfg, progress=False)
    train_lipnet(talking_corpus, tmp_path / "b.safetensors", cfg, resume=True, progress=False)
    a, b = load_head(tmp_path / "a.safetensors"), load_head(tmp_path / "b.safetensors")
    for k, v in a.net.state_dict().items():
        assert torch.allclose(v, b.net.state_dict()[k], atol=1e-6), k


def test_the_command_names_bad_settings(talking_corpus, tmp_path, capsys):
    out = str(tmp_path / "x.safetensors")
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--kernel", "4"]) == 2
    assert "--kernel" in capsys.readouterr().err
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--hold-out", "ann"]) == 2
    assert "held out" in capsys.readouterr().err
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", str(tmp_path / "x.pt")]) == 2
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--members", "0"]) == 2
    assert "--members" in capsys.readouterr().err
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--spread", "1.5"]) == 2
    assert "--spread" in capsys.readouterr().err
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--iters", "3", "--batch", "2",
                 "--augment", "0", "--members", "2", "--quiet"]) == 0
    assert "learnt from 1 people: ann" in capsys.readouterr().out
    assert load_head(out).net.cfg.members == 2 and load_head(out).spread == 1.0
    assert json.loads((tmp_path / "x.log.jsonl").read_text().splitlines()[-1])["steps"] == 3


def test_a_net_on_an_inner_layer_reads_it_beside_the_output(talking_corpus, tmp_path, capsys):
    """``--taps 2``: the net reads the encoder's output and its second layer; a model wearing it hears both."""
    from talkhead.motion.model import load

    out = tmp_path / "taps.safetensors"
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", str(out), "--iters", "200", "--batch",
                 "8", "--frames", "48", "--taps", "2", "--quiet"]) == 0
    head = load_head(out)
    assert head.features.taps == (2,) and head.net.cfg.dim == 768 and head.fits(WHISPER)
    data, _ = gap_clips(talking_corpus, (), 0, "offline", head.features)
    assert data.feats[0][0].shape[1] == 768
    _, r, _ = lagged_r(data.gap[0].numpy(), head.opening(data.feats[0][0][None])[0].numpy(), data.seen[0].numpy(), 2)
    assert r > 0.6, r
    assert load(f"student-1-whisper+{out}").hearing == head.features
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", str(tmp_path / "b.safetensors"),
                 "--taps", "5"]) == 2
    assert "taps" in capsys.readouterr().err


def test_the_live_view_trains_on_what_a_live_session_hears(talking_corpus, tmp_path):
    from talkhead.audio.features import extract
    from talkhead.motion.data.talking import clip_arrays

    cfg = LipNetTrainConfig(iters=5, batch=4, frames=32, augmented=0, view="live", ahead=1)
    train_lipnet(talking_corpus, tmp_path / "live.safetensors", cfg, progress=False)
    head = load_head(tmp_path / "live.safetensors")
    assert head.net.cfg.ahead == 1 and head.meta["train"]["config"]["view"] == "live"
    live, _ = gap_clips(talking_corpus, (), 0, "live")
    offline, _ = gap_clips(talking_corpus, (), 0)
    row = offline.rows[0]
    wav = clip_arrays(talking_corpus, row)["audio"].astype("float32") / 32767
    f_live, f_off = live.feats[0][0], offline.feats[0][0]
    assert f_live.shape == f_off.shape and torch.allclose(f_off, extract(wav, WHISPER)[:len(f_off)], atol=1e-3)
    assert not torch.allclose(f_live, f_off, atol=1e-2)  # one-frame blocks hear less than 28 s ones
    with pytest.raises(InputError, match="--augment"):
        gap_clips(talking_corpus, (), 1, "live")



def test_window_r_is_pearson_over_the_seen_frames():
    import numpy as np

    from talkhead.motion.train.lipnet import window_r

    gen = torch.Generator().manual_seed(0)
    pred, y = torch.randn(2, 3, 40, generator=gen), torch.randn(3, 40, generator=gen)
    seen = torch.rand(3, 40, generator=gen) > 0.3
    got = window_r(pred, y, seen.float())
    for m in range(2):
        for b in range(3):
            s = seen[b].numpy()
            want = np.corrcoef(pred[m, b].numpy()[s], y[b].numpy()[s])[0, 1]
            assert abs(float(got[m, b]) - want) < 1e-5


def test_the_correlation_term_trains(talking_corpus, tmp_path):
    cfg = LipNetTrainConfig(iters=300, batch=8, frames=48, augmented=0, corr_weight=1.0)
    train_lipnet(talking_corpus, tmp_path / "c.safetensors", cfg, progress=False)
    head = load_head(tmp_path / "c.safetensors")
    assert head.meta["train"]["config"]["corr_weight"] == 1.0
    data, _ = gap_clips(talking_corpus, (), 0)
    pred = head.opening(data.feats[0][0][None])[0].numpy()
    assert lagged_r(data.gap[0].numpy(), pred, data.seen[0].numpy(), 2)[1] > 0.6


def test_faster_plays_the_audio_faster_and_higher():
    import numpy as np

    from talkhead.motion.train.lipnet import faster

    t = np.arange(16000) / 16000
    y = faster(np.sin(2 * np.pi * 200 * t).astype(np.float32), 1.25)
    assert abs(len(y) - 12800) <= 1
    spectrum = np.abs(np.fft.rfft(y))
    assert abs(np.argmax(spectrum) * 16000 / len(y) - 250) < 2


def test_sped_copies_keep_the_lips_with_the_speech(talking_corpus, tmp_path, capsys):
    """A net that learnt only from the clip played at 0.8x and 1.25x follows the clip's own lips: the copies'
    gap was resampled with their audio. The copies come after the clip's own rows and are cached."""
    from talkhead.motion.train.lipnet import speed_clips

    data, _ = gap_clips(talking_corpus, (), 0)
    sped = speed_clips(talking_corpus, data, (0.8, 1.25))
    n = len(data.gap[0])
    assert [r["speed"] for r in sped.rows] == [0.8, 1.25]
    assert abs(len(sped.gap[0]) - n / 0.8) <= 2 and abs(len(sped.gap[1]) - n / 1.25) <= 2
    assert list((talking_corpus / "cache").glob("lipnet-speed-*.npz"))
    both, _ = gap_clips(talking_corpus, (), 0, speeds=(0.8, 1.25))
    assert len(both.rows) == 3 and "speed" not in both.rows[0] and torch.equal(both.gap[2], sped.gap[1])

    from talkhead.motion.lipnet import LipNet, LipNetConfig
    from talkhead.motion.train.lipnet import GapObjective
    from talkhead.train.loop import FitConfig, fit

    allf = torch.cat([f[0] for f in sped.feats])
    mean, std = allf.mean(0), allf.std(0).clamp_min(1e-3)
    cfg = LipNetTrainConfig(iters=300, batch=8, frames=48)
    torch.manual_seed(0)
    net = LipNet(LipNetConfig(dim=allf.shape[1], hidden=cfg.hidden, kernel=cfg.kernel, dropout=cfg.dropout))
    net = fit(net, GapObjective(sped, mean, std, cfg), FitConfig(steps=300, lr=cfg.lr, seed=0), progress=False).module
    with torch.no_grad():
        pred = net.eval()((data.feats[0][0][None] - mean) / std)[0].numpy()
    lag, r, _ = lagged_r(data.gap[0].numpy(), pred, data.seen[0].numpy(), 2)
    assert r > 0.5 and abs(lag) <= 1, (r, lag)
    out = str(tmp_path / "x.safetensors")
    assert main(["distill", "lipnet", "--real", str(talking_corpus), "--out", out, "--speeds", "3"]) == 2
    assert "--speeds" in capsys.readouterr().err
    with pytest.raises(InputError, match="--speeds"):
        gap_clips(talking_corpus, (), 0, "live", speeds=(1.1,))


def test_a_teacher_net_labels_the_synthetic_clips(talking_corpus, tiny_corpus, tmp_path, capsys):
    """``--teacher``: the synthetic half's target is the opening an offline lip net reads from each whole clip (here
    a net that learnt the filmed clip only), computed from the clip's own audio, not the rig's lip gap."""
    from talkhead.audio.features import extract
    from talkhead.motion.data.windows import load_clips
    from talkhead.motion.lipnet import drawn_gap
    from talkhead.motion.train.lipnet import synthetic_gap_clips, taught

    real = tmp_path / "real.safetensors"
    train_lipnet(talking_corpus, real, LipNetTrainConfig(iters=40, batch=4, frames=32), progress=False)
    syn = synthetic_gap_clips(tiny_corpus, "live")
    labelled = taught(syn, tiny_corpus, real)
    head, clips = load_head(real), load_clips(tiny_corpus, "train", WHISPER, keep_wav=True)
    for i in range(2):
        feats = extract(clips.wavs[i], WHISPER)[: len(clips.motion[i])]
        opening = head.opening(feats[None])[0].detach().numpy()
        _, r, _ = lagged_r(labelled.gap[i].numpy(), opening, labelled.seen[i].numpy(), 0)
        _, r_rig, _ = lagged_r(labelled.gap[i].numpy(), drawn_gap(clips.motion[i]).numpy(), labelled.seen[i].numpy(), 0)
        assert r > 0.999 and r_rig < 0.99, (r, r_rig)
    assert labelled.feats is syn.feats  # the live net still hears the clips as a live session does
    out = tmp_path / "live.safetensors"
    args = ["distill", "lipnet", "--real", str(talking_corpus), "--out", str(out), "--iters", "3", "--batch", "4",
            "--view", "live", "--ahead", "1", "--quiet", "--synthetic", str(tiny_corpus)]
    assert main(args + ["--teacher", str(real)]) == 0
    assert load_head(out).meta["train"]["config"]["teacher"] == str(real)
    assert main(args[:-2] + ["--teacher", str(real)]) == 2
    assert "--synthetic" in capsys.readouterr().err
    assert main([*args[:5], str(tmp_path / "b.safetensors"), *args[6:], "--teacher", str(out)]) == 2
    assert "offline lip net" in capsys.readouterr().err
