"""``talkhead bench compare``: does the benchmark clip tell two models (or samplers) apart?

Each entry samples ``bench motion``'s fixed clip from the same initial noises, one per seed, and
is scored on each seed against the teacher's DDIM S = 50 output from that noise. The first entry
is the baseline; every other one is compared with it seed by seed. The comparison is paired
because the noise decides where the clip's blinks fall, and a misplaced blink moves every entry's
cosine alike: the spread between seeds is mostly shared, so the standard error of the paired
differences is a fraction of that of either mean. A mean difference outside its 95 % interval
(about twice the standard error at 64 seeds) is one the clip can tell; so, for "better on most
seeds", is a sign test below 0.05.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from talkhead.bench.motion import (
    BenchConfig,
    ClipRunner,
    clip_noises,
    cosine_summary,
    fixed_clip,
    machine_info,
    standard_error,
)
from talkhead.config import option
from talkhead.diffusion.samplers import SAMPLERS
from talkhead.errors import InputError
from talkhead.metrics import jitter
from talkhead.util import atomic_write

_SPEC = re.compile(r"^(?P<model>[^@].*?)(?:@(?P<steps>\d+)(?::(?P<sampler>\w+))?)?$")


@dataclass(frozen=True)
class Entry:
    """One thing to score: a model (shipped name or checkpoint path), optionally with other steps or sampler."""

    model: str
    steps: int | None = None
    sampler: str | None = None

    @property
    def label(self) -> str:
        return self.model + self._suffix

    @property
    def short_label(self) -> str:
        """The label with a checkpoint path cut to its folder and file stem, for plots."""
        p = Path(self.model)
        name = f"{p.parent.name}/{p.stem}" if p.suffix == ".safetensors" and p.parent.name else p.stem
        return name + self._suffix

    @property
    def _suffix(self) -> str:
        return (f"@{self.steps}" if self.steps else "") + (f":{self.sampler}" if self.sampler else "")


def parse_entry(spec: str) -> Entry:
    """``NAME[@STEPS[:SAMPLER]]``, e.g. ``student-1``, ``teacher@4:unipc``, ``runs/x/student-4.safetensors``."""
    m = _SPEC.match(spec.strip())
    if not m or not m["model"]:
        raise InputError(f"cannot read model entry {spec!r}; expected NAME[@STEPS[:SAMPLER]], e.g. teacher@4:unipc")
    steps = int(m["steps"]) if m["steps"] else None
    if steps is not None and steps < 1:
        raise InputError(f"{spec!r}: steps must be at least 1")
    if m["sampler"] and m["sampler"] not in SAMPLERS:
        raise InputError(f"{spec!r}: unknown sampler {m['sampler']!r}; expected one of {', '.join(sorted(SAMPLERS))}")
    return Entry(m["model"], steps, m["sampler"])


@dataclass(frozen=True)
class CompareConfig:
    """Which noise seeds and reference the comparison uses."""

    teacher: str = option("teacher", "the reference, sampled with DDIM at S = 50")
    seeds: int = option(64, "noise seeds, each the clip's whole initial noise")
    seed: int = option(0, "the first seed (bench motion's table uses seed 0 and its seeds section 0-15)")
    device: str = option("cpu", choices=("cpu", "cuda"))


def paired(base: list[float], other: list[float]) -> dict:
    """Seed-by-seed difference ``other - base``: mean, standard error, median, seeds better and worse, sign test.

    ``told_apart`` is a paired t-test at 5 %: the mean lies further from zero than ``half_interval``,
    Student's t quantile times the standard error (2.0 of them at 64 seeds, 12.7 at 2). Both tests
    are given because the differences are heavy-tailed: one seed where a blink moves can shift the
    mean by more than all the others do, which the sign test (Dixon & Mood 1946: how likely this
    many wins would be if each seed were a coin toss; ties left out) does not see.
    """
    from scipy.stats import binomtest
    from scipy.stats import t as student_t

    d = np.asarray(other, np.float64) - np.asarray(base, np.float64)
    mean, sem = float(d.mean()), standard_error(d.tolist())
    half = float(student_t.ppf(0.975, len(d) - 1)) * sem if len(d) > 1 else 0.0
    better, worse = int((d > 0).sum()), int((d < 0).sum())
    sign_p = binomtest(better, better + worse).pvalue if better + worse else 1.0
    return {"mean": round(mean, 6), "sem": round(sem, 6), "half_interval": round(half, 6),
            "median": round(float(np.median(d)), 6), "better": better, "worse": worse,
            "sign_p": round(float(sign_p), 5), "told_apart": bool(sem > 0 and abs(mean) > half)}


def run_compare(entries: list[Entry], out: str | Path, cfg: CompareConfig = CompareConfig(),
                progress: bool = True) -> dict:
    """Score every entry on ``cfg.seeds`` noise seeds; write ``out/compare.json`` and ``out/compare.png``."""
    if len(entries) < 2:
        raise InputError(f"compare needs at least two models, the first as the baseline (got {len(entries)})")
    if cfg.seeds < 2:
        raise InputError(f"--seeds needs at least 2 noise seeds for a standard error (got {cfg.seeds})")
    out = Path(out)
    runner = ClipRunner(BenchConfig(teacher=cfg.teacher, device=cfg.device), None)
    teacher = runner.model(cfg.teacher)
    wav = fixed_clip()
    noises = clip_noises(teacher, cfg.seed, cfg.seeds, cfg.device)
    jobs = [Entry(cfg.teacher, 50, "ddim")] + list(entries)
    models = [runner.model(e.model) for e in jobs]  # load all first: a bad name fails before minutes of sampling
    bar = tqdm(total=len(jobs) * len(noises), desc="compare", unit="clip", disable=not progress)
    outs = []
    for e, m in zip(jobs, models):
        feats = m.audio_features(wav)[None].to(cfg.device)
        outs.append([])
        for n in noises:
            outs[-1] += runner.seed_outputs(m, feats, [n], e.steps, e.sampler)
            bar.update()
    bar.close()
    ref, scored = outs[0], outs[1:]
    ref_jitter = float(np.mean([jitter(r) for r in ref]))
    results = []
    for e, m, o in zip(entries, models[1:], scored):
        results.append({"entry": e.label, "short": e.short_label, "model": e.model,
                        "steps": e.steps or len(m.timesteps()), "sampler": e.sampler or m.sampling.get("sampler", "ddim"),
                        **cosine_summary(o, ref, places=6), "mse_mean": round(float(np.mean([np.mean((a - r) ** 2) for a, r in zip(o, ref)])), 6),
                        "jitter_vs_teacher": round(float(np.mean([jitter(a) for a in o])) / ref_jitter, 4)})
    for r in results[1:]:
        r["vs_first"] = paired(results[0]["cosines"], r["cosines"])
    result = {"entries": results, "seeds": list(range(cfg.seed, cfg.seed + cfg.seeds)),
              "reference": f"{cfg.teacher}@50:ddim", "machine": machine_info(cfg.device)}
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "compare.json", json.dumps(result, indent=1).encode())
    plot_compare(results, out / "compare.png")
    return result


def plot_compare(results: list[dict], path: Path) -> None:
    """Per-seed cosine differences from the first entry, one column per other entry, with the mean's 95 % interval."""
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((max(5.5, 1.6 * len(results)), 4))
    base = np.asarray(results[0]["cosines"])
    rng = np.random.default_rng(0)  # horizontal scatter only, so that equal points stay visible
    for i, r in enumerate(results[1:], 1):
        d = np.asarray(r["cosines"]) - base
        ax.scatter(i + rng.uniform(-0.15, 0.15, len(d)), d, s=10, alpha=0.6)
        v = r["vs_first"]
        ax.errorbar(i, v["mean"], yerr=v["half_interval"], fmt="_", color="k", ms=22, capsize=6, lw=1.5)
    ax.axhline(0, color="#888888", lw=0.8)
    ax.set_xticks(range(1, len(results)), [r["short"] for r in results[1:]], fontsize=8, rotation=15)
    ax.set_xlim(0.4, len(results) - 0.4)
    ax.set_ylabel("cosine to teacher S=50, minus the baseline's")
    ax.set_title(f"baseline {results[0]['short']}, paired over {len(base)} noise seeds\n"
                 "(one dot per seed; bar: the mean's 95 % interval)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
