"""``talkhead data talking``: people filmed talking -> clips of the motion corpus, with real lips.

Each video (its own audio track, or a ``.wav`` of the same name beside it) is read at 25 fps, one frame
at a time; dlib's 68 points are found in every frame and the 58 channels are fitted to them as ``motion
--from-video`` fits them (the first face is the neutral). Per frame it keeps the real inner-lip gap
(over the face width), whether the frame may teach lips (``valid``: a face was found, its lips are in the
picture and nothing covers the mouth, by the mirror cue of ``face.occlusion``), and the speech.

Filmed clips are often a frame or two out of sync. As a sync checker does, each clip's lag is found
within +-``max_offset`` frames: where lips made from its speech (a shipped motion model's, drawn on the
clip's own fitted face) best follow the filmed lips. That lag holds any habit of the model's too (lips
late or early against real ones), which every clip shares: so the clip's offset is its lag less the
median lag of the corpus (on ../shared/data/talking the median was 0: the clips with a separate .wav
lag 0 but one (+2); those with AAC in the file -2 to +4). The audio is shifted by it (``<id>/audio``, what training reads) and the lag, the offset and the correlations
are recorded; the audio as filmed is kept beside it (``<id>/audio_filmed``, what a benchmark that does
its own lag search reads). The lag searched depends on the shipped model and lip net of the day, so the lags
used are written to ``lags.json`` and ``--lags`` takes them back: a corpus made again from the same videos then
holds the same audio as the one a model learnt from (``recipes/talking_lags.json``).

A clip is one shard ``shards/<content hash>.npz``, written atomically, so a killed run resumes after the
last finished video, and a renamed copy of a video is not ingested twice. Each row names the person
(``people``: a file stem -> person map; by default the stem) and ``split``: "train", or "measure" for
people whose clips may be measured but not learnt from (``measure_only``).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.config import FPS, HOP, LIPS_MODEL, option
from talkhead.errors import InputError
from talkhead.util import atomic_write, clear_stale_parts, file_sha256


@dataclass(frozen=True)
class TalkingConfig:
    """How real talking video becomes corpus clips."""

    max_offset: int = option(8, "audio/video offset searched, frames each way")
    # Whose speech-driven lips find the offset: the model wearing its shipped lip net, which follows filmed lips at
    # r ~0.7 where the model alone reaches ~0.4 and misplaced short clips by up to 9 frames (docs/lips.md, extra4).
    offset_model: str = LIPS_MODEL
    min_frames: int = 50  # fewer valid frames than this: the video is skipped (2 s)
    occlusion: bool = option(True, "mark frames where something covers the mouth (one more dlib call a frame; "
                                   "--no-occlusion: faster)")
    # The lag taken as in sync is the corpus's median unless fixed: clips added later then move no earlier clip's
    # audio (docs/lips.md, corpus/extra4, whose lags would have moved the median from 0 to 1).
    sync_lag: int | None = option(None, "the speech-driven lips' lag (frames) taken as in sync; each clip's audio "
                                        "is shifted by its own lag less this (default: the corpus's median lag)")


def gap_of_points(points: np.ndarray) -> np.ndarray:
    """Inner-lip opening over face width for landmarks [T, 68, 2] -> [T] (dlib's inner lips, 61-63 / 65-67)."""
    p = np.asarray(points, np.float32)
    gap = np.abs(p[:, [65, 66, 67], 1] - p[:, [63, 62, 61], 1]).mean(1)
    return gap / np.maximum(1.0, np.linalg.norm(p[:, 16] - p[:, 0], axis=1))


def motion_gap(neutral: np.ndarray, motion: np.ndarray) -> np.ndarray:
    """The inner-lip gap [T] that the warp renderer's geometry draws for ``motion`` [T, 58] on the face whose
    neutral landmarks are ``neutral`` [68, 2]."""
    from talkhead.face.template import fit_rig, project

    return gap_of_points(project(fit_rig(neutral), motion).numpy())


def lagged_r(real: np.ndarray, pred: np.ndarray, valid: np.ndarray | None = None,
             max_lag: int = 8) -> tuple[int, float, float]:
    """(best lag, r at it, r at lag 0): Pearson r of real[t] against pred[t + lag] over valid frames,
    for lags within +-``max_lag``. A positive lag means ``pred`` comes late."""
    from talkhead.metrics import pearson

    n = min(len(real), len(pred))
    real, pred = np.asarray(real[:n], np.float64), np.asarray(pred[:n], np.float64)
    ok = np.ones(n, bool) if valid is None else np.asarray(valid[:n], bool)
    rs = {}
    for lag in range(-max_lag, max_lag + 1):
        t = np.arange(max(0, -lag), min(n, n - lag))
        t = t[ok[t]]
        rs[lag] = pearson(real[t], pred[t + lag]) if len(t) > 2 else 0.0
    best = max(rs, key=lambda k: (rs[k], -abs(k)))
    return best, rs[best], rs[0]


def loudness(wav: np.ndarray, frames: int) -> np.ndarray:
    """RMS level in dB per 40 ms frame [frames]: the baseline that reads loudness as lip opening."""
    w = np.zeros(frames * HOP, np.float32)
    w[: min(len(wav), len(w))] = wav[: len(w)]
    rms = np.sqrt((w.reshape(frames, HOP) ** 2).mean(1) + 1e-10)
    return 20 * np.log10(rms)


def shift_audio(wav: np.ndarray, lag: int) -> np.ndarray:
    """The audio moved ``lag`` frames earlier (later for a negative lag, silence in front)."""
    if lag >= 0:
        return wav[lag * HOP:].copy()
    return np.concatenate([np.zeros(-lag * HOP, wav.dtype), wav])


def track(path: Path, occlusion: bool = True, progress: bool = False) -> dict:
    """Landmarks of the followed face, frame by frame, streamed: {"points" [F, 68, 2] for the frames that
    have a face, "found" [F] their numbers, "covered" [F] bool, "frames", "size" (width, height)}."""
    from tqdm import tqdm

    from talkhead.face.capture import follow
    from talkhead.face.detect import detect_faces
    from talkhead.face.occlusion import lips_outside, mirror_gap, occluded
    from talkhead.video import frame_estimate, iter_frames

    pts, found, boxes, mirror, last, size, n = [], [], [], [], None, None, 0
    bar = tqdm(total=frame_estimate(path, FPS), unit="frame", desc=path.name[:24], disable=not progress)
    for n, frame in enumerate(iter_frames(path, FPS), 1):
        size = size or (frame.shape[1], frame.shape[0])
        faces = detect_faces(frame, f"{path.name} frame {n - 1}")
        if faces:
            last = follow(faces, last)
            pts.append(last.landmarks)
            found.append(n - 1)
            boxes.append(last.box)
            if occlusion:  # the mirror cue needs the frame itself: taken now, so no frame is kept
                mirror.append(mirror_gap(frame, last.landmarks, last.box))
        bar.update(1)
    bar.close()
    points = np.asarray(pts, np.float32).reshape(-1, 68, 2)
    covered = lips_outside(points, size) if len(points) else np.zeros(0, bool)
    if occlusion and len(points):
        covered |= occluded(np.asarray(mirror, np.float32), found)
    return {"points": points, "found": np.asarray(found, int), "covered": covered, "frames": n, "size": size}


def speech_of(path: Path) -> np.ndarray:
    """The clip's speech at 16 kHz: a ``.wav`` of the same name beside it, else its own audio track."""
    from talkhead.audio.io import load_audio

    beside = path.with_suffix(".wav")
    return load_audio(beside if beside.is_file() else path)


def talking_clip(path: Path, cfg: TalkingConfig, model, say: Callable[[str], None] = print,
                 progress: bool = False) -> tuple[dict, dict[str, np.ndarray]]:
    """One video -> (row, arrays): motion [T, 58], valid [T], gap [T], audio and audio_filmed (int16)."""
    from talkhead.face.capture import fit_motion
    from talkhead.motion.stream import MotionConfig, motion_from_audio

    wav = speech_of(path)
    got = track(path, cfg.occlusion, progress)
    n, found = got["frames"], got["found"]
    valid = np.zeros(n, bool)
    valid[found[~got["covered"]]] = True
    if valid.sum() < cfg.min_frames:
        raise InputError(f"{path.name}: a face with visible lips in {int(valid.sum())} of {n} frames "
                         f"(need {cfg.min_frames})")
    fitted = fit_motion(got["points"])
    idx = np.arange(n)
    motion = np.stack([np.interp(idx, found, fitted[:, c]) for c in range(fitted.shape[1])], 1).astype(np.float32)
    gap = np.interp(idx, found, gap_of_points(got["points"])).astype(np.float32)
    speech_gap = motion_gap(got["points"][0], motion_from_audio(model, wav, MotionConfig(seed=0)))
    lag, r, r0 = lagged_r(gap, speech_gap, valid, cfg.max_offset)
    pcm = lambda w: np.round(np.clip(w, -1, 1) * 32767).astype(np.int16)  # noqa: E731
    row = {"frames": n, "duration": round(n / FPS, 3), "speech_lag": lag, "offset_frames": 0, "lag_r": round(r, 4),
           "r_at_zero": round(r0, 4), "valid_share": round(float(valid.mean()), 4),
           "covered_frames": int(got["covered"].sum()), "lost_frames": int(n - len(found)),
           "size": list(got["size"]), "neutral": got["points"][0].round(2).tolist()}
    say(f"{path.name}: {n} frames, lips valid in {valid.mean():.0%}, speech-driven lips best {lag:+d} frames "
        f"late (r {r0:.2f} -> {r:.2f})")
    filmed = pcm(wav[: n * HOP])
    arrays = {"motion": motion, "valid": valid, "gap": gap, "audio": filmed, "audio_filmed": filmed}
    return row, arrays


def clip_id(path: Path) -> str:
    """A corpus id from a file name: letters, digits, '-' and '_' only."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in path.stem)


def ingest(videos: list[str | Path], out: str | Path, cfg: TalkingConfig = TalkingConfig(),
           people: dict[str, str] | None = None, measure_only: tuple[str, ...] = (),
           say: Callable[[str], None] = print, progress: Callable[[int, int], None] | None = None,
           frame_bar: bool = False, lags: dict[str, int] | None = None) -> dict:
    """Every video as a clip in the corpus ``out`` (made or resumed); returns the report {kept, skipped}.

    ``measure_only``: file-name prefixes whose clips are marked split "measure" (never trained on).
    ``lags``: {clip id: lag} taken instead of the lags searched (``read_lags``), so a corpus made again holds the
    audio of the one a model learnt from; ``OUT/lags.json`` records the lags used, in the form it reads."""
    from talkhead.motion.model import load_model

    paths = video_files(videos)
    out = Path(out)
    (out / "shards").mkdir(parents=True, exist_ok=True)
    clear_stale_parts(out / "shards")
    people, rows, skipped, model, seen, fresh = people or {}, [], [], None, {}, []
    for i, p in enumerate(paths):
        shard = out / "shards" / f"{file_sha256(p)[:16]}.npz"
        try:
            if shard.name in seen:  # videos are known by content: a copy under another name is one clip
                raise InputError(f"the same video as {seen[shard.name]}")
            seen[shard.name] = p.name
            if not shard.exists():
                model = model or load_model(cfg.offset_model)
                row, arrays = talking_clip(p, cfg, model, say, frame_bar)
                _write(shard, clip_id(p), row, arrays)
                fresh.append(clip_id(p))  # a clip made again (another video under its name): its old features go
            row = _read_row(shard)
            row.update(person=people.get(p.stem, p.stem), file=p.name,
                       split="measure" if p.name.startswith(tuple(measure_only)) else "train")
            row["voice"] = row["person"]
            rows.append(row)
        except InputError as e:
            skipped.append({"file": p.name, "why": str(e)})
            say(f"skipped {p.name}: {e}")
        if progress is not None:
            progress(i + 1, len(paths))
    if not rows:
        raise InputError(f"none of the {len(paths)} videos could be used: " + "; ".join(s["why"] for s in skipped))
    forget_cached(out / "cache", fresh + align_offsets(out, rows, cfg.sync_lag, lags))  # each cache rewritten once
    atomic_write(out / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    atomic_write(out / "lags.json", json.dumps({"sync_lag": rows[0]["median_lag"], "lags": {
        r["id"]: r["speech_lag"] for r in sorted(rows, key=lambda r: r["id"])}}, indent=1).encode())
    report = {"config": asdict(cfg), "kept": [r["file"] for r in rows], "skipped": skipped,
              "lags_unused": sorted(set(lags or {}) - {r["id"] for r in rows})}  # a misspelt id shows here
    atomic_write(out / "report.json", json.dumps(report, indent=1).encode())
    return report


def align_offsets(out: Path, rows: list[dict], sync_lag: int | None = None,
                  lags: dict[str, int] | None = None) -> list[str]:
    """Each clip's offset: its lag (``lags``' if given, else the one searched, kept as ``found_lag``) less
    ``sync_lag`` (default: the corpus' median lag); shards whose row changed are written again (atomically), the
    rows updated. Returns the ids whose audio moved, whose cached features are stale."""
    moved = []
    found = [r.get("found_lag", r.get("speech_lag", r["offset_frames"])) for r in rows]
    used = [int((lags or {}).get(r["id"], f)) for r, f in zip(rows, found)]
    median = int(round(float(np.median(used)))) if sync_lag is None else sync_lag
    for r, lag, f in zip(rows, used, found):
        offset = lag - median
        now = dict(speech_lag=lag, found_lag=f, offset_frames=offset, median_lag=median)
        if all(r.get(k) == v for k, v in now.items()):
            continue
        shard = out / r["shard"]
        with np.load(shard) as z:
            arrays = {k.split("/", 1)[1]: z[k] for k in z.files if k != "rows"}
        filmed = arrays["audio_filmed"]
        arrays["audio"] = shift_audio(filmed, offset)[: len(filmed)]
        keep = {k: v for k, v in r.items() if k not in ("person", "file", "split", "voice", "shard", "id")}
        keep.update(now)
        if "offset_r" in keep:  # written before the median was taken out
            keep["lag_r"] = keep.pop("offset_r")
        _write(shard, r["id"], keep, arrays)
        if offset != r["offset_frames"] or "speech_lag" not in r:
            moved.append(r["id"])
        r.update(now)
    return moved


def read_lags(path: str | Path, max_lag: int = 25) -> dict[str, int]:
    """A lags file (a corpus's ``lags.json``: {"lags": {clip id: frames}}) -> {clip id: lag}."""
    try:
        lags = json.loads(Path(path).read_text())["lags"]
        out = {str(k): int(v) for k, v in lags.items() if float(v) == int(v)}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise InputError(f"cannot read the lags file {path}: {e}") from None
    bad = [k for k in lags if k not in out or abs(out[k]) > max_lag]
    if bad:
        raise InputError(f"the lags file {path}: {', '.join(bad[:5])}: a lag must be whole frames within "
                         f"+-{max_lag}")
    return out


def forget_cached(cache: Path, ids: list[str]) -> None:
    """Drop the clips ``ids`` from every feature cache in ``cache`` (features of their audio as it was shifted
    before); other clips' features stay, as a live view's take minutes to compute."""
    for path in sorted(cache.glob("*.npz")) if ids else []:
        with np.load(path) as z:
            kept = {k: z[k] for k in z.files if k not in ids}
            if len(kept) == len(z.files):
                continue
        buf = io.BytesIO()
        np.savez(buf, **kept)
        atomic_write(path, buf.getvalue())


def video_files(videos: list[str | Path]) -> list[Path]:
    """The videos given, folders read for their video files (sorted); none, or a missing one, is an InputError."""
    from talkhead.video import VIDEO_SUFFIXES

    paths: list[Path] = []
    for v in map(Path, videos):
        if v.is_dir():
            paths += sorted(p for p in v.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
        elif v.is_file():
            paths.append(v)
        else:
            raise InputError(f"no such video or folder: {v}")
    if not paths:
        raise InputError("no videos given (" + ", ".join(sorted(VIDEO_SUFFIXES)) + ")")
    return paths


def _write(shard: Path, cid: str, row: dict, arrays: dict[str, np.ndarray]) -> None:
    row = {"id": cid, **row, "shard": f"shards/{shard.name}"}
    buf = io.BytesIO()
    np.savez(buf, rows=np.frombuffer(json.dumps([row]).encode(), np.uint8),
             **{f"{cid}/{k}": v for k, v in arrays.items()})
    atomic_write(shard, buf.getvalue())


def _read_row(shard: Path) -> dict:
    with np.load(shard) as z:
        return json.loads(z["rows"].tobytes().decode())[0]


def clip_arrays(corpus: str | Path, row: dict) -> dict[str, np.ndarray]:
    """A clip's arrays by name (motion, valid, gap, audio, audio_filmed)."""
    with np.load(Path(corpus) / row["shard"]) as z:
        return {k.split("/", 1)[1]: z[k] for k in z.files if k.startswith(row["id"] + "/")}


def load_people(path: str | Path | None) -> tuple[dict[str, str], tuple[str, ...]]:
    """A people file: {"people": {file stem: person}, "measure_only": [file-name prefixes]}."""
    if path is None:
        return {}, ()
    try:
        spec = json.loads(Path(path).read_text())
        return dict(spec.get("people", {})), tuple(spec.get("measure_only", ()))
    except (OSError, ValueError, AttributeError) as e:
        raise InputError(f"cannot read the people file {path}: {e}") from None

