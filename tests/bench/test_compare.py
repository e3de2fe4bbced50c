"""``bench compare``: paired parity over noise seeds, on a tiny teacher and the real benchmark clip."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from talkhead.bench.compare import CompareConfig, Entry, paired, parse_entry, run_compare
from talkhead.bench.motion import CLIP_FRAMES, fixed_clip
from talkhead.cli import main
from talkhead.errors import InputError
from talkhead.metrics import cosine
from talkhead.motion.model import load


def test_parse_entry():
    assert parse_entry("student-1") == Entry("student-1")
    assert parse_entry("teacher@4:unipc") == Entry("teacher", 4, "unipc")
    assert parse_entry("runs/a@b/student-4.safetensors@8") == Entry("runs/a@b/student-4.safetensors", 8)
    assert parse_entry("teacher@4:unipc").label == parse_entry("teacher@4:unipc").short_label == "teacher@4:unipc"
    assert parse_entry("runs/x-4/student-4.safetensors@2").short_label == "x-4/student-4@2"
    for bad, why in [("teacher@0", "at least 1"), ("teacher@4:euler", "unknown sampler 'euler'"), ("@4", "cannot read")]:
        with pytest.raises(InputError, match=why):
            parse_entry(bad)


def test_paired_differences():
    r = paired([0.9, 0.8, 0.7, 0.95], [0.91, 0.83, 0.69, 0.97])
    d = np.array([0.01, 0.03, -0.01, 0.02])
    assert r["mean"] == pytest.approx(d.mean(), abs=1e-6)
    assert r["sem"] == pytest.approx(d.std(ddof=1) / 2, abs=1e-6)
    assert (r["better"], r["worse"]) == (3, 1) and r["median"] == pytest.approx(0.015, abs=1e-6)
    assert r["sign_p"] == pytest.approx(0.625, abs=1e-5)  # P(>= 3 of 4 or <= 1 of 4) for a fair coin: 10/16
    assert r["half_interval"] == pytest.approx(3.182446 * d.std(ddof=1) / 2, abs=1e-6)  # t(3) at 97.5 %
    assert r["told_apart"] is False  # 0.0125 against 0.0272
    assert paired([0.9, 0.8, 0.7], [0.92, 0.81, 0.72])["told_apart"] is True  # 0.0167 against t(2) 4.30 x 0.0033
    assert paired([0.9, 0.8], [0.92, 0.81])["told_apart"] is False  # 2 seeds: 0.015 against t(1) 12.7 x 0.005
    same = paired([0.9, 0.8], [0.9, 0.8])
    assert same["mean"] == 0 and same["sem"] == 0 and not same["told_apart"] and same["sign_p"] == 1.0
    # one seed swings the mean, the rest are a near-tie: the sign test sees 10 of 12 wins, the mean does not
    lopsided = paired([0.9] * 12, [0.901] * 10 + [0.899, 0.80])
    assert not lopsided["told_apart"] and lopsided["sign_p"] < 0.05 and lopsided["mean"] < 0


def test_compare_on_tiny_teacher(tiny_teacher, tmp_path):
    t = str(tiny_teacher)
    entries = [parse_entry(f"{t}@4"), parse_entry(f"{t}@50:ddim"), parse_entry(f"{t}@2:dpmpp")]
    result = run_compare(entries, tmp_path / "cmp", CompareConfig(teacher=t, seeds=3, seed=5), progress=False)
    assert json.loads((tmp_path / "cmp" / "compare.json").read_text()) == json.loads(json.dumps(result))
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 5_000
    assert result["seeds"] == [5, 6, 7]
    four, fifty, dpm = result["entries"]
    assert (four["steps"], four["sampler"], dpm["steps"], dpm["sampler"]) == (4, "ddim", 2, "dpmpp")
    # the reference itself, from the same noise, is exact; the others differ on each seed
    assert fifty["cosines"] == [1.0, 1.0, 1.0] and fifty["jitter_vs_teacher"] == 1.0 and fifty["mse_mean"] == 0
    assert len(set(four["cosines"])) == 3 and max(four["cosines"]) < 1
    assert fifty["vs_first"]["mean"] == pytest.approx(1 - four["cosine_mean"], abs=2e-6)
    assert fifty["vs_first"]["better"] == 3 and "vs_first" not in four
    # seed 6 recomputed by hand: the benchmark clip, its noise, DDIM at S = 4 and at S = 50
    m = load(t)
    feats = m.audio_features(fixed_clip())[None]
    noise = m.init_noise(1, CLIP_FRAMES, torch.Generator().manual_seed(6))
    out, ref = (m.norm.motion(m.sample(feats, noise, steps=s, sampler="ddim")[0]).numpy() for s in (4, 50))
    assert four["cosines"][1] == pytest.approx(cosine(out, ref), abs=1e-6)


def test_compare_cli_refuses_bad_input(tiny_teacher, tmp_path, capsys):
    out = tmp_path / "never"
    assert main(["bench", "compare", "student-1", "--out", str(out)]) == 2
    assert "at least two models" in capsys.readouterr().err
    assert main(["bench", "compare", "student-1", "teacher@4:heun", "--out", str(out)]) == 2
    assert "unknown sampler 'heun'" in capsys.readouterr().err
    assert main(["bench", "compare", "student-1", "no-such-model", "--teacher", str(tiny_teacher), "--out", str(out)]) == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err
    assert main(["bench", "compare", "student-1", "student-2", "--seeds", "1", "--out", str(out)]) == 2
    assert "at least 2 noise seeds" in capsys.readouterr().err
    assert not out.exists()
