"""What a user waits for: ``talkhead generate --audio CLIP -o x.mp4`` timed as a whole process.

Start-up included (imports, model and front-end loading, face registration), on the 6.6 s benchmark
clip (165 frames, spoken by the TTS and written to a WAV first). Two cases: a photo seen before (its
registration cached) and a new one (an empty cache each run). Runs alternate between the cases, so
machine noise falls on both alike; the medians and their ratio are what to compare.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from talkhead.config import DEFAULT_VOICE, HOP
from talkhead.util import atomic_write


def _clip(path: Path) -> Path:
    from talkhead.audio.io import write_wav
    from talkhead.audio.tts import synthesize
    from talkhead.bench.e2e import CLIP_FRAMES, TEXT

    wav = synthesize(TEXT, DEFAULT_VOICE).wav
    write_wav(path, np.pad(wav, (0, max(0, CLIP_FRAMES * HOP - len(wav))))[: CLIP_FRAMES * HOP], 16_000)
    return path


def _run(args: list[str], cache: str, source: str | None = None) -> float:
    env = {**os.environ, "TALKHEAD_CACHE": cache}
    if source is not None:  # another checkout's package, ahead of this one's
        env["PYTHONPATH"] = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "talkhead.cli", *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - t


def run_startup_bench(out: str | Path, runs: int = 5, model: str | None = None, image: str | None = None,
                      against: str | None = None, avatar: str | None = None) -> dict:
    """Median whole-process seconds over ``runs`` per case; writes startup.json and startup.png. ``against``:
    another checkout's ``src`` folder, whose seen-photo case runs between these (the same machine's noise on both),
    reported as ``against_seen_photo_s`` and the ratio of the two medians. ``avatar``: an ``.avatar`` file drawn
    instead of a photo (``generate --avatar``; one case, reported as the seen photo's: it registers no photo)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        clip = _clip(Path(d) / "clip.wav")
        args = ["generate", "--audio", str(clip), "-o", str(Path(d) / "x.mp4"), "--quiet"]
        args += ["--model", model] if model else []
        args += ["--image", image] if image else []
        args += ["--avatar", str(avatar)] if avatar else []
        seen_cache = str(Path(d) / "cache")
        _run(args, seen_cache)  # registers the photo (and warms the OS file cache for both cases)
        seen, new, other = [], [], []
        if against is not None:
            _run(args, seen_cache, against)
        for i in range(runs):
            seen.append(_run(args, seen_cache))
            if avatar is None:
                new.append(_run(args, str(Path(d) / f"fresh{i}")))
            if against is not None:
                other.append(_run(args, seen_cache, against))
    result = {"clip_s": 6.6, "runs": runs, "model": model or "default", "image": image or "astronaut",
              "avatar": None if avatar is None else Path(avatar).name,
              "seen_photo_s": round(float(np.median(seen)), 3),
              "new_photo_s": round(float(np.median(new)), 3) if new else None,
              "seen_runs_s": [round(v, 3) for v in seen], "new_runs_s": [round(v, 3) for v in new],
              "cpu_count": os.cpu_count()}
    if against is not None:
        result.update(against=str(against), against_seen_photo_s=round(float(np.median(other)), 3),
                      against_seen_runs_s=[round(v, 3) for v in other],
                      seen_ratio_to_against=round(float(np.median(seen) / np.median(other)), 3))
    atomic_write(out / "startup.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "startup.png")
    return result


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((5, 2.6))
    for y, key in enumerate(("seen_runs_s", "new_runs_s")):
        if not result[key]:  # an avatar: no new photo
            continue
        ax.scatter(result[key], [y] * len(result[key]), color="#4c72b0", s=14)
        ax.plot([np.median(result[key])] * 2, [y - 0.3, y + 0.3], color="k")
    ax.set_yticks([0, 1], ["avatar" if result["avatar"] else "photo seen before", "new photo"])
    ax.set_xlabel("seconds, whole process, 6.6 s clip")
    fig.tight_layout()
    save_figure(fig, path)
