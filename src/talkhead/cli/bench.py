"""``talkhead bench``: benchmarks that write JSON and a plot."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from talkhead.cli.common import add_device, add_video_limit, check_device
from talkhead.cli.generate import size_arg
from talkhead.errors import InputError


def _cmd_bench_motion(args: argparse.Namespace) -> None:
    from talkhead.bench.motion import BenchConfig, run_motion_bench

    if args.seeds < 1:
        raise InputError(f"--seeds needs at least 1 noise seed (got {args.seeds})")
    cfg = BenchConfig(teacher=args.teacher, repeats=args.repeats, lipsync_clips=args.clips, device=check_device(args.device),
                      seeds=args.seeds)
    models_dir = Path(args.models_dir) if args.models_dir else None
    run_motion_bench(args.data, args.out, cfg, models_dir=models_dir)
    print(f"wrote {Path(args.out) / 'bench.json'} and {Path(args.out) / 'pareto.png'}")


def _cmd_bench_latent(args: argparse.Namespace) -> None:
    from talkhead.bench.latent import LatentBenchConfig, run_latent_bench

    if min(args.clips, args.frames, args.threads, args.runs) < 1 or args.frames < 3:
        raise InputError("--clips, --threads and --runs must be at least 1, --frames at least 3")
    kw = {"engines": tuple(args.engines)} if args.engines else {}
    cfg = LatentBenchConfig(faces=args.faces, clips_per_identity=args.clips, frames=args.frames, threads=args.threads,
                            runs=args.runs, onnx=not args.no_onnx, beside=args.beside, **kw)
    run_latent_bench(args.out, cfg)
    print(f"wrote {Path(args.out) / 'latent.json'}, latent.png and latent_sheet.png")


def _cmd_bench_avatar(args: argparse.Namespace) -> None:
    from talkhead.bench.avatar import PAIRS, AvatarBenchConfig, run_avatar_bench
    from talkhead.cli.common import set_threads

    set_threads(args.threads)
    for folder in (args.videos, args.talking):
        if not Path(folder).is_dir():
            raise InputError(f"no such folder of videos: {folder} (see shared/data/videos/README.md)")
    unknown = sorted(set(args.pairs or ()) - set(PAIRS))
    if unknown:
        raise InputError(f"unknown pair {unknown[0]!r}; known: {', '.join(PAIRS)}")
    cfg = AvatarBenchConfig(videos=args.videos, talking=args.talking, work=args.work)
    cfg = replace(cfg, pairs=tuple(args.pairs)) if args.pairs else cfg
    run_avatar_bench(args.out, cfg, progress=not args.quiet)
    print(f"wrote {Path(args.out) / 'avatar.json'}, avatar.png and avatar_sheet.png")


def _cmd_bench_lips(args: argparse.Namespace) -> None:
    from talkhead.bench.lips import LipsBenchConfig, run_lips_bench

    split = lambda text: tuple(w for w in (text or "").split(",") if w)  # noqa: E731
    cfg = LipsBenchConfig(models=split(args.models), fold_names=split(args.fold_names), fold_model=args.fold_model,
                          folds=args.folds, render=split(args.render), max_lag=args.max_lag)
    if not 0 <= cfg.max_lag <= 25:
        raise InputError(f"--max-lag must be 0..25 frames, got {cfg.max_lag}")
    result = run_lips_bench(args.videos, args.out, cfg, args.people, args.corpus, progress=not args.quiet)
    for name, s in sorted(result["summary"].items(), key=lambda kv: -kv[1]["mean"]):
        print(f"{name:45s} mean r {s['mean']:.3f}  lowest {s['min']:.3f}  ({len(s['people'])} people)")
    print(f"wrote {Path(args.out) / 'lips.json'}, lips.png and lips_sheet.png")


def _cmd_bench_compare(args: argparse.Namespace) -> None:
    from talkhead.bench.compare import CompareConfig, parse_entry, run_compare

    entries = [parse_entry(s) for s in args.models]
    cfg = CompareConfig(teacher=args.teacher, seeds=args.seeds, seed=args.seed, device=check_device(args.device))
    result = run_compare(entries, args.out, cfg)
    first = result["entries"][0]
    print(f"cosine to {result['reference']} over {cfg.seeds} seeds (mean ± s.e.); differences paired with {first['entry']}")
    for r in result["entries"]:
        line = f"{r['entry']:>32s}  {r['cosine_mean']:.5f} ± {r['cosine_sem']:.5f}  jitter {r['jitter_vs_teacher']:.3f}x"
        if "vs_first" in r:
            v = r["vs_first"]
            verdict = "told apart" if v["told_apart"] else "not told apart"
            line += (f"  {v['mean']:+.5f} ± {v['sem']:.5f} ({verdict} by the mean), "
                     f"better on {v['better']}/{cfg.seeds} (sign test p = {v['sign_p']:.3g})")
        print(line)
    print(f"wrote {Path(args.out) / 'compare.json'} and {Path(args.out) / 'compare.png'}")


def _cmd_bench_steps(args: argparse.Namespace) -> None:
    from talkhead.bench.steps import StepsConfig, run_steps_bench

    cfg = StepsConfig(student=args.student, teacher=args.teacher, teacher_grid=args.teacher_grid,
                      windows=args.windows, seed=args.seed, pairs=args.pairs)
    r = run_steps_bench(args.data, args.out, cfg)
    for t, extra in zip(r["timesteps"], r["step_excess"]):
        print(f"student step at t={t}: adds {extra:.6f} MSE to the teacher's {args.teacher_grid}-step grid")
    print(f"{args.student}: {r['student_mse']:.6f}, teacher's grid: {r['teacher_grid_mse']:.6f}")
    print(f"wrote {Path(args.out) / 'steps.json'} and {Path(args.out) / 'steps.png'}")


def _cmd_bench_render(args: argparse.Namespace) -> None:
    from talkhead.bench.e2e import run_e2e_bench
    from talkhead.bench.render import run_render_bench

    device = check_device(args.device)
    r = run_render_bench(args.out, device=device, size=args.size, frames=args.frames, threads=args.threads or None)
    print(f"warp renderer: {r['fps']} frames/s at {r['width']}x{r['height']} ({r['threads']} threads)")
    if not args.no_e2e:
        e = run_e2e_bench(args.out, size=args.size, device=device)
        for row in e["rows"]:
            print(f"generate, cadence stride {row['cadence_stride']}: {row['total_s']} s for 6.6 s "
                  f"({row['realtime_factor']}x real time)")
    print(f"wrote {args.out}")


def _cmd_bench_startup(args: argparse.Namespace) -> None:
    from talkhead.bench.startup import run_startup_bench

    if args.runs < 1:
        raise InputError(f"--runs must be at least 1, got {args.runs}")
    if args.against is not None and not (Path(args.against) / "talkhead" / "__init__.py").is_file():
        raise InputError(f"--against takes a checkout's src folder (holding talkhead/), not {args.against}")
    r = run_startup_bench(args.out, args.runs, args.model, args.image, args.against)
    beside = f" ({r['seen_ratio_to_against']}x of {args.against}'s {r['against_seen_photo_s']} s)" if args.against else ""
    print(f"generate --audio (6.6 s clip), whole process, median of {r['runs']}: {r['seen_photo_s']} s with a "
          f"photo seen before{beside}, {r['new_photo_s']} s with a new one; wrote {Path(args.out) / 'startup.json'}")


def _cmd_bench_serve(args: argparse.Namespace) -> None:
    from talkhead.bench.serve import run_serve_bench, summary

    if args.ray:
        _cmd_bench_serve_ray(args)
        return
    args.seconds, args.sessions = args.seconds or 60.0, args.sessions or 4
    if args.seconds < 5 or not 1 <= args.sessions <= 16:
        raise InputError("--seconds must be at least 5 and --sessions 1..16")
    r = run_serve_bench(args.out, args.seconds, args.sessions, args.model, args.size)
    print("\n".join(summary(r)) + f"\nwrote {Path(args.out) / 'serve.json'}")


def _cmd_bench_serve_ray(args: argparse.Namespace) -> None:
    """``bench serve --ray``: sessions held at 25 fps by serve --ray with 1 and 2 replicas, and a replica killed."""
    from talkhead.scale.ray import import_ray

    import_ray()
    from talkhead.bench.serve_ray import RayServeBenchConfig, run_ray_serve_bench

    given = {k: v for k, v in (("seconds", args.seconds), ("sessions", args.sessions), ("model", args.model),
                               ("max_sessions", args.max_sessions)) if v is not None}
    replicas = tuple(args.replicas or RayServeBenchConfig().replicas)
    if not all(1 <= r <= 8 for r in replicas) or given.get("seconds", 10) < 3 or not 1 <= given.get("sessions", 8) <= 32:
        raise InputError("--replicas must be 1..8, --seconds at least 3 and --sessions 1..32")
    r = run_ray_serve_bench(args.out, RayServeBenchConfig(replicas=replicas, size=args.size, **given))
    held = ", ".join(f"{n} replica(s): {k}" for n, k in r["sessions_at_25fps"].items())
    k = r["kill"]
    kill = (f"; a replica killed: its {k['on_killed_replica']} sessions closed within {k['close_after_kill_s_max']} s, "
            f"the other {k['survivors']} at {k['survivors_new_fps_min']} new frames/s") if k else ""
    print(f"sessions at 25 fps: {held}{kill}; wrote {Path(args.out) / 'serve-ray.json'} and serve-ray.png")


def _cmd_bench_frontend(args: argparse.Namespace) -> None:
    from talkhead.bench.frontend import run_frontend_bench

    run_frontend_bench(args.data, args.real, args.out, train_clips=args.train_clips)
    print(f"wrote {Path(args.out) / 'frontend.json'} and {Path(args.out) / 'frontend.png'}")


def _cmd_bench_real(args: argparse.Namespace) -> None:
    from talkhead.bench.compare import parse_entry
    from talkhead.bench.realspeech import run_real_bench

    run_real_bench([parse_entry(m) for m in args.models], args.real, args.out, tts=args.data, tts_clips=args.tts_clips,
                   progress=not args.quiet)
    print(f"wrote {Path(args.out) / 'real.json'} and {Path(args.out) / 'real.png'}")


def _cmd_bench_phone(args: argparse.Namespace) -> None:
    import shlex

    from talkhead.bench.phone import PhoneBenchConfig, run_phone_bench

    if not 0 < args.reenact_seconds <= args.seconds <= 3600 or not 320 <= args.long_side <= 7680:
        raise InputError("give 0 < --reenact-seconds <= --seconds <= 3600 and --long-side 320..7680")
    cfg = PhoneBenchConfig(videos=args.videos, seconds=args.seconds, reenact_seconds=args.reenact_seconds,
                           long_side=args.long_side, fps=args.fps, codec=args.codec,
                           train_args=tuple(shlex.split(args.train_args)), work=args.work)
    r = run_phone_bench(args.out, cfg)
    q = r["quality"]["rows"]
    print(f"avatar train: peak {r['train']['peak_mb']:.0f} MB, {r['train']['wall_s'] / 60:.1f} min; avatar reenact: "
          f"peak {r['reenact']['peak_mb']:.0f} MB, {r['reenact']['wall_s'] / 60:.1f} min; lower face on the held-out "
          f"video: avatar {q['avatar']['psnr_db']:.2f} dB, warp {q['warp']['psnr_db']:.2f} dB; wrote "
          f"{Path(args.out) / 'phone.json'} and phone.png")


def _register_speech(bsub: argparse._SubParsersAction) -> None:
    """``bench frontend`` and ``bench real``: the audio front end and lip sync on real recordings."""
    f = bsub.add_parser("frontend", help="audio front ends: a lip-sync probe on held-out TTS voices and real speech")
    f.add_argument("--data", default="corpus/main", help="TTS corpus: the probe trains on its training voices")
    f.add_argument("--real", nargs="+", default=["corpus/allison", "corpus/arctic"],
                   help="aligned real-speech corpora (talkhead data align); their held-out split is scored")
    f.add_argument("--train-clips", type=int, default=160)
    f.add_argument("--out", required=True)
    f.set_defaults(func=_cmd_bench_frontend)
    rs = bsub.add_parser("real", help="lip sync on real recordings (aligned corpora): per model, speaker, recording")
    rs.add_argument("models", nargs="+", metavar="MODEL", help="NAME[@STEPS[:SAMPLER]], e.g. teacher, student-1")
    rs.add_argument("--real", nargs="+", default=["corpus/allison", "corpus/arctic"],
                    help="aligned real-speech corpora (recipes/real_speech.sh); their held-out splits are scored")
    rs.add_argument("--data", default="corpus/main", help="TTS corpus whose held-out voices are scored too")
    rs.add_argument("--tts-clips", type=int, default=48)
    rs.add_argument("--quiet", action="store_true")
    rs.add_argument("--out", required=True)
    rs.set_defaults(func=_cmd_bench_real)
    vo = bsub.add_parser("voices", help="TTS voices on the same sentences: speed, lip sync, phone timing, word errors")
    vo.add_argument("--voices", nargs="+", default=None, help="voice names (default: joe us-female us-male gb-male)")
    vo.add_argument("--model", default=None, help="motion model (default: the default one)")
    vo.add_argument("--out", required=True)
    vo.set_defaults(func=_cmd_bench_voices)


def _cmd_bench_voices(args: argparse.Namespace) -> None:
    from talkhead.bench.voices import VoicesBenchConfig, run_voices_bench

    cfg = VoicesBenchConfig(model=args.model, **({"voices": tuple(args.voices)} if args.voices else {}))
    run_voices_bench(args.out, cfg)
    print(f"wrote {Path(args.out) / 'voices.json'} and {Path(args.out) / 'voices.png'}")


def _register_live(bsub: argparse._SubParsersAction) -> None:
    """What a user waits for: the whole process (startup) and the live server (serve)."""
    st = bsub.add_parser("startup", help="whole-process generate --audio time, start-up included")
    st.add_argument("--out", required=True)
    st.add_argument("--runs", type=int, default=5)
    st.add_argument("--model", default=None, help="motion model (default: the default one)")
    st.add_argument("--image", default=None, help="photo (default: the astronaut)")
    st.add_argument("--against", default=None, metavar="SRC",
                    help="another checkout's src folder, run between these runs: speeds compared in one run")
    st.set_defaults(func=_cmd_bench_startup)
    sv = bsub.add_parser("serve", help="the live server over loopback: latencies, frame pacing, sessions at 25 fps, "
                          "and the page over WebRTC in headless Chromium")
    sv.add_argument("--out", required=True)
    sv.add_argument("--seconds", type=float, default=None,
                    help="length of the long session (default 60; with --ray: of each level, default 10)")
    sv.add_argument("--sessions", type=int, default=None,
                    help="up to this many sessions speaking at once (default 4; with --ray 8)")
    sv.add_argument("--model", default=None, help="motion model (default: student-1-whisper)")
    sv.add_argument("--size", type=int, default=256)
    sv.add_argument("--ray", action="store_true",
                    help="serve --ray on a one-node Ray cluster here: sessions at 25 fps per replica count, a replica killed")
    sv.add_argument("--replicas", type=int, nargs="+", default=None, help="with --ray: replica counts (default 1 2)")
    sv.add_argument("--max-sessions", type=int, default=None, help="with --ray: each replica's session limit (default 4)")
    sv.set_defaults(func=_cmd_bench_serve)


def _cmd_bench_batch(args: argparse.Namespace) -> None:
    from talkhead.bench.batch import BatchBenchConfig, run_batch_bench

    if args.jobs is not None and args.jobs < 2:
        raise InputError(f"--jobs must be at least 2, got {args.jobs}")
    given = {k: v for k, v in (("jobs", args.jobs), ("size", args.size)) if v is not None}  # else the config's
    r = run_batch_bench(args.out, BatchBenchConfig(**given, ray=not args.no_ray))
    for row in r["rows"]:
        print(f"{row['backend']:>5s} x{row['workers']}: {row['jobs_per_min']} jobs/min (start-up {row['startup_s']} s, "
              f"median job {row['job_s_median']} s)")
    print(", ".join(f"{k} {v}x" for k, v in r["ratios"].items()) + f"; wrote {Path(args.out) / 'batch.json'} and batch.png")


def _register_batch(bsub: argparse._SubParsersAction) -> None:
    """``bench batch``: talkhead batch's jobs per minute, 1 and 2 workers, local and on Ray."""
    bt = bsub.add_parser("batch", help="talkhead batch: jobs/min on 1 and 2 workers, local processes and Ray")
    bt.add_argument("--out", required=True)
    bt.add_argument("--jobs", type=int, default=None, help="one-sentence text jobs (default 48)")
    bt.add_argument("--size", type=size_arg, default=None, help="N or WIDTHxHEIGHT (default 256)")
    bt.add_argument("--no-ray", action="store_true", help="the local pool only")
    bt.set_defaults(func=_cmd_bench_batch)
    cp = bsub.add_parser("capacity", help="docs/scale.md's capacity table, computed from the benchmarks' JSON files")
    cp.add_argument("--bench", default="docs/bench", help="folder of benchmark outputs (batch/, serve*/)")
    cp.add_argument("--doc", default="docs/scale.md", help="the page whose table is rewritten (between its markers)")
    cp.set_defaults(func=_cmd_bench_capacity)


def _cmd_bench_capacity(args: argparse.Namespace) -> None:
    from talkhead.bench.capacity import update_doc

    if not Path(args.bench).is_dir() or not Path(args.doc).is_file():
        raise InputError(f"no benchmark folder {args.bench} or no page {args.doc}")
    print(update_doc(args.doc, args.bench))
    print(f"wrote the table into {args.doc}")


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="benchmarks (JSON + plot)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    _register_live(bsub)
    _register_batch(bsub)
    from talkhead.bench.pipecat import register_cli as _register_pipecat  # the optional extra is imported in it only
    _register_pipecat(bsub)
    _register_models(bsub)
    _register_speech(bsub)
    _register_faces(bsub)
    _register_real(bsub)


def _register_models(bsub: argparse._SubParsersAction) -> None:
    m = bsub.add_parser("motion", help="sampler/student Pareto table on a fixed 165-frame held-out clip")
    m.add_argument("--data", default="corpus/main", help="corpus whose held-out voices score lip sync")
    m.add_argument("--out", required=True)
    m.add_argument("--teacher", default="teacher")
    m.add_argument("--models-dir", default=None, help="look for students here first (default: shipped)")
    m.add_argument("--repeats", type=int, default=10)
    m.add_argument("--clips", type=int, default=24, help="held-out clips for lip sync")
    add_device(m)
    m.add_argument("--seeds", type=int, default=16,
                   help="noise seeds for the per-seed cosines written beside the table (the table uses the first)")
    m.set_defaults(func=_cmd_bench_motion)
    c = bsub.add_parser("compare", help="paired parity of two or more models/samplers over many noise seeds")
    c.add_argument("models", nargs="+", metavar="MODEL",
                   help="NAME[@STEPS[:SAMPLER]]: a shipped name or checkpoint path, e.g. student-1, teacher@4:unipc; "
                        "the first is the baseline")
    c.add_argument("--seeds", type=int, default=64, help="noise seeds, each the clip's whole initial noise")
    c.add_argument("--seed", type=int, default=0, help="first seed (bench motion's table uses 0)")
    c.add_argument("--teacher", default="teacher", help="the reference, sampled with DDIM at S = 50")
    add_device(c)
    c.add_argument("--out", required=True)
    c.set_defaults(func=_cmd_bench_compare)
    s = bsub.add_parser("steps", help="which step of a few-step student adds the most error to the teacher's")
    s.add_argument("--student", default="student-4")
    s.add_argument("--teacher", default="teacher")
    s.add_argument("--teacher-grid", type=int, default=32, help="the teacher DDIM grid the student was distilled from")
    s.add_argument("--data", default="corpus/main", help="corpus whose held-out voices give the windows")
    s.add_argument("--windows", type=int, default=256, help="held-out windows (teacher S=50 samples, kept in OUT/pairs)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--pairs", help="folder for the teacher's samples (default OUT/pairs); give several runs the "
                                   "same one to make them once (they depend on the teacher, corpus and seed only)")
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_bench_steps)


def _register_faces(bsub: argparse._SubParsersAction) -> None:
    lt = bsub.add_parser("latent", help="latent face engine: Table 1 quality, Table 2 speed, E1/E2, cadence, warp beside it")
    lt.add_argument("--out", required=True)
    lt.add_argument("--faces", default="corpus/faces", help="face crops with held-out identities (talkhead data faces)")
    lt.add_argument("--engines", nargs="+", default=None, help="engine names or checkpoints (default: the shipped four)")
    lt.add_argument("--clips", type=int, default=2, help="clips per identity")
    lt.add_argument("--frames", type=int, default=100, help="frames per clip")
    lt.add_argument("--threads", type=int, default=2)
    lt.add_argument("--runs", type=int, default=7)
    lt.add_argument("--no-onnx", action="store_true", help="time torch only")
    lt.add_argument("--beside", default="latent-student-4", help="engine timed at 512 px beside the warp renderer")
    lt.set_defaults(func=_cmd_bench_latent)
    av = bsub.add_parser("avatar", help="avatars learnt from real video re-enacting held-out video, beside warp and retrieval")
    av.add_argument("--out", required=True, help="folder: avatar.json, avatar.png, avatar_sheet.png")
    av.add_argument("--work", default="runs/avatar-bench", help="where the avatars are trained (resumes)")
    av.add_argument("--videos", default="../shared/data/videos", help="the real videos (shared/data/videos)")
    av.add_argument("--talking", default="../shared/data/talking", help="real talking video (shared/data/talking)")
    av.add_argument("--pairs", nargs="+", help="cap12, pexels, edtalk, andrew (default: all)")
    av.add_argument("--threads", type=int, default=2)
    av.add_argument("--quiet", action="store_true")
    add_video_limit(av)
    av.set_defaults(func=_cmd_bench_avatar)

    r = bsub.add_parser("render", help="warp renderer and end-to-end speed, contact sheet")
    r.add_argument("--out", required=True)
    r.add_argument("--size", type=size_arg, default=(512, 512), help="N or WIDTHxHEIGHT (e.g. 1080x1920)")
    r.add_argument("--frames", type=int, default=165)
    add_device(r, threads=True)
    r.add_argument("--no-e2e", action="store_true", help="skip the end-to-end generate timing")
    r.set_defaults(func=_cmd_bench_render)

def _register_real(bsub: argparse._SubParsersAction) -> None:
    ph = bsub.add_parser("phone", help="memory and time of avatar train and reenact on a phone's 1080p video (made "
                                       "from the real face videos)")
    ph.add_argument("--out", required=True, help="folder: phone.json, phone.png")
    ph.add_argument("--work", default="runs/phone-bench", help="where the videos and the avatar go (GBs: not in git)")
    ph.add_argument("--videos", default="../shared/data/videos", help="the real face videos (shared/data/videos)")
    ph.add_argument("--seconds", type=float, default=120.0, help="the video avatar train learns from (default 120)")
    ph.add_argument("--reenact-seconds", type=float, default=20.0, help="the video reenact redraws (default 20)")
    ph.add_argument("--long-side", type=int, default=1920, help="the picture's long side (1280: 720p, 3840: 4K)")
    ph.add_argument("--fps", type=int, default=30)
    ph.add_argument("--codec", choices=["libx264", "libx265"], default="libx264", help="H.264 or HEVC")
    ph.add_argument("--train-args", default="", help="more flags for avatar train, in one string (a quicker run)")
    add_video_limit(ph)
    ph.set_defaults(func=_cmd_bench_phone)
    lp = bsub.add_parser("lips", help="speech-driven lips against people filmed talking (held-out people), beside "
                                      "the capture ceiling and loudness")
    lp.add_argument("--videos", nargs="+", default=["../shared/data/talking"], help="real talking videos or folders")
    lp.add_argument("--out", required=True, help="folder: lips.json, lips.png, lips_sheet.png (and corpus/)")
    lp.add_argument("--corpus", default=None, help="the `data talking` corpus to use or make (default OUT/corpus)")
    lp.add_argument("--people", default=None, help="who is who (recipes/talking_people.json)")
    lp.add_argument("--models", default="student-4-whisper,student-1-whisper,student-1-whisper-live,teacher-whisper",
                    help="models scored on every person they never learnt from (comma-separated)")
    lp.add_argument("--folds", default=None, help="JSON {\"folds\": [[person, ...], ...]} (recipes/lips_folds.json)")
    lp.add_argument("--fold-names", default="", help="models trained once per fold (comma-separated names)")
    lp.add_argument("--fold-model", default="runs/lips/fold{fold}/{name}.safetensors",
                    help="where fold {fold}'s model {name} is")
    lp.add_argument("--render", default="", help="also measure on re-detected warp frames: 'capture' and/or model names")
    lp.add_argument("--max-lag", type=int, default=8, help="lag searched, frames each way (default 8)")
    lp.add_argument("--quiet", action="store_true")
    add_video_limit(lp)
    lp.set_defaults(func=_cmd_bench_lips)
