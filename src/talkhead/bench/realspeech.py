"""``talkhead bench real``: lip sync on real recordings, per model, per speaker and per recording.

Each entry (``NAME[@STEPS[:SAMPLER]]``) samples every held-out clip of the aligned real-speech
corpora (``talkhead data align``) and of a TTS corpus' held-out voices, and is scored as the
pooled Pearson r of jawOpen against the rig targets of the aligned phones, and of the lip gap both draw on the
standard face (``gap_r``: the opening however it is made, jaw or lips sealing).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch

from talkhead.bench.compare import Entry
from talkhead.bench.evaluate import evaluate
from talkhead.motion.model import load
from talkhead.util import atomic_write


def run_real_bench(entries: list[Entry], real: list[str | Path], out: str | Path, tts: str | Path | None = None,
                   tts_clips: int = 48, progress: bool = True) -> dict:
    """Real-speech r (pooled, per speaker, per clip) and held-out TTS r for each entry; writes real.json + real.png."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for e in entries:
        model = load(e.model)
        t0 = time.perf_counter()
        got = evaluate(model, list(real), steps=e.steps, sampler=e.sampler, seeds=1, progress=progress)
        row = {"entry": e.label, "model": e.model, "steps": got["steps"], "sampler": got["sampler"],
               "features": model.features.kind, "real_r": round(got["lipsync_r"], 4), "real_gap_r": round(got["gap_r"], 4),
               "real_r_per_speaker": {k: round(v, 4) for k, v in got["lipsync_r_per_voice"].items()},
               "real_r_per_clip": got["lipsync_r_per_clip"], "real_clips": got["clips"]}
        if tts is not None:
            t = evaluate(model, tts, steps=e.steps, sampler=e.sampler, seeds=1, clips=tts_clips, progress=progress)
            row["tts_heldout_r"], row["tts_heldout_gap_r"] = round(t["lipsync_r"], 4), round(t["gap_r"], 4)
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        print(f"{e.label:40s} real r {row['real_r']:.3f} {row['real_r_per_speaker']} lip gap r {row['real_gap_r']:.3f}"
              + (f"  TTS held-out r {row['tts_heldout_r']:.3f}" if "tts_heldout_r" in row else ""))
    result = {"real": [str(r) for r in real], "tts": str(tts) if tts else None, "tts_clips": tts_clips,
              "threads": torch.get_num_threads(), "rows": rows}
    atomic_write(out / "real.json", json.dumps(result, indent=1).encode())
    _plot(rows, out / "real.png")
    return result


def _plot(rows: list[dict], path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, (ax, bx) = new_figure((11, 0.5 * len(rows) + 2), dpi=100, ncols=2, gridspec_kw={"width_ratios": [1, 1.4]})
    y = np.arange(len(rows))
    ax.barh(y - 0.2, [r["real_r"] for r in rows], 0.4, label="real speech")
    ax.barh(y + 0.2, [r.get("tts_heldout_r", 0) for r in rows], 0.4, label="held-out TTS voices")
    ax.set_yticks(y, [r["entry"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("jawOpen r against the aligned phones' targets")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0, 1), ncol=2, frameon=False)  # above: no bar hidden
    for i, r in enumerate(rows):  # the spread over recordings: which clips a model fails on
        vals = [v for v in r["real_r_per_clip"].values() if np.isfinite(v)]
        bx.scatter(vals, np.full(len(vals), i) + np.random.default_rng(i).uniform(-0.25, 0.25, len(vals)), s=4, alpha=0.4)
    bx.set_yticks(y, [r["entry"] for r in rows], fontsize=8)
    bx.invert_yaxis()
    bx.set_xlim(-0.5, 1)
    bx.set_xlabel("r per recording")
    fig.tight_layout()
    save_figure(fig, path)
