"""``talkhead bench frontend``: which audio front end carries lip sync from TTS voices to real speech.

The same recipe for every candidate: a ridge regression from +-4 frames of features to the rig's
jawOpen target, fitted on training-voice TTS clips (optionally with augmented copies of their audio,
or with real recordings added), scored as Pearson r on held-out TTS voices and on the real-speech
evaluation split. Training a teacher per candidate would take an hour each on 2 cores; the probe
takes a minute and ranks the candidates the way the issue's first measurements did.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.audio.features import FeatureConfig, extract
from talkhead.metrics import pearson
from talkhead.motion.data.corpus import load_manifest
from talkhead.motion.data.windows import Clips, load_clips, load_corpora
from talkhead.rig.spec import SPEC
from talkhead.util import atomic_write

CONTEXT = 4  # frames either side: +-160 ms, what the teacher's audio convolutions see


@dataclass(frozen=True)
class Candidate:
    """One row of the table: a front end, augmented copies of the TTS audio, and real training clips."""

    name: str
    features: FeatureConfig
    augmented: int = 0
    real_train: bool = False


CANDIDATES = (
    Candidate("logmel", FeatureConfig()),
    Candidate("logmel + augmentation", FeatureConfig(), augmented=2),
    Candidate("whisper (mean of 2 rows)", FeatureConfig(kind="whisper", pool="mean")),
    Candidate("whisper (2 rows stacked)", FeatureConfig(kind="whisper", pool="stack")),
    Candidate("whisper stacked + augmentation", FeatureConfig(kind="whisper", pool="stack"), augmented=2),
    Candidate("whisper mean + augmentation (the teacher's)", FeatureConfig(kind="whisper", pool="mean"), augmented=2),
    Candidate("whisper mean + augmentation + real (not shipped)", FeatureConfig(kind="whisper", pool="mean"),
              augmented=2, real_train=True),
)


def context_stack(feats: np.ndarray, k: int = CONTEXT) -> np.ndarray:
    """[T, D] -> [T, (2k + 1) D]: each frame with its k neighbours either side (edges repeated)."""
    padded = np.pad(feats, ((k, k), (0, 0)), mode="edge")
    return np.concatenate([padded[i : i + len(feats)] for i in range(2 * k + 1)], 1)


class Ridge:
    """Ridge regression on standardised inputs, fitted from accumulated Gram matrices."""

    def __init__(self, xs: list[np.ndarray], ys: list[np.ndarray], strength: float = 1e-2) -> None:
        # Clip by clip, so that memory holds one clip's context stack and the Gram matrix, not every frame.
        n = sum(len(x) for x in xs)
        s1 = sum(x.sum(0, dtype=np.float64) for x in xs)
        s2 = sum((x.astype(np.float64) ** 2).sum(0) for x in xs)
        self.mean = s1 / n
        self.std = np.sqrt(np.maximum(s2 / n - self.mean**2, 0)) + 1e-6
        self.y_mean = float(np.concatenate(ys).mean())
        d = len(self.mean)
        gram, rhs = torch.zeros(d, d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
        for x, y in zip(xs, ys):
            z = torch.from_numpy((x.astype(np.float64) - self.mean) / self.std)
            gram += z.T @ z
            rhs += z.T @ torch.from_numpy(y.astype(np.float64) - self.y_mean)
        lam = strength * float(torch.trace(gram)) / d
        self.w = torch.linalg.solve(gram + lam * torch.eye(d, dtype=gram.dtype), rhs)

    def predict(self, x: np.ndarray) -> np.ndarray:
        z = torch.from_numpy((x.astype(np.float64) - self.mean) / self.std)
        return (z @ self.w).numpy() + self.y_mean


def _pairs(clips: Clips, with_variants: bool) -> tuple[list[np.ndarray], list[np.ndarray]]:
    jaw = SPEC["jawOpen"]
    xs, ys = [], []
    for i, (a, m) in enumerate(zip(clips.audio, clips.motion)):
        for f in [a, *(clips.variants[i] if with_variants and clips.variants else [])]:
            xs.append(context_stack(f.numpy()))
            ys.append(m[:, jaw].numpy())
    return xs, ys


def _score(model: Ridge, clips: Clips) -> tuple[float, dict[str, float]]:
    """Pooled r over all clips and r per speaker."""
    jaw = SPEC["jawOpen"]
    preds = [model.predict(context_stack(a.numpy())) for a in clips.audio]
    targets = [m[:, jaw].numpy() for m in clips.motion]
    per: dict[str, list[int]] = {}
    for i, r in enumerate(clips.rows):
        per.setdefault(r["voice"], []).append(i)
    pooled = lambda ix: round(pearson(np.concatenate([preds[i] for i in ix]), np.concatenate([targets[i] for i in ix])), 4)
    return pooled(range(len(preds))), {v: pooled(ix) for v, ix in per.items()}


def _feature_ms(features: FeatureConfig, wav: np.ndarray, repeats: int = 5) -> float:
    extract(wav, features)  # warm: model load, caches
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        extract(wav, features)
        times.append(time.perf_counter() - t)
    return round(1000 * float(np.median(times)), 2)


def run_frontend_bench(data: str | Path, real: list[str | Path], out: str | Path, train_clips: int = 160,
                       heldout_clips: int = 64, candidates: tuple[Candidate, ...] = CANDIDATES) -> dict:
    """The table: per candidate, TTS held-out r, real-speech r (pooled and per speaker), feature ms per 6.6 s."""
    from talkhead.bench.motion import fixed_clip

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    clip = fixed_clip()
    rows = []
    for c in candidates:
        t0 = time.perf_counter()
        tr = load_clips(data, "train", c.features, limit=train_clips, augmented=c.augmented)
        xs, ys = _pairs(tr, with_variants=True)
        if c.real_train:
            with_train = [r for r in real if any(row["split"] == "train" for row in load_manifest(r))]
            rx, ry = _pairs(load_corpora(with_train, "train", c.features, augmented=c.augmented), with_variants=True)
            xs, ys = xs + rx, ys + ry
        model = Ridge(xs, ys)
        tts_r, _ = _score(model, load_clips(data, "heldout", c.features, limit=heldout_clips))
        real_r, per = _score(model, load_corpora(real, "heldout", c.features))
        rows.append({"name": c.name, "features": c.features.kind, "pool": c.features.pool, "dim": c.features.dim,
                     "augmented_copies": c.augmented, "real_in_training": c.real_train, "tts_heldout_r": tts_r,
                     "real_r": real_r, "real_r_per_speaker": per, "feature_ms_6_6s": _feature_ms(c.features, clip),
                     "probe_s": round(time.perf_counter() - t0, 1)})
        print(f"{c.name:55s} TTS r {tts_r:.3f}  real r {real_r:.3f}  {per}")
    result = {"train_clips": train_clips, "heldout_clips": heldout_clips, "context_frames": CONTEXT,
              "threads": torch.get_num_threads(), "data": str(data), "real": [str(r) for r in real], "rows": rows}
    atomic_write(out / "frontend.json", json.dumps(result, indent=1).encode())
    _plot(rows, out / "frontend.png")
    return result


def _plot(rows: list[dict], path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((9, 0.55 * len(rows) + 1.5), dpi=100)
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r["tts_heldout_r"] for r in rows], 0.4, label="held-out TTS voices")
    ax.barh(y + 0.2, [r["real_r"] for r in rows], 0.4, label="real speech")
    ax.set_yticks(y, [r["name"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("jawOpen r of a linear probe (+-4 frames)")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False)  # above: no bar hidden
    fig.tight_layout()
    save_figure(fig, path)
