#!/usr/bin/env python
"""Make corpus/extra, extra2, extra3, extra4 and extra5 again: clips of people talking found in public repositories
(docs/lips.md, 'The clips'). recipes/talking_clips.json gives each file's repository, commit, path (member: inside
a zip there), transform (copy; reencode: MPEG-1 to H.264 + AAC, every frame; shrink_pad: 0.5x onto a 512 px grey
square) and sha256. A file there with that sha256 is skipped; one made with another is said (a copy's: a failure;
a re-encode's, which another PyAV/FFmpeg build can change: a warning). Exit status 2 when any file failed.

Usage:
    python recipes/talking_clips.py --out corpus                          # blobless clones in corpus/_repos
    python recipes/talking_clips.py --out corpus --mirrors /work/.mirror  # MIRRORS/owner+name holds a git dir
    python recipes/talking_clips.py --out corpus --only extra3 extra4
"""
import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

MANIFEST = Path(__file__).with_name("talking_clips.json")
FOLDERS = ("extra", "extra2", "extra3", "extra4", "extra5")
SQUARE, SCALE, GREY = 512, 0.5, 128
# One thread and x264's C code: with its assembly (mbtree) the same input gave other bytes from run to run; the C
# code gives the same bytes every run, whatever the CPU (2.8 s for a 3 s GRID clip on one core).
X264 = {"preset": "medium", "crf": "18", "threads": "1", "x264-params": "asm=0"}


class ClipError(Exception):
    """A missing repository, commit, path or member, or a git failure: said in one line."""


def git(gdir: Path | None, *args: str) -> bytes:
    """Run git (on gdir when given); its stdout, or ClipError with git's last line of complaint."""
    cmd = ["git", *(["--git-dir", str(gdir)] if gdir else []), *args]
    r = subprocess.run(cmd, capture_output=True)
    if r.returncode:
        lines = r.stderr.decode(errors="replace").strip().splitlines()
        raise ClipError(lines[-1] if lines else f"git {args[0]} failed ({r.returncode})")
    return r.stdout


def has_commit(gdir: Path, commit: str) -> bool:
    return subprocess.run(["git", "--git-dir", str(gdir), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0


def find_git_dir(root: Path, depth: int = 3) -> Path | None:
    """The shallowest directory under root (root included) holding HEAD and objects/."""
    level = [root]
    for _ in range(depth + 1):
        for d in level:
            if (d / "HEAD").is_file() and (d / "objects").is_dir():
                return d
        level = sorted(c for d in level for c in d.iterdir() if c.is_dir() and c.name != "objects")
    return None


def repo_dir(repo: str, commit: str, mirrors: Path | None, cache: Path) -> Path:
    """A git directory of repo that holds commit: found under mirrors, else a blobless bare clone in cache."""
    key = repo.replace("/", "+")
    if mirrors is not None:
        gdir = find_git_dir(mirrors / key) if (mirrors / key).is_dir() else None
        if gdir is None:
            raise ClipError(f"{repo}: no git directory under {mirrors / key}")
    else:
        gdir = cache / f"{key}.git"
        if not gdir.is_dir():
            cache.mkdir(parents=True, exist_ok=True)
            git(None, "clone", "--quiet", "--bare", "--filter=blob:none", f"https://github.com/{repo}", str(gdir))
        if not has_commit(gdir, commit):
            git(gdir, "fetch", "--quiet", "--filter=blob:none", "origin", commit)
    if not has_commit(gdir, commit):
        raise ClipError(f"{repo}: commit {commit} not in {gdir}")
    return gdir


def source_bytes(gdir: Path, clip: dict) -> bytes:
    """The committed file's bytes, or the zip member's when the clip names one."""
    try:
        data = git(gdir, "cat-file", "blob", f"{clip['commit']}:{clip['path']}")
    except ClipError as e:
        raise ClipError(f"{clip['repo']} @ {clip['commit'][:7]}: {clip['path']}: {e}") from None
    if "member" not in clip:
        return data
    try:
        return zipfile.ZipFile(io.BytesIO(data)).read(clip["member"])
    except (KeyError, zipfile.BadZipFile) as e:
        raise ClipError(f"{clip['path']}: {clip['member']}: {e}") from None


def picture(frame: av.VideoFrame, n: int, rate: Fraction, pad: bool) -> av.VideoFrame:
    """Frame n to encode: as decoded, or shrunk SCALE x onto a grey SQUARE (sizes and offsets even)."""
    if pad:
        w, h = int(frame.width * SCALE) // 2 * 2, int(frame.height * SCALE) // 2 * 2
        canvas = np.full((SQUARE, SQUARE, 3), GREY, np.uint8)
        y, x = (SQUARE - h) // 4 * 2, (SQUARE - w) // 4 * 2
        canvas[y:y + h, x:x + w] = frame.to_ndarray(format="rgb24", width=w, height=h, interpolation="AREA")
        frame = av.VideoFrame.from_ndarray(canvas, format="rgb24")
    frame.pict_type = av.video.frame.PictureType.NONE  # let x264 choose, not the source's GOP
    frame.pts, frame.time_base = n, 1 / rate
    return frame


def transcode(src: bytes, dst: Path, pad: bool) -> None:
    """An H.264 mp4 of src with every frame; an AAC track is copied as it is, any other encoded to AAC."""
    with av.open(io.BytesIO(src)) as inp, av.open(str(dst), "w", format="mp4") as out:
        vin, ain = inp.streams.video[0], (inp.streams.audio or [None])[0]
        rate = vin.average_rate
        vout = out.add_stream("libx264", rate=rate, options=X264)
        vout.width, vout.height = (SQUARE, SQUARE) if pad else (vin.codec_context.width, vin.codec_context.height)
        vout.pix_fmt = "yuv420p"
        copy = ain is not None and ain.codec_context.name == "aac"
        aout = None if ain is None else out.add_stream_from_template(ain) if copy else \
            out.add_stream("aac", rate=ain.codec_context.sample_rate, layout=ain.codec_context.layout.name)
        n = sent = 0
        for packet in inp.demux(*[s for s in (vin, ain) if s is not None]):
            if packet.stream is vin:
                for frame in packet.decode():
                    out.mux(vout.encode(picture(frame, n, rate, pad)))
                    n += 1
            elif copy:
                if packet.dts is not None:
                    packet.stream = aout
                    out.mux(packet)
            else:
                for frame in packet.decode():
                    frame.pts, frame.time_base = sent, Fraction(1, frame.sample_rate)
                    sent += frame.samples
                    out.mux(aout.encode(frame))
        out.mux(vout.encode(None))
        if aout is not None and not copy:
            out.mux(aout.encode(None))


def make(clip: dict, gdir: Path, dst: Path) -> str:
    """Write one clip atomically; its sha256."""
    data = source_bytes(gdir, clip)
    tmp = dst.with_name(f".{dst.stem}.part{dst.suffix}")
    try:
        if clip["transform"] == "copy":
            tmp.write_bytes(data)
        elif clip["transform"] in ("reencode", "shrink_pad"):
            transcode(data, tmp, pad=clip["transform"] == "shrink_pad")
        else:
            raise ClipError(f"unknown transform {clip['transform']!r}")
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)
    return hashlib.sha256(dst.read_bytes()).hexdigest()


def cached_repo(gdirs: dict, clip: dict, mirrors: Path | None, cache: Path) -> Path:
    """repo_dir once per repository and commit (a failure too, so a clone that failed is not tried again)."""
    key = (clip["repo"], clip["commit"])
    if key not in gdirs:
        try:
            gdirs[key] = repo_dir(clip["repo"], clip["commit"], mirrors, cache)
        except ClipError as e:
            gdirs[key] = e
    if isinstance(gdirs[key], ClipError):
        raise gdirs[key]
    return gdirs[key]


def run(clips: list[dict], out: Path, mirrors: Path | None, cache: Path) -> tuple[list[str], list[str]]:
    """Make each clip, one line each; (failures, warnings)."""
    gdirs: dict[tuple[str, str], Path | ClipError] = {}
    failed, warned = [], []
    for clip in clips:
        dst, want = out / clip["folder"] / clip["name"], clip.get("sha256", "")
        label = f"{clip['folder']}/{clip['name']}"
        if dst.is_file() and want and hashlib.sha256(dst.read_bytes()).hexdigest() == want:
            print(f"ok (there)  {label}")
            continue
        try:
            gdir = cached_repo(gdirs, clip, mirrors, cache)
            dst.parent.mkdir(parents=True, exist_ok=True)
            got = make(clip, gdir, dst)
        except (ClipError, av.FFmpegError, OSError, ValueError) as e:
            print(f"FAILED      {label}: {e}")
            failed.append(f"{label}: {e}")
            continue
        if not want or got == want:
            print(f"made        {label}" + ("" if want else f" (sha256 {got}, none in the manifest)"))
        elif clip["transform"] == "copy":
            print(f"DIFFERS     {label}: sha256 {got}, manifest {want}")
            failed.append(f"{label}: sha256 differs from the manifest")
        else:
            print(f"differs     {label}: sha256 {got}, manifest {want} (re-encoded: another PyAV/FFmpeg build?)")
            warned.append(label)
    return failed, warned


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="the folder that gets extra/, extra2/, ... (corpus)")
    ap.add_argument("--mirrors", type=Path, help="a folder of git mirrors, MIRRORS/owner+name (no network)")
    ap.add_argument("--cache", type=Path, help="where blobless clones go without --mirrors (OUT/_repos)")
    ap.add_argument("--only", nargs="+", choices=FOLDERS, help="make these folders alone")
    ap.add_argument("--manifest", type=Path, default=MANIFEST, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    clips = [c for c in json.loads(a.manifest.read_text())["clips"] if not a.only or c["folder"] in a.only]
    failed, warned = run(clips, a.out, a.mirrors, a.cache or a.out / "_repos")
    print(f"{len(clips) - len(failed)} of {len(clips)} files made or already there")
    if warned:
        print(f"{len(warned)} re-encoded files differ from the manifest's sha256: {', '.join(warned)}")
    for f in failed:
        print(f"failed: {f}")
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
