"""``talkhead bench batch``: jobs per minute on 1 and 2 workers, local processes and Ray actors.

Forty-eight short text jobs (one sentence each, 256 px, a seed each) run four ways, each into a fresh
folder so that every job does its work: the local pool with 1 and 2 workers, then Ray (a one-node
cluster on this machine, started once) with 1 and 2 actors. Jobs per minute count from the moment
every worker is warm; start-up (worker imports and models, and for Ray the cluster) is reported beside
it. Ratios within the run are what to read: 2 workers over 1 (target >= 1.7x), Ray over the local
pool (target >= 0.9x). Each job's own seconds (inside its worker) show whether a slower run was the
workers' CPUs being shared (the median job got slower) or the dispatch (it did not).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from talkhead.config import LIVE_SIZE, option, parse_size
from talkhead.util import atomic_write

SENTENCES = ("The rain kept falling on the old tin roof.", "Please bring the blue folder to the meeting.",
             "We walked along the river until the sun went down.", "My brother bakes bread every Sunday morning.",
             "The train to the city leaves at half past nine.", "She painted the fence a bright shade of green.",
             "Could you turn the music down a little?", "The museum opens its new hall next week.")
TARGETS = {"two_over_one": 1.7, "ray_over_local": 0.9}


@dataclass(frozen=True)
class BatchBenchConfig:
    """What ``bench batch`` runs: how many jobs, their frame size, the worker counts, with or without Ray."""

    jobs: int = option(48, "one-sentence text jobs (about 0.35 s each: fewer, and a run is mostly noise)")
    size: int | tuple[int, int] = option(LIVE_SIZE, "N or WIDTHxHEIGHT", type=parse_size)
    workers: tuple[int, ...] = (1, 2)
    ray: bool = option(True, "also on Ray (--no-ray: the local pool only)")


def _size(cfg: BatchBenchConfig) -> str:
    return str(cfg.size) if isinstance(cfg.size, int) else f"{cfg.size[0]}x{cfg.size[1]}"


def _write_jobs(path: Path, cfg: BatchBenchConfig) -> None:
    lines = [json.dumps({"text": SENTENCES[i % len(SENTENCES)], "size": _size(cfg), "seed": i, "out": f"job{i:02d}.mp4"})
             for i in range(cfg.jobs)]
    atomic_write(path, ("\n".join(lines) + "\n").encode())


def _row(backend: str, workers: int, report: dict) -> dict:
    seconds = [r["seconds"] for r in report["results"] if r["status"] == "ok"]
    return {"backend": backend, "workers": workers, "ok": report["ok"], "failed": report["failed"],
            "startup_s": report["startup_s"], "run_s": report["run_s"], "wall_s": report["wall_s"],
            "jobs_per_min": report["jobs_per_min"],
            "job_s_median": round(float(np.median(seconds)), 3) if seconds else None}


def _runs(scratch: Path, jobs: Path, cfg: BatchBenchConfig, backend: str) -> list[dict]:
    from talkhead.scale.batch import BatchConfig, run_batch

    rows = []
    for w in cfg.workers:
        folder = scratch / f"{backend}-{w}"  # a fresh folder each: no job is skipped
        report = run_batch(jobs, folder, BatchConfig(workers=w, ray=backend == "ray", progress=False))
        rows.append(_row(backend, w, report))
    return rows


def _ratios(rows: list[dict]) -> dict:
    rate = {(r["backend"], r["workers"]): r["jobs_per_min"] or 0.0 for r in rows}
    out = {}
    for backend in ("local", "ray"):
        if rate.get((backend, 1)) and (backend, 2) in rate:
            out[f"{backend}_two_over_one"] = round(rate[(backend, 2)] / rate[(backend, 1)], 3)
    for w in sorted({r["workers"] for r in rows}):
        if rate.get(("local", w)) and ("ray", w) in rate:
            out[f"ray_over_local_{w}"] = round(rate[("ray", w)] / rate[("local", w)], 3)
    return out


def _ray_runs(scratch: Path, jobs: Path, cfg: BatchBenchConfig) -> tuple[list[dict], float]:
    """The Ray rows on one one-node cluster started here (its start-up timed apart), and its start seconds."""
    from talkhead.scale.ray import connect

    t = time.perf_counter()
    owned = connect(None, num_cpus=max(len(os.sched_getaffinity(0)), *cfg.workers))
    start_s = round(time.perf_counter() - t, 3)
    try:
        return _runs(scratch, jobs, cfg, "ray"), start_s
    finally:
        if owned:
            import ray

            ray.shutdown()


def run_batch_bench(out: str | Path, cfg: BatchBenchConfig = BatchBenchConfig()) -> dict:
    """Run the four ways; writes batch.json and batch.png into ``out`` and returns the result."""
    import tempfile

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    load = [round(v, 2) for v in os.getloadavg()]
    with tempfile.TemporaryDirectory(prefix="talkhead-bench-batch-") as d:  # the videos are not kept
        scratch = Path(d)
        jobs = scratch / "jobs.jsonl"
        _write_jobs(jobs, cfg)
        rows = _runs(scratch, jobs, cfg, "local")
        ray_rows, ray_start_s = _ray_runs(scratch, jobs, cfg) if cfg.ray else ([], None)
    rows += ray_rows
    ratios = _ratios(rows)
    result = {"jobs": cfg.jobs, "size": _size(cfg), "cpu_count": os.cpu_count(), "load_before": load,
              "load_after": [round(v, 2) for v in os.getloadavg()], "ray_cluster_start_s": ray_start_s,
              "rows": rows, "ratios": ratios, "targets": TARGETS,
              "met": {k: v >= TARGETS["two_over_one" if "two_over_one" in k else "ray_over_local"]
                      for k, v in ratios.items()}}
    atomic_write(out / "batch.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "batch.png")
    return result


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((5.6, 3.2))
    workers = sorted({r["workers"] for r in result["rows"]})
    for k, (backend, colour) in enumerate((("local", "#4c72b0"), ("ray", "#dd8452"))):
        rows = {r["workers"]: r for r in result["rows"] if r["backend"] == backend}
        xs = [i + (k - 0.5) * 0.38 for i, w in enumerate(workers) if w in rows]
        ys = [rows[w]["jobs_per_min"] or 0.0 for w in workers if w in rows]
        if xs:
            bars = ax.bar(xs, ys, width=0.36, color=colour, label=f"{backend} (start-up "
                          f"{', '.join(str(rows[w]['startup_s']) for w in workers if w in rows)} s)")
            ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(range(len(workers)), [f"{w} worker{'s' if w > 1 else ''}" for w in workers])
    ax.set_ylabel("jobs per minute (workers warm)")
    top = max((r["jobs_per_min"] or 0.0) for r in result["rows"])
    ax.set_ylim(0, top * 1.45 or 1.0)  # room for the legend above the bars
    ax.set_title(f"{result['jobs']} one-sentence jobs at {result['size']} px\n{_ratio_text(result['ratios'])}", fontsize=8)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    save_figure(fig, path)


def _ratio_text(ratios: dict) -> str:
    """"2 workers / 1: local 1.9x, ray 1.8x; Ray / local: 0.95x (1 worker), ..." from ``_ratios``."""
    scale = [f"{b} {ratios[f'{b}_two_over_one']}x" for b in ("local", "ray") if f"{b}_two_over_one" in ratios]
    ray = [f"{v}x ({k.rsplit('_', 1)[1]} w.)" for k, v in ratios.items() if k.startswith("ray_over_local_")]
    parts = ([f"2 workers / 1: {', '.join(scale)}"] if scale else []) + ([f"Ray / local: {', '.join(ray)}"] if ray else [])
    return "; ".join(parts)
