"""``talkhead bench lips``: lips made from speech against people's real lips, filmed with that speech.

For each real talking clip (ingested by ``data talking`` into ``OUT/corpus``, resumable), the inner-lip gap
over face width of the real frames (dlib) is compared with the gap of lips driven by the clip's own
recording (the audio as filmed), as Pearson r at the best lag within +-``max_lag`` frames, over frames
whose lips are visible (a live student hears the recording as a live session does). The speech-driven gap
is the warp renderer's geometry: the motion drawn on the
rig fitted to the clip's own first face (``motion.data.talking.motion_gap``); ``render`` adds models measured on
warp-rendered frames, re-detected by dlib, as a viewer sees them. Beside them, the capture ceiling (the
motion fitted to the real frames, drawn the same way) and the loudness baseline (the audio's level as lips).

Evaluation is by person: a model trained on real clips is scored only on people it never learnt from.
``folds`` ({"folds": [[person, ...], ...]}) and ``fold_model`` (a path with ``{fold}`` and ``{name}``) name,
for each fold, the model trained without its people; each fold's people are scored with it. Shipped
models (trained on synthetic speech only) score every clip. People are summarised by the mean of their
clips' r, and a model by the mean and the lowest over people.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.config import HOP, option
from talkhead.errors import InputError
from talkhead.motion.data.talking import clip_arrays, lagged_r, loudness, motion_gap
from talkhead.util import atomic_write


@dataclass(frozen=True)
class LipsBenchConfig:
    models: tuple[str, ...] = option(("student-4-whisper", "student-1-whisper", "student-1-whisper-live",
                                      "teacher-whisper"), "models scored on every person they never learnt from "
                                                          "(comma-separated)")
    fold_names: tuple[str, ...] = option((), "models trained once per fold, scored on their fold's people "
                                             "(comma-separated names)")
    fold_model: str = option("runs/lips/fold{fold}/{name}.safetensors", "where fold {fold}'s model {name} is")
    folds: str | None = option(None, "JSON {\"folds\": [[person, ...], ...]} (recipes/lips_folds.json)")
    render: tuple[str, ...] = option((), "also measure on re-detected warp frames: 'capture' and/or model names "
                                         "(comma-separated)")
    render_size: int = 256
    max_lag: int = option(8, "lag searched, frames each way")
    seed: int = 0


def load_folds(path: str | Path | None) -> list[list[str]]:
    """The folds file: {"folds": [[person, ...], ...]}."""
    if path is None:
        return []
    try:
        folds = json.loads(Path(path).read_text())["folds"]
        return [[str(p) for p in f] for f in folds]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"cannot read the folds file {path}: {e}") from None


def score_clip(corpus: Path, row: dict, drives: dict, cfg: LipsBenchConfig) -> dict:
    """One clip's r (and lag) for the capture ceiling, the loudness baseline and each motion in ``drives``."""
    from talkhead.face.template import fit_rig
    from talkhead.motion.model import on_face

    a = clip_arrays(corpus, row)
    real, valid, neutral = a["gap"], a["valid"], np.asarray(row["neutral"], np.float32)
    wav = a["audio_filmed"].astype(np.float32) / 32767

    def scored(pred: np.ndarray, gap: bool = True) -> dict:
        lag, r, r0 = lagged_r(real, pred, valid, cfg.max_lag)
        out = {"r": round(r, 4), "lag": lag, "r_at_zero": round(r0, 4)}
        if gap:  # how far it opens and closes against the real lips (the same units: a lip gap over face width)
            ok = np.asarray(valid[:len(pred)], bool)
            out["spread"] = round(float(np.std(pred[:len(ok)][ok]) / max(1e-9, float(np.std(real[:len(ok)][ok])))), 3)
        return out

    out = {"id": row["id"], "person": row["person"], "split": row["split"], "frames": row["frames"],
           "valid_share": row["valid_share"], "offset_frames": row.get("offset_frames"),
           "capture": scored(motion_gap(neutral, a["motion"])), "loudness": scored(loudness(wav, len(real)), gap=False)}
    face = fit_rig(neutral)  # the lips are solved on the face they are drawn on, as generate does (on_face)
    for name, model in drives.items():
        motion = speech_motion(on_face(model, face), wav, cfg.seed)
        out[name] = scored(motion_gap(neutral, motion))
        if name in cfg.render:
            out[f"{name} (warp frames)"] = scored(rendered_gap(row, motion, cfg.render_size))
    if "capture" in cfg.render:
        out["capture (warp frames)"] = scored(rendered_gap(row, a["motion"], cfg.render_size))
    return out


def speech_motion(model, wav: np.ndarray, seed: int) -> np.ndarray:
    """The motion a model makes of ``wav`` as it is used: offline, or for a live student, as a live session
    hears the speech (40 ms chunks, its own feature blocks and look-ahead)."""
    from talkhead.motion.stream import MotionConfig, motion_from_audio

    if "live" not in model.meta:
        return motion_from_audio(model, wav, MotionConfig(seed=seed))
    from talkhead.serve.session import live_hearing

    return motion_from_audio(model, wav, MotionConfig(seed=seed), chunk=HOP, hearing=live_hearing(model))


def rendered_gap(row: dict, motion: np.ndarray, size: int) -> np.ndarray:
    """The lip gap re-detected by dlib in the warp renderer's frames of ``motion`` on the clip's first frame."""
    from talkhead.face.identity import lip_gap
    from talkhead.render import make_renderer

    renderer = make_renderer("warp", first_frame(row), size, photo_name=row["file"])
    gaps = []
    for start in range(0, len(motion), 64):
        gaps += [lip_gap(f) for f in renderer.frames(motion[start:start + 64])]
    g = np.array([np.nan if v is None else v for v in gaps], np.float64)
    ok = np.isfinite(g)
    return np.interp(np.arange(len(g)), np.flatnonzero(ok), g[ok]) if ok.any() else np.zeros(len(g))


def first_frame(row: dict) -> np.ndarray:
    from talkhead.video import iter_frames

    return next(iter(iter_frames(row["path"])))


def learnt_from(model) -> set[str]:
    """The people whose real lips a model (or the lip net it wears) learnt from (none for a model trained on
    synthetic speech)."""
    head = (model.lips.meta or {}).get("train", {}) if model.lips is not None else {}
    return set(model.meta.get("lips", {}).get("people", [])) | set(head.get("people", []))


def _drives(names: tuple[str, ...]) -> dict:
    from talkhead.motion.model import load

    return {n: load(n) for n in names}


def run_lips_bench(videos: list[str | Path], out: str | Path, cfg: LipsBenchConfig = LipsBenchConfig(),
                   people_file: str | Path | None = None, corpus: str | Path | None = None,
                   progress: bool = True) -> dict:
    """Ingest (or reuse) the clips, score every clip, summarise by person; writes lips.json, lips.png, lips_sheet.png."""
    from tqdm import tqdm

    from talkhead.motion.data.corpus import load_manifest
    from talkhead.motion.data.talking import ingest, load_people, video_files

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    corpus = Path(corpus) if corpus else out / "corpus"
    people, measure_only = load_people(people_file)
    ingest(videos, corpus, people=people, measure_only=measure_only, say=lambda m: tqdm.write(m))
    rows = load_manifest(corpus)
    paths = {p.name: p for p in video_files(videos)}
    for r in rows:
        r["path"] = paths.get(r["file"])
    folds = load_folds(cfg.folds)
    fold_of = {p: k for k, f in enumerate(folds) for p in f}
    t0 = time.perf_counter()
    shipped = _drives(cfg.models)
    by_fold = {k: _drives(tuple(cfg.fold_model.format(fold=k, name=n) for n in cfg.fold_names)) for k in set(fold_of.values())}
    clips = []
    for r in tqdm(rows, desc="clips", unit="clip", disable=not progress):
        drives = {n: m for n, m in shipped.items() if r["person"] not in learnt_from(m)}
        if r["person"] in fold_of:  # this person's fold model, never trained on them
            k = fold_of[r["person"]]
            drives.update({f"{n} (folds)": m for n, m in zip(cfg.fold_names, by_fold[k].values())})
        clips.append(score_clip(corpus, r, drives, cfg))
    result = {"config": asdict(cfg), "corpus": str(corpus), "folds": folds, "clips": clips,
              "summary": summarise(clips), "seconds": round(time.perf_counter() - t0, 1),
              "date": time.strftime("%Y-%m-%d %H:%M")}
    atomic_write(out / "lips.json", json.dumps(result, indent=1).encode())
    from talkhead.bench.lips_plots import plot_summary, sheet

    plot_summary(result, out / "lips.png")
    sheet(corpus, rows, out / "lips_sheet.png", shipped.get(cfg.models[0]) if cfg.models else None)
    return result


def summarise(clips: list[dict]) -> dict:
    """Per measure: each person's mean r over their clips, and the mean and lowest over people; with the
    opening's spread against the real lips (``score_clip``), its mean over people too."""
    measures = sorted({k for c in clips for k, v in c.items() if isinstance(v, dict) and "r" in v})
    out = {}
    for m in measures:
        per: dict[str, list[float]] = {}
        spread: dict[str, list[float]] = {}
        for c in clips:
            if m in c:
                per.setdefault(c["person"], []).append(c[m]["r"])
                if "spread" in c[m]:
                    spread.setdefault(c["person"], []).append(c[m]["spread"])
        people = {p: round(float(np.mean(v)), 4) for p, v in sorted(per.items())}
        vals = list(people.values())
        out[m] = {"mean": round(float(np.mean(vals)), 4), "min": round(float(np.min(vals)), 4),
                  "people": people, "clips": sum(len(v) for v in per.values())}
        if spread:
            out[m]["spread"] = round(float(np.mean([np.mean(v) for v in spread.values()])), 3)
    return out
