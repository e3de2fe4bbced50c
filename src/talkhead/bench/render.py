"""Renderer benchmark: warp-renderer frames/s at 512x512 and a contact sheet of key poses.

The motion is a scripted clip built from named channels (open vowel, bilabial,
blink, head turns and nods), so the bench needs no model and no audio.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from talkhead.config import FPS, VIDEO_SIZE
from talkhead.rig.spec import SPEC

if TYPE_CHECKING:
    from talkhead.warp.renderer import WarpRenderer

# (label, channel values, frames held); 5-frame eased transitions in between.
SCRIPT: list[tuple[str, dict[str, float], int]] = [
    ("neutral", {}, 6),
    ("open vowel", {"jawOpen": 0.72, "mouthLowerDownLeft": 0.35, "mouthLowerDownRight": 0.35,
                    "mouthUpperUpLeft": 0.15, "mouthUpperUpRight": 0.15}, 8),
    ("bilabial closure", {"jawOpen": 0.05, "mouthClose": 0.05, "mouthPressLeft": 0.6,
                          "mouthPressRight": 0.6}, 8),
    ("rounded vowel", {"jawOpen": 0.45, "mouthFunnel": 0.55, "mouthPucker": 0.3}, 6),
    ("smile", {"jawOpen": 0.25, "mouthSmileLeft": 0.6, "mouthSmileRight": 0.6}, 6),
    ("blink", {"eyeBlinkLeft": 1.0, "eyeBlinkRight": 1.0}, 3),
    ("yaw +15°", {"yaw": np.radians(15), "jawOpen": 0.3}, 6),
    ("yaw -15°", {"yaw": -np.radians(15), "jawOpen": 0.3}, 6),
    ("pitch +10°", {"pitch": np.radians(10), "browInnerUp": 0.6}, 6),
    ("pitch -10°", {"pitch": -np.radians(10), "jawOpen": 0.5}, 6),
]
TRANSITION = 5
SHEET_ROWS = ("open vowel", "bilabial closure", "blink", "yaw +15°", "pitch -10°")


def script_length() -> int:
    """Frames in one pass of the script."""
    return sum(TRANSITION + hold for _, _, hold in SCRIPT) + TRANSITION


def scripted_motion(frames: int) -> tuple[np.ndarray, dict[str, int]]:
    """The scripted clip, looped/cut to frames: (motion [T, 58], {label: frame mid-hold})."""
    keys, marks, t = [], {}, 0
    for label, values, hold in SCRIPT:
        v = np.zeros(SPEC.dim, np.float32)
        for name, x in values.items():
            v[SPEC[name]] = x
        start = t + TRANSITION
        keys += [(t, None), (start, v), (start + hold, v)]
        marks[label] = start + hold // 2
        t = start + hold
    period = t + TRANSITION
    clip = np.zeros((period + 1, SPEC.dim), np.float32)  # the extra row is the loop's frame 0
    prev_t, prev_v = 0, np.zeros(SPEC.dim, np.float32)
    for kt, kv in keys[1:] + [(period, np.zeros(SPEC.dim, np.float32))]:
        if kv is None:
            continue
        w = np.linspace(0, 1, kt - prev_t + 1)[1:, None]
        w = 0.5 - 0.5 * np.cos(np.pi * w)  # eased, no velocity jumps at keys
        clip[prev_t + 1:kt + 1] = prev_v + w * (kv - prev_v)
        prev_t, prev_v = kt, kv
    reps = -(-frames // period)
    motion = np.tile(clip[:period], (reps, 1))[:frames]
    return motion, {k: v for k, v in marks.items() if v < frames}


def _time_renders(renderer: WarpRenderer, motion: np.ndarray, runs: int, warmup: int, batch: int) -> list[float]:
    """Wall seconds per full pass over the motion, after warm-up passes."""
    times = []
    for i in range(warmup + runs):
        t0 = time.perf_counter()
        for _ in renderer.render_batches(motion, batch=batch):
            pass
        if torch.cuda.is_available() and renderer.device.type == "cuda":
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return times


def contact_sheet(renderer: WarpRenderer, path: Path) -> None:
    """PNG grid: per key pose the source and the rendered frame, whole and zoomed on the face."""
    from talkhead.bench.plots import new_figure, save_figure

    motion, marks = scripted_motion(script_length())
    rows = list(SHEET_ROWS)
    frames = renderer(motion[[marks[r] for r in rows]])
    x0, y0, x1, y1 = renderer.box
    fig, axes = new_figure((13, 3.4 * len(rows)), dpi=100, nrows=len(rows), ncols=4, squeeze=False)
    src = renderer.background
    for i, label in enumerate(rows):
        panels = [(src, "source photo"), (frames[i], f"{label} (frame {marks[label]})"),
                  (src[y0:y1, x0:x1], "source, face"), (frames[i][y0:y1, x0:x1], f"{label}, face")]
        for ax, (img, title) in zip(axes[i], panels):
            ax.imshow(img)
            ax.set_title(title, fontsize=10)
            ax.axis("off")
    fig.suptitle("talkhead warp renderer: source vs rendered", fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.98))
    save_figure(fig, path, dpi=80)


def run_render_bench(out_dir: str | Path, device: str = "cpu", size: int | tuple[int, int] = VIDEO_SIZE,
                     frames: int = 165, runs: int = 5, warmup: int = 1, batch: int = 32, threads: int | None = None,
                     photo: np.ndarray | None = None) -> dict:
    """Time the warp renderer (median of runs) and write render.json + contact_sheet.png."""
    from talkhead.face.detect import default_photo
    from talkhead.warp.renderer import WarpRenderer

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        t0 = time.perf_counter()
        renderer = WarpRenderer(default_photo() if photo is None else photo, size=size,
                                device=device)
        setup = time.perf_counter() - t0
        motion, _ = scripted_motion(frames)
        times = _time_renders(renderer, motion, runs, warmup, batch)
        used_threads = torch.get_num_threads()
    finally:
        torch.set_num_threads(old_threads)
    med = statistics.median(times)
    h, w = renderer.frame_shape[:2]
    result = {
        "renderer": "warp", "device": device, "width": w, "height": h, "frames": frames,
        "batch": batch, "runs": runs, "warmup": warmup, "threads": used_threads,
        "torch": torch.__version__, "setup_s": round(setup, 4),
        "seconds": [round(t, 5) for t in times], "median_s": round(med, 5),
        "fps": round(frames / med, 2), "ms_per_frame": round(1000 * med / frames, 3),
        "realtime_factor": round(frames / med / FPS, 3),
        "crop_box": list(renderer.box), "contact_sheet": "contact_sheet.png",
    }
    contact_sheet(renderer, out / "contact_sheet.png")
    (out / "render.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
