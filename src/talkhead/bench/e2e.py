"""End-to-end speed of ``generate`` on the 6.6 s benchmark clip, stage by stage, and what cadence saves."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import numpy as np

from talkhead.config import DEFAULT_VOICE, FPS, HOP, VIDEO_SIZE
from talkhead.metrics import psnr_db
from talkhead.util import atomic_write

TEXT = ("Good evening. Tonight the weather turns cold, with strong winds over the bay "
        "and snow expected by Thursday morning.")
CLIP_FRAMES = 165


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    return min(99.0, float(psnr_db(np.mean((a.astype(np.float32) - b.astype(np.float32)) ** 2))))  # 99: the same


def _stages(renderer, model, cfg, stride: int) -> tuple[dict[str, float], np.ndarray]:
    """Seconds per stage for one clip (TTS, motion, render, encode) and the frames."""
    from talkhead.audio.tts import synthesize
    from talkhead.pipeline import frames_from_motion, motion_from_speech
    from talkhead.video import write_mp4

    t = {}
    t0 = time.perf_counter()
    speech = synthesize(TEXT, DEFAULT_VOICE)
    wav = np.pad(speech.wav, (0, max(0, CLIP_FRAMES * HOP - len(speech.wav))))[: CLIP_FRAMES * HOP]
    speech = type(speech)(wav, speech.sample_rate, speech.phones)
    t["tts"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    motion = motion_from_speech(speech, cfg, model)
    t["motion"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    frames = np.stack([f.image for f in frames_from_motion([motion], renderer, stride)])
    t["render"] = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        write_mp4(Path(d) / "clip.mp4", frames, speech.wav, speech.sample_rate)
        t["encode"] = time.perf_counter() - t0
    return t, frames


def run_e2e_bench(out_dir: str | Path, size: int | tuple[int, int] = VIDEO_SIZE, device: str = "cpu", runs: int = 3,
                  strides: tuple[int, ...] = (1, 2, 3)) -> dict:
    """Median stage times over ``runs`` for each cadence stride; writes e2e.json and e2e.png."""
    from talkhead.face.detect import default_photo
    from talkhead.motion.model import load_model
    from talkhead.motion.stream import MotionConfig
    from talkhead.warp.renderer import WarpRenderer

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        model, cfg = load_model(None), MotionConfig()
        driver = model.meta.get("name") or "default model"
    except Exception:  # no shipped model yet: phoneme targets drive the face
        model, cfg, driver = None, MotionConfig(driver="phones"), "phones"
    renderer = WarpRenderer(default_photo(), size, device)
    rows, full = [], None
    for stride in strides:
        _stages(renderer, model, cfg, stride)  # warm-up
        timed = [_stages(renderer, model, cfg, stride) for _ in range(runs)]
        med = {k: float(np.median([t[k] for t, _ in timed])) for k in timed[0][0]}
        frames = timed[0][1]
        full = frames if full is None else full
        total = sum(med.values())
        rows.append({"cadence_stride": stride, "total_s": round(total, 4),
                     "realtime_factor": round(CLIP_FRAMES / FPS / total, 2),
                     **{f"{k}_s": round(v, 4) for k, v in med.items()},
                     **{f"{k}_share": round(v / total, 3) for k, v in med.items()},
                     "psnr_vs_stride1_db": round(_psnr(frames, full), 2)})
    result = {"clip_frames": CLIP_FRAMES, "size": list(renderer.size), "device": device, "driver": driver,
              "runs": runs, "rows": rows}
    atomic_write(out / "e2e.json", json.dumps(result, indent=1).encode())
    _plot(rows, out / "e2e.png")
    return result


def _plot(rows: list[dict], path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((7, 3.5))
    left = np.zeros(len(rows))
    for stage in ("tts", "motion", "render", "encode"):
        vals = np.array([r[f"{stage}_s"] for r in rows])
        ax.barh([f"stride {r['cadence_stride']}" for r in rows], vals, left=left, label=stage)
        left += vals
    ax.axvline(CLIP_FRAMES / FPS, color="k", ls="--", lw=1, label="real time (6.6 s)")
    ax.set_xlabel("seconds for a 6.6 s clip, 512x512")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
