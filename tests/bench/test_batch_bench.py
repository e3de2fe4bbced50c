"""`talkhead bench batch`, small: two real jobs on one local worker; JSON and plot written, no videos kept."""

from __future__ import annotations

import json

from talkhead.bench.batch import BatchBenchConfig, run_batch_bench


def test_bench_batch_writes_jobs_per_minute_and_a_plot(tmp_path):
    r = run_batch_bench(tmp_path, BatchBenchConfig(jobs=2, size=64, workers=(1,), ray=False))
    (row,) = r["rows"]
    assert (row["backend"], row["workers"], row["ok"], row["failed"]) == ("local", 1, 2, 0)
    assert row["jobs_per_min"] > 0 and row["startup_s"] > 0 and 0 < row["job_s_median"] <= row["run_s"]
    assert json.loads((tmp_path / "batch.json").read_text()) == r
    assert (tmp_path / "batch.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch.json", "batch.png"]
