"""``bench frontend`` and ``bench real`` on a tiny corpus, real recordings and a tiny teacher."""

from __future__ import annotations

import json

import numpy as np

from talkhead.audio.features import FeatureConfig
from talkhead.bench.compare import Entry
from talkhead.bench.frontend import Candidate, Ridge, context_stack, run_frontend_bench
from talkhead.bench.realspeech import run_real_bench
from talkhead.cli import main


def test_context_stack_and_ridge_recover_a_linear_map():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 3)).astype(np.float32)
    s = context_stack(x, 1)
    assert s.shape == (400, 9) and np.array_equal(s[5, 3:6], x[5]) and np.array_equal(s[0, :3], x[0])
    y = s @ rng.standard_normal(9)
    fit = Ridge([s[:200], s[200:]], [y[:200], y[200:]], strength=1e-6)
    assert np.corrcoef(fit.predict(s), y)[0, 1] > 0.999


def test_frontend_bench_writes_json_and_plot(tiny_corpus, real_corpus, tmp_path):
    cands = (Candidate("logmel", FeatureConfig()),
             Candidate("whisper + aug + real", FeatureConfig(kind="whisper"), augmented=1, real_train=True))
    r = run_frontend_bench(tiny_corpus, [real_corpus], tmp_path, train_clips=6, heldout_clips=3, candidates=cands)
    saved = json.loads((tmp_path / "frontend.json").read_text())
    assert saved == json.loads(json.dumps(r)) and (tmp_path / "frontend.png").stat().st_size > 5000
    for row in saved["rows"]:
        assert -1 <= row["tts_heldout_r"] <= 1 and -1 <= row["real_r"] <= 1
        assert set(row["real_r_per_speaker"]) == {"real"} and row["feature_ms_6_6s"] > 0
    assert [row["dim"] for row in saved["rows"]] == [320, 384]


def test_real_bench_scores_every_recording(tiny_teacher, tiny_corpus, real_corpus, tmp_path, capsys):
    r = run_real_bench([Entry(str(tiny_teacher), 2)], [real_corpus], tmp_path, tts=tiny_corpus, tts_clips=2,
                       progress=False)
    row = r["rows"][0]
    held = [x["id"] for x in map(json.loads, (real_corpus / "manifest.jsonl").read_text().splitlines())
            if x["split"] == "heldout"]
    assert sorted(row["real_r_per_clip"]) == sorted(held) and row["steps"] == 2
    assert -1 <= row["real_r"] <= 1 and -1 <= row["tts_heldout_r"] <= 1
    assert (tmp_path / "real.png").exists()
    assert main(["bench", "real", "nonexistent-model", "--real", str(real_corpus), "--out", str(tmp_path)]) == 2
    assert "unknown model" in capsys.readouterr().err
