"""The motion benchmark's JSON schema and plot, on a tiny teacher and its students."""

from __future__ import annotations

import json

import numpy as np
import pytest

from talkhead.bench.motion import ROW_KEYS, BenchConfig, run_motion_bench
from talkhead.cli import main
from talkhead.motion.train.configs import ProgressiveConfig
from talkhead.motion.train.distill import distill


def test_bench_json_schema_and_plot(tiny_teacher, tiny_corpus, tmp_path):
    students = tmp_path / "students"
    distill(str(tiny_teacher), tiny_corpus, students, ProgressiveConfig(start_steps=8, to=1, iters=2, batch=4),
            progress=False)
    out = tmp_path / "bench"
    cfg = BenchConfig(teacher=str(tiny_teacher), students=("student-4", "student-2", "student-1"),
                      repeats=2, lipsync_clips=2, seeds=3)
    result = run_motion_bench(tiny_corpus, out, cfg, models_dir=students, progress=False)
    data = json.loads((out / "bench.json").read_text())
    assert data == json.loads(json.dumps(result))
    assert set(data) >= {"rows", "machine"}
    rows = data["rows"]
    assert all(tuple(r) == ROW_KEYS for r in rows)
    labels = [(r["sampler"], r["steps"]) for r in rows]
    assert labels[:6] == [("teacher-ddim", s) for s in (50, 25, 10, 4, 2, 1)]
    assert ("teacher-dpmpp", 4) in labels and ("teacher-unipc", 2) in labels
    assert [s for s in labels if s[0] == "student"] == [("student", 4), ("student", 2), ("student", 1)]
    first = rows[0]
    assert first["cosine_to_teacher50"] == 1.0 and first["mse_to_teacher50"] == 0.0 and first["speedup_vs_teacher50"] == 1.0
    assert rows[5]["ms_per_clip"] < rows[0]["ms_per_clip"]
    assert (out / "pareto.png").stat().st_size > 10_000
    seeds = data["seeds"]  # the same rows on 3 noise seeds; the first is the table's
    assert seeds["seeds"] == [0, 1, 2] and [(r["sampler"], r["steps"]) for r in seeds["rows"]] == labels
    assert seeds["rows"][0]["cosines"] == [1.0, 1.0, 1.0]
    for row, spread in zip(rows, seeds["rows"]):
        assert spread["cosines"][0] == row["cosine_to_teacher50"] and len(spread["cosines"]) == 3
        assert spread["cosine_min"] <= spread["cosine_median"] <= max(spread["cosines"])
        assert spread["cosine_sem"] == pytest.approx(np.std(spread["cosines"], ddof=1) / np.sqrt(3), abs=2e-5)
    assert len(set(seeds["rows"][5]["cosines"])) == 3  # each seed is its own noise draw
    assert set(seeds["rows"][0]["error_share"].values()) == {0.0} and seeds["rows"][0]["cosine_sem"] == 0.0
    assert seeds["rows"][5]["cosine_sem"] > 0
    for spread in seeds["rows"][1:]:
        assert list(spread["error_share"]) == ["mouth", "eyes", "brows", "head"]
        assert sum(spread["error_share"].values()) == pytest.approx(1.0, abs=1e-3)


def test_bench_refuses_zero_seeds(capsys):
    assert main(["bench", "motion", "--out", "unused", "--seeds", "0"]) == 2
    assert "--seeds needs at least 1" in capsys.readouterr().err
