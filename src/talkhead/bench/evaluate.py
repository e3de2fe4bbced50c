"""``talkhead eval``: a motion model against phoneme targets on voices it never heard."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from talkhead.metrics import blink_rate, head_stats, lipsync_r, mouth_mse, pearson
from talkhead.motion.data.windows import load_corpora
from talkhead.motion.model import MotionModel
from talkhead.motion.windows import window_starts
from talkhead.rig.spec import SPEC


def seam_ratio(motions: list[np.ndarray], std: np.ndarray, window: int = 80, overlap: int = 10) -> float:
    """Mean |second difference| within 2 frames of a window join over its mean elsewhere (normalised units)."""
    near, far = [], []
    for m in motions:
        d2 = np.abs(np.diff(m / std, n=2, axis=0)).mean(1)  # d2[i] is centred on frame i + 1
        joins = [s + k for s in window_starts(len(m), window, overlap)[1:] for k in (0, overlap)]
        mask = np.zeros(len(d2), bool)
        for j in joins:
            mask[max(0, j - 3) : j + 2] = True
        near.append(d2[mask])
        far.append(d2[~mask])
    near_c, far_c = np.concatenate(near), np.concatenate(far)
    return float(near_c.mean() / max(far_c.mean(), 1e-12)) if len(near_c) else float("nan")


def _diversity(samples: np.ndarray) -> dict[str, float]:
    """Std across seeds [S, T, 58], averaged over frames, for lips, head and blinks."""
    spread = samples.std(0).mean(0)
    return {"diversity_lips": float(spread[SPEC.indices(["jawOpen", "mouthClose", "mouthPucker", "mouthFunnel"])].mean()),
            "diversity_head": float(spread[SPEC.pose][:3].mean()),
            "diversity_blink": float(spread[SPEC.indices(["eyeBlinkLeft", "eyeBlinkRight"])].mean())}


def gap_r(gen: list[np.ndarray], target: list[np.ndarray]) -> float:
    """Pooled r of the lip gap the motion draws on the standard face (``motion.lipnet.drawn_gap``): the opening
    however a model makes it (jaw, or lips sealing), where jawOpen r sees one channel of it."""
    from talkhead.motion.lipnet import drawn_gap

    gap = lambda ms: np.concatenate([drawn_gap(torch.as_tensor(m, dtype=torch.float32)).numpy() for m in ms])  # noqa: E731
    return pearson(gap(gen), gap(target))


@torch.no_grad()
def evaluate(model: MotionModel, data: str | Path | list[str | Path], steps: int | None = None,
             sampler: str | None = None, seeds: int = 3, clips: int | None = None, guidance: float = 1.0,
             progress: bool = True) -> dict:
    """Lip sync per held-out voice and per clip, mouth MSE, blinks, head motion, diversity across seeds, seams.

    ``data`` is one corpus or several (their held-out splits pooled), synthetic or aligned real speech.
    """
    corpora = data if isinstance(data, (list, tuple)) else [data]
    val = load_corpora(corpora, "heldout", model.hearing, limit=clips)  # a lip net's taps too
    gens, targets, voices, divs = [], [], [], []
    for audio, motion, row in tqdm(list(zip(val.audio, val.motion, val.rows)), desc="eval", disable=not progress):
        a = model.norm.audio(audio)[None].expand(seeds, -1, -1)
        gen = torch.Generator().manual_seed(0)
        noise = model.init_noise(seeds, len(audio), gen)
        out = model.sample(a, noise, steps=steps, sampler=sampler, guidance=guidance, generator=gen).numpy()
        gens.append(out[0])
        targets.append(motion.numpy())
        voices.append(row["voice"])
        divs.append(_diversity(out))
    per_voice: dict[str, list[int]] = defaultdict(list)
    for i, v in enumerate(voices):
        per_voice[v].append(i)
    std = model.norm.motion_std.numpy()
    heads = [head_stats(g) for g in gens]
    return {
        "clips": len(gens), "seeds": seeds, "steps": steps or len(model.timesteps()), "sampler": sampler or model.sampling.get("sampler"),
        "lipsync_r": lipsync_r(gens, targets),
        "lipsync_r_per_voice": {v: lipsync_r([gens[i] for i in ix], [targets[i] for i in ix]) for v, ix in per_voice.items()},
        "lipsync_r_per_clip": {r["id"]: round(lipsync_r([g], [t]), 4) for r, g, t in zip(val.rows, gens, targets)},
        "gap_r": gap_r(gens, targets),
        "mouth_mse": mouth_mse(gens, targets),
        "blink_rate_per_min": float(np.mean([blink_rate(g) for g in gens])),
        "target_blink_rate_per_min": float(np.mean([blink_rate(t) for t in targets])),
        "head_std": float(np.mean([h["head_std"] for h in heads])),
        "head_velocity": float(np.mean([h["head_velocity"] for h in heads])),
        "target_head_std": float(np.mean([head_stats(t)["head_std"] for t in targets])),
        **{k: float(np.mean([d[k] for d in divs])) for k in divs[0]},
        "seam_ratio": seam_ratio(gens, std, model.cfg.window, model.cfg.tail),
    }
