"""``talkhead bench motion``: the step/quality Pareto table of samplers and students.

Protocol (the source blog's): one fixed 6.6 s (165-frame) clip from a held-out
voice; every row starts from the same initial noise and is compared with the
teacher's DDIM S = 50 output, on normalised motion over all 58 channels. Speed
is the median of >= 10 timed runs after warm-up, the rows timed round-robin, and
speed-ups are ratios measured in this same run. Lip sync is scored on the corpus' held-out voices.

One noise draw decides where the clip's blinks fall, and a blink placed a few frames from the
teacher's moves the cosine more than all the mouth channels do; so beside the table (seed 0, the
protocol) the JSON also gives each row's cosine on ``seeds`` consecutive noise seeds, and how its
squared error over them splits between the mouth, eyes, brows and head.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.audio.tts import synthesize
from talkhead.config import HOP, option
from talkhead.metrics import cosine, error_shares, jitter, lipsync_r
from talkhead.motion.model import MotionModel, load
from talkhead.motion.net import compile_network
from talkhead.util import atomic_write

CLIP_FRAMES = 165
CLIP_TEXT = ("Good evening. Tonight the weather turns cold, with strong winds over the bay "
             "and snow expected by Thursday morning.")
CLIP_VOICE = "gb-male-deep"  # held out from training
ROW_KEYS = ("sampler", "steps", "ms_per_clip", "fps", "speedup_vs_teacher50", "cosine_to_teacher50",
            "mse_to_teacher50", "jitter", "lipsync_r")


@dataclass(frozen=True)
class BenchConfig:
    """What the motion benchmark runs."""

    teacher: str = option("teacher", "the reference model")
    students: tuple[str, ...] = ("student-4", "student-2", "student-1", "student-consistency")
    repeats: int = option(10, "timed runs of each model")
    lipsync_clips: int = option(24, "held-out clips for lip sync", flag="--clips")
    device: str = option("cpu", choices=("cpu", "cuda"))
    seed: int = 0
    seeds: int = option(16, "noise seeds (from ``seed`` on) for the per-seed cosines written beside the table (the "
                            "table uses the first)")


def fixed_clip() -> np.ndarray:
    """The benchmark's 6.6 s of held-out-voice speech, padded or cut to exactly 165 frames: [105600]."""
    wav = synthesize(CLIP_TEXT, CLIP_VOICE).wav
    n = CLIP_FRAMES * HOP
    return np.pad(wav, (0, max(0, n - len(wav))))[:n]


def clip_noises(model: MotionModel, seed: int, count: int, device: str) -> list[torch.Tensor]:
    """The fixed clip's initial noise for seeds ``seed`` .. ``seed + count - 1``: each [1, K, W, 58]."""
    return [model.init_noise(1, CLIP_FRAMES, torch.Generator().manual_seed(seed + i)).to(device) for i in range(count)]


def _time_interleaved(fns: list, repeats: int, device: str) -> list[float]:
    """Median wall time in ms of each ``fn()``, timed round-robin after two warm-up calls each.

    Round-robin, not row after row: a burst of load from elsewhere on a shared machine then
    slows every row alike instead of one, so the speed-up ratios stay honest.
    """
    for fn in fns:
        for _ in range(2):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            if device == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            if device == "cuda":
                torch.cuda.synchronize()
            times[i].append((time.perf_counter() - t0) * 1000)
    return [statistics.median(t) for t in times]


def _variants(cfg: BenchConfig, models_dir: Path | None) -> list[tuple[str, str, int | None, str | None]]:
    """(row sampler label, model name, steps, sampler) for every row."""
    rows = [("teacher-ddim", cfg.teacher, s, "ddim") for s in (50, 25, 10, 4, 2, 1)]
    rows += [(f"teacher-{k}", cfg.teacher, s, k) for k in ("dpmpp", "unipc") for s in (10, 4, 2)]
    for name in cfg.students:
        path = (models_dir / f"{name}.safetensors") if models_dir else None
        ref = str(path) if path is not None and path.exists() else name
        label = "student" if name.split("-")[-1].isdigit() else f"student-{name.split('-', 1)[1]}"
        rows.append((label, ref, None, None))
    return rows


class ClipRunner:
    """Loads each model once and samples the fixed clip and the held-out clips with it."""

    def __init__(self, cfg: BenchConfig, val) -> None:
        self.cfg, self.val, self.cache = cfg, val, {}

    def model(self, name: str) -> MotionModel:
        if name not in self.cache:
            m = load(name)
            m.denoiser.to(self.cfg.device)
            if self.cfg.device == "cuda":
                # CUDA graphs: a clip is ~3-150 tiny forwards, which kernel launches would dominate.
                m.denoiser.net = compile_network(m.denoiser.net, mode="reduce-overhead")
            self.cache[name] = m
        return self.cache[name]

    def clip_fn(self, m: MotionModel, feats: torch.Tensor, noise: torch.Tensor, steps, sampler):
        def run() -> torch.Tensor:
            with torch.inference_mode(), torch.autocast(self.cfg.device, torch.bfloat16, enabled=self.cfg.device == "cuda"):
                return m.sample(feats, noise, steps=steps, sampler=sampler)
        return run

    def seed_outputs(self, m: MotionModel, feats: torch.Tensor, noises: list[torch.Tensor], steps, sampler) -> list[np.ndarray]:
        """Normalised motion [T, 58] from each initial noise, in the order given."""
        return [m.norm.motion(self.clip_fn(m, feats, n, steps, sampler)()[0].float().cpu()).numpy() for n in noises]

    def lipsync(self, m: MotionModel, steps, sampler) -> float:
        gens, targets = [], []
        for audio, motion in zip(self.val.audio, self.val.motion):
            a = m.norm.audio(audio)[None].to(self.cfg.device)
            noise = m.init_noise(1, len(audio), torch.Generator().manual_seed(self.cfg.seed)).to(self.cfg.device)
            with torch.inference_mode():
                gens.append(m.sample(a, noise, steps=steps, sampler=sampler)[0].float().cpu().numpy())
            targets.append(motion.numpy())
        return lipsync_r(gens, targets)


def run_motion_bench(data: str | Path, out: str | Path, cfg: BenchConfig = BenchConfig(),
                     models_dir: Path | None = None, progress: bool = True) -> dict:
    """Run every row, write ``out/bench.json`` and ``out/pareto.png``; returns the JSON."""
    from talkhead.motion.data.windows import load_clips

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    teacher = load(cfg.teacher)
    runner = ClipRunner(cfg, load_clips(data, "heldout", teacher.features, limit=cfg.lipsync_clips))
    wav = fixed_clip()
    noises = clip_noises(teacher, cfg.seed, max(1, cfg.seeds), cfg.device)
    rows, fns, refs, by_seed = [], [], None, []
    for label, name, steps, sampler in _variants(cfg, models_dir):
        if not _available(name):
            continue
        m = runner.model(name)
        feats = m.audio_features(wav)[None].to(cfg.device)
        fns.append(runner.clip_fn(m, feats, noises[0], steps, sampler))
        outs = runner.seed_outputs(m, feats, noises, steps, sampler)
        refs = outs if refs is None else refs  # the first row is the teacher at S = 50
        normed, ref_norm = outs[0], refs[0]
        by_seed.append(_seed_summary(label, steps or len(m.timesteps()), outs, refs))
        rows.append({"sampler": label, "steps": steps or len(m.timesteps()),
                     "cosine_to_teacher50": round(cosine(normed, ref_norm), 5),
                     "mse_to_teacher50": round(float(np.mean((normed - ref_norm) ** 2)), 6),
                     "jitter": round(jitter(normed), 5), "lipsync_r": round(runner.lipsync(m, steps, sampler), 4)})
    times = _time_interleaved(fns, cfg.repeats, cfg.device)
    for row, ms in zip(rows, times):
        row.update(ms_per_clip=round(ms, 3), fps=round(CLIP_FRAMES / (ms / 1000), 1),
                   speedup_vs_teacher50=round(times[0] / ms, 2))
    rows = [{k: row[k] for k in ROW_KEYS} for row in rows]
    if progress:
        for row in rows:
            print(json.dumps(row))
    result = {"rows": rows, "machine": machine_info(cfg.device),
              "protocol": {"clip_frames": CLIP_FRAMES, "clip_voice": CLIP_VOICE, "repeats": cfg.repeats,
                           "lipsync_clips": len(runner.val.rows), "seed": cfg.seed,
                           "timed": "motion sampling from audio features, rows interleaved round-robin"},
              "seeds": {"seeds": list(range(cfg.seed, cfg.seed + len(noises))), "rows": by_seed}}
    atomic_write(out / "bench.json", json.dumps(result, indent=1).encode())
    from talkhead.bench.plots import plot_pareto

    plot_pareto(rows, out / "pareto.png", title=f"motion: latency vs parity ({result['machine']['device_name']})")
    return result


def _seed_summary(label: str, steps: int, outs: list[np.ndarray], refs: list[np.ndarray]) -> dict:
    """One row against the teacher's S = 50 output on each noise seed: cosines, their spread, where the error sits.

    ``cosine_sem`` is the mean's standard error over the seeds: two rows whose means differ by less
    than about twice it are not told apart by this clip.
    """
    return {"sampler": label, "steps": steps, **cosine_summary(outs, refs, places=5),
            "error_share": {g: round(v, 4) for g, v in error_shares(outs, refs).items()}}


def cosine_summary(outs: list[np.ndarray], refs: list[np.ndarray], places: int) -> dict:
    """Each seed's cosine to its reference, and their mean, standard error, median and minimum."""
    c = [cosine(o, r) for o, r in zip(outs, refs)]
    return {"cosine_mean": round(float(np.mean(c)), places), "cosine_sem": round(standard_error(c), places),
            "cosine_median": round(float(np.median(c)), places), "cosine_min": round(min(c), places),
            "cosines": [round(x, places) for x in c]}


def standard_error(values: list[float]) -> float:
    """Standard error of the mean of ``values`` (0 for fewer than two)."""
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def _available(name: str) -> bool:
    from talkhead.errors import InputError
    from talkhead.motion.model import resolve

    try:
        return resolve(name).exists()
    except InputError:
        return False


def machine_info(device: str) -> dict:
    """Where the numbers came from."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), name)
    except OSError:
        pass
    if device == "cuda":
        name = torch.cuda.get_device_name(0)
    return {"device": device, "device_name": name, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version()}
