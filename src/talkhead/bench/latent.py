"""``talkhead bench latent``: the latent face engine measured as TempoSyncDiff's Tables 1 and 2, and beside the warp renderer.

Quality (held-out identities, their corpus motion): PSNR against the VAE's reconstruction of the
true crop (the paper's reference) and against the crop itself; temporal L1, the mean absolute
error of adjacent-frame differences against the reconstruction's; flicker, the mean absolute
second temporal difference of the frames (jitter); dlib descriptor distance to the reference
photo; lip sync as r between the re-detected inner-lip gap and the motion's jawOpen. Speed (Table
2): ms per 128 px frame over batches of 32 on the given threads, mean and p95, by steps, torch and
onnxruntime, E1 (sample + decode) and E2 (sample only), cadence strides, and the warp renderer.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from talkhead.config import option
from talkhead.face.identity import identity_distance, lip_gap
from talkhead.latent.data import load_faces
from talkhead.latent.engine import LatentEngine, load_engine
from talkhead.metrics import pearson, psnr_db
from talkhead.rig.spec import SPEC


@dataclass(frozen=True)
class LatentBenchConfig:
    faces: str = option("corpus/faces", "face crops with held-out identities (talkhead data faces)")
    engines: tuple[str, ...] = option(("latent-teacher", "latent-student-4", "latent-student-2", "latent-student-1"),
                                      "engine names or checkpoints", nargs="+")
    clips_per_identity: int = option(2, "clips per identity", flag="--clips")
    frames: int = option(100, "frames per clip")
    threads: int = option(2, "torch CPU threads")
    runs: int = option(7, "timed runs")
    batch: int = 32
    steps: tuple[int, ...] = (1, 2, 4, 8)
    onnx: bool = option(True, "also time the ONNX export (--no-onnx: torch only)")
    seed: int = 0
    beside: str = option("latent-student-4", "engine timed at 512 px beside the warp renderer, with cadence")


def _clips(cfg: LatentBenchConfig, split: str) -> list[dict]:
    out, seen = [], {}
    for c in load_faces(cfg.faces, split):
        name = c["row"]["photo_name"]
        if seen.get(name, 0) < cfg.clips_per_identity:
            seen[name] = seen.get(name, 0) + 1
            out.append({**c, "frames": c["frames"][:cfg.frames], "motion": c["motion"][:cfg.frames]})
    return out


def _generate(engine: LatentEngine, clip: dict, seed: int, timesteps: list[int] | None = None) -> np.ndarray:
    anchor = engine.anchor(clip["reference"])
    ref = anchor["latent"]
    noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed))
    m = torch.from_numpy(clip["motion"].astype(np.float32))
    out = [engine.decode(engine.sample(ref, m[i:i + 32], noise.expand(len(m[i:i + 32]), -1, -1, -1), timesteps,
                                       engine.maps(anchor, m[i:i + 32])))
           for i in range(0, len(m), 32)]
    return np.concatenate(out)


def _noisy_decode(engine: LatentEngine, clip: dict, t: int = 100) -> np.ndarray:
    z = torch.cat([engine.encode(clip["frames"][i:i + 64]) for i in range(0, len(clip["frames"]), 64)])
    noise = torch.randn(z.shape, generator=torch.Generator().manual_seed(1))
    return engine.decode(engine.schedule.add_noise(z, noise, torch.full((len(z),), t)).float())


def frame_metrics(gen: np.ndarray, recon: np.ndarray, truth: np.ndarray) -> dict:
    """PSNR (dB) against the reconstruction and the truth, temporal L1 and flicker, in [0, 1] units."""
    g, r, x = (a.astype(np.float64) / 255 for a in (gen, recon, truth))

    def psnr(a, b):
        return float(np.mean(psnr_db(((a - b) ** 2).mean(axis=(1, 2, 3)), peak=1.0)))

    return {"psnr_vs_recon_db": psnr(g, r), "psnr_vs_truth_db": psnr(g, x),
            "temporal_l1": float(np.abs(np.diff(g, axis=0) - np.diff(r, axis=0)).mean()),
            "flicker": float(np.abs(np.diff(g, n=2, axis=0)).mean())}


def lipsync(frames: np.ndarray, motion: np.ndarray) -> dict:
    """r between the re-detected lip gap and jawOpen, and the share of frames where a face was found."""
    gaps = [lip_gap(f) for f in frames]
    ok = [i for i, v in enumerate(gaps) if v is not None]
    g, jaw = np.array([gaps[i] for i in ok]), motion[ok, SPEC["jawOpen"]]
    r = pearson(g, jaw) if len(ok) > 2 else None
    # The lips' opening where the jaw is most open against where it is most closed (bilabials among them).
    order = np.argsort(jaw)
    tenth = max(1, len(ok) // 10)
    return {"r_jawopen": r, "found": len(ok) / max(1, len(frames)),
            "gap_open": float(g[order[-tenth:]].mean()) if len(ok) else None,
            "gap_closed": float(g[order[:tenth]].mean()) if len(ok) else None}


def _mean_rows(rows: list[dict]) -> dict:
    keys = rows[0].keys()
    return {k: (round(float(np.mean([r[k] for r in rows if r[k] is not None])), 5)
                if any(r[k] is not None for r in rows) else None) for k in keys}


def quality(engines: dict[str, LatentEngine], clips: list[dict], cfg: LatentBenchConfig) -> dict:
    """Table 1 per engine (and the noisy-decode and truth rows), averaged over clips."""
    any_engine = next(iter(engines.values()))
    rows: dict[str, list[dict]] = {}
    for clip in clips:
        recon = _generate_recon(any_engine, clip)
        variants = {"noisy decode (t=100)": _noisy_decode(any_engine, clip), "VAE reconstruction": recon,
                    "warp renderer (the crops)": clip["frames"]}
        variants.update({name: _generate(e, clip, cfg.seed) for name, e in engines.items()})
        for name, frames in variants.items():
            row = frame_metrics(frames, recon, clip["frames"])
            row.update({f"identity_{k}": v for k, v in identity_distance(clip["reference"], frames[::10]).items()})
            row.update({f"lipsync_{k}": v for k, v in lipsync(frames[::2], clip["motion"][::2]).items()})
            rows.setdefault(name, []).append(row)
    return {name: _mean_rows(r) for name, r in rows.items()}


def _generate_recon(engine: LatentEngine, clip: dict) -> np.ndarray:
    f = clip["frames"]
    return np.concatenate([engine.decode(engine.encode(f[i:i + 64])) for i in range(0, len(f), 64)])


def _time(fn, runs: int, frames: int) -> dict:
    fn()  # warm-up
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t) * 1000 / frames)
    return {"ms_per_frame": round(float(np.mean(ms)), 3), "p95_ms": round(float(np.percentile(ms, 95)), 3),
            "fps": round(1000 / float(np.mean(ms)), 1)}


def speed(engines: dict[str, LatentEngine], clip: dict, cfg: LatentBenchConfig, onnx_dirs: dict) -> dict:
    """Table 2: ms per frame by engine and steps, torch and onnxruntime, E1 (decode too) and E2 (latents only)."""
    out = {}
    m = torch.from_numpy(clip["motion"][:cfg.batch].astype(np.float32))
    for name, eng in engines.items():
        anchor = eng.anchor(clip["reference"])
        ref = anchor["latent"]
        noise = torch.zeros(ref.shape).expand(len(m), -1, -1, -1)
        runtimes = {"torch": eng}
        if name in onnx_dirs:
            from talkhead.latent.onnx import OnnxEngine

            runtimes["onnxruntime"] = OnnxEngine(onnx_dirs[name], eng, cfg.threads)
        step_lists = {len(eng.timesteps): eng.timesteps}
        if eng.meta.get("train", {}).get("objective") == "teacher":  # the teacher at any steps
            step_lists = {k: eng.schedule.timesteps(k) for k in (*cfg.steps, len(eng.timesteps))}
        for rt_name, rt in runtimes.items():
            for k, ts in step_lists.items():
                # The mouth maps are drawn inside the timed call: a user waits for them too.
                e2 = _time(lambda: rt.sample(ref, m, noise, ts, eng.maps(anchor, m)), cfg.runs, len(m))
                e1 = _time(lambda: rt.decode(rt.sample(ref, m, noise, ts, eng.maps(anchor, m))), cfg.runs, len(m))
                out[f"{name} {k} steps, {rt_name}"] = {"steps": k, "runtime": rt_name, "E1": e1, "E2": e2}
    return out


def renderers_beside(engine_name: str, clip: dict, photo: np.ndarray, cfg: LatentBenchConfig) -> dict:
    """At 512 x 512 on one clip: the warp renderer and the latent one (cadence 1, 2, 4): ms/frame, flicker, sharpness."""
    from talkhead.latent.renderer import LatentRenderer
    from talkhead.warp.renderer import WarpRenderer

    motion = clip["motion"]
    out = {}
    warp = WarpRenderer(photo, 512)
    made = {"warp": lambda: np.stack(list(warp.frames(motion, cfg.batch)))}
    for k in (1, 2, 4):
        made[f"latent {engine_name}, cadence {k}"] = (
            lambda k=k: np.stack(list(LatentRenderer(photo, 512, engine=engine_name, stride=k).frames(motion, cfg.batch))))
    lat = LatentRenderer(photo, 512, engine=engine_name)
    x0, y0, x1, y1 = (int(round(v)) for v in lat.box)
    for name, fn in made.items():
        frames = fn()
        face = frames[:, max(0, y0):y1, max(0, x0):x1].astype(np.float64) / 255
        out[name] = {**_time(fn, max(1, cfg.runs // 2), len(motion)),
                     "temporal_l1_frames": float(np.abs(np.diff(face, axis=0)).mean()),
                     "flicker": float(np.abs(np.diff(face, n=2, axis=0)).mean()),
                     "mouth_sharpness": _mouth_sharpness(face)}
    return out


def _mouth_sharpness(face: np.ndarray) -> float:
    """Mean variance of the Laplacian over the lower-middle third of the face box (the mouth)."""
    h, w = face.shape[1:3]
    g = face[:, int(h * 0.55):int(h * 0.8), int(w * 0.33):int(w * 0.67)].mean(axis=3)
    lap = g[:, 1:-1, 2:] + g[:, 1:-1, :-2] + g[:, 2:, 1:-1] + g[:, :-2, 1:-1] - 4 * g[:, 1:-1, 1:-1]
    return float(lap.var(axis=(1, 2)).mean())


def run_latent_bench(out_dir: str | Path, cfg: LatentBenchConfig = LatentBenchConfig(), progress: bool = True) -> dict:
    """Write latent.json, latent.png (speed) and latent_sheet.png (contact sheet) under ``out_dir``."""
    from talkhead.face.detect import default_photo

    torch.set_num_threads(cfg.threads)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    engines = {n: load_engine(n) for n in cfg.engines}
    held, train = _clips(cfg, "heldout"), _clips(cfg, "train")
    result = {"config": asdict(cfg), "threads": cfg.threads,
              "quality_heldout": quality(engines, held, cfg),
              "quality_train_identities": quality(engines, train[::max(1, len(train) // 4)], cfg)}
    with tempfile.TemporaryDirectory() as tmp:  # the ONNX files are timed, not kept
        onnx_dirs = _export_all(engines, Path(tmp)) if cfg.onnx else {}
        result["speed"] = speed(engines, held[0], cfg, onnx_dirs)
    result["renderers_512"] = renderers_beside(cfg.beside, held[0], default_photo(), cfg)
    (out / "latent.json").write_text(json.dumps(result, indent=1))
    from talkhead.bench.latent_plots import plot_speed, sheet

    plot_speed(result["speed"], out / "latent.png")
    sheet(engines, held + train[:1], out / "latent_sheet.png", _generate, cfg.seed)
    return result


def _export_all(engines: dict[str, LatentEngine], root: Path) -> dict[str, Path]:
    from talkhead.latent.onnx import export_onnx

    dirs = {}
    for i, (name, eng) in enumerate(engines.items()):
        dirs[name] = root / f"{i}-{Path(name).stem}"  # a name may be a checkpoint's path
        export_onnx(eng, dirs[name])
    return dirs
