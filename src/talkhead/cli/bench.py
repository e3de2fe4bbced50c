"""``talkhead bench``: benchmarks that write JSON and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

from talkhead.cli.common import add_config_flags, add_param_flag, add_video_limit, check_device, config_from_args
from talkhead.config import parse_size
from talkhead.errors import InputError


def _cmd_bench_motion(args: argparse.Namespace) -> None:
    from talkhead.bench.motion import BenchConfig, run_motion_bench

    if args.seeds < 1:
        raise InputError(f"--seeds needs at least 1 noise seed (got {args.seeds})")
    check_device(args.device)
    cfg = config_from_args(BenchConfig, args)
    models_dir = Path(args.models_dir) if args.models_dir else None
    run_motion_bench(args.data, args.out, cfg, models_dir=models_dir)
    print(f"wrote {Path(args.out) / 'bench.json'} and {Path(args.out) / 'pareto.png'}")


def _cmd_bench_latent(args: argparse.Namespace) -> None:
    from talkhead.bench.latent import LatentBenchConfig, run_latent_bench

    cfg = config_from_args(LatentBenchConfig, args)
    if min(cfg.clips_per_identity, cfg.frames, cfg.threads, cfg.runs) < 1 or cfg.frames < 3:
        raise InputError("--clips, --threads and --runs must be at least 1, --frames at least 3")
    run_latent_bench(args.out, cfg)
    print(f"wrote {Path(args.out) / 'latent.json'}, latent.png and latent_sheet.png")


def _cmd_bench_avatar(args: argparse.Namespace) -> None:
    from talkhead.bench.avatar import PAIRS, AvatarBenchConfig, run_avatar_bench
    from talkhead.cli.common import set_threads

    set_threads(args.threads)
    cfg = config_from_args(AvatarBenchConfig, args)
    unknown = sorted(set(cfg.pairs) - set(PAIRS))
    if unknown:
        raise InputError(f"unknown pair {unknown[0]!r}; known: {', '.join(PAIRS)}")
    for kind in dict.fromkeys(PAIRS[p][0] for p in cfg.pairs):  # only the folders the pairs asked for
        if not cfg.folder(kind).is_dir():
            made = ("python recipes/talking_clips.py makes it" if kind == "extra"
                    else "see shared/data/videos/README.md")
            raise InputError(f"no such folder of videos: {cfg.folder(kind)} ({made})")
    run_avatar_bench(args.out, cfg, progress=not args.quiet)
    print(f"wrote {Path(args.out) / 'avatar.json'}, avatar.png and avatar_sheet.png")


def _cmd_bench_lips(args: argparse.Namespace) -> None:
    from talkhead.bench.lips import LipsBenchConfig, run_lips_bench

    cfg = config_from_args(LipsBenchConfig, args)
    if not 0 <= cfg.max_lag <= 25:
        raise InputError(f"--max-lag must be 0..25 frames, got {cfg.max_lag}")
    result = run_lips_bench(args.videos, args.out, cfg, args.people, args.corpus, progress=not args.quiet)
    for name, s in sorted(result["summary"].items(), key=lambda kv: -kv[1]["mean"]):
        print(f"{name:45s} mean r {s['mean']:.3f}  lowest {s['min']:.3f}  ({len(s['people'])} people)")
    print(f"wrote {Path(args.out) / 'lips.json'}, lips.png and lips_sheet.png")


def _cmd_bench_compare(args: argparse.Namespace) -> None:
    from talkhead.bench.compare import CompareConfig, parse_entry, run_compare

    entries = [parse_entry(s) for s in args.models]
    check_device(args.device)
    cfg = config_from_args(CompareConfig, args)
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

    cfg = config_from_args(StepsConfig, args)
    r = run_steps_bench(args.data, args.out, cfg)
    for t, extra in zip(r["timesteps"], r["step_excess"]):
        print(f"student step at t={t}: adds {extra:.6f} MSE to the teacher's {args.teacher_grid}-step grid")
    print(f"{args.student}: {r['student_mse']:.6f}, teacher's grid: {r['teacher_grid_mse']:.6f}")
    print(f"wrote {Path(args.out) / 'steps.json'} and {Path(args.out) / 'steps.png'}")


def _cmd_bench_render(args: argparse.Namespace) -> None:
    from talkhead.bench.e2e import run_e2e_bench
    from talkhead.bench.render import run_render_bench

    device = check_device(args.device)
    r = run_render_bench(args.out, device=device, size=args.size, frames=args.frames, threads=args.threads)
    print(f"warp renderer: {r['fps']} frames/s at {r['width']}x{r['height']} ({r['threads']} threads)")
    if not args.no_e2e:
        e = run_e2e_bench(args.out, size=args.size, device=device)
        for row in e["rows"]:
            print(f"generate, cadence stride {row['cadence_stride']}: {row['total_s']} s for 6.6 s "
                  f"({row['realtime_factor']}x real time)")
    print(f"wrote {args.out}")


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
    from talkhead.bench.phone import PhoneBenchConfig, run_phone_bench

    if not 0 < args.reenact_seconds <= args.seconds <= 3600 or not 320 <= args.long_side <= 7680:
        raise InputError("give 0 < --reenact-seconds <= --seconds <= 3600 and --long-side 320..7680")
    r = run_phone_bench(args.out, config_from_args(PhoneBenchConfig, args))
    q = r["quality"]["rows"]
    print(f"avatar train: peak {r['train']['peak_mb']:.0f} MB, {r['train']['wall_s'] / 60:.1f} min; avatar reenact: "
          f"peak {r['reenact']['peak_mb']:.0f} MB, {r['reenact']['wall_s'] / 60:.1f} min; lower face on the held-out "
          f"video: avatar {q['avatar']['psnr_db']:.2f} dB, warp {q['warp']['psnr_db']:.2f} dB; wrote "
          f"{Path(args.out) / 'phone.json'} and phone.png")


def _register_speech(bsub: argparse._SubParsersAction) -> None:
    """``bench frontend`` and ``bench real``: the audio front end and lip sync on real recordings."""
    from talkhead.bench.frontend import run_frontend_bench
    from talkhead.bench.realspeech import run_real_bench

    f = bsub.add_parser("frontend", help="audio front ends: a lip-sync probe on held-out TTS voices and real speech")
    f.add_argument("--data", default="corpus/main", help="TTS corpus: the probe trains on its training voices")
    f.add_argument("--real", nargs="+", default=["corpus/allison", "corpus/arctic"],
                   help="aligned real-speech corpora (talkhead data align); their held-out split is scored")
    add_param_flag(f, run_frontend_bench, "train_clips", "TTS clips the probe learns from")
    f.add_argument("--out", required=True)
    f.set_defaults(func=_cmd_bench_frontend)
    rs = bsub.add_parser("real", help="lip sync on real recordings (aligned corpora): per model, speaker, recording")
    rs.add_argument("models", nargs="+", metavar="MODEL", help="NAME[@STEPS[:SAMPLER]], e.g. teacher, student-1")
    rs.add_argument("--real", nargs="+", default=["corpus/allison", "corpus/arctic"],
                    help="aligned real-speech corpora (recipes/real_speech.sh); their held-out splits are scored")
    rs.add_argument("--data", default="corpus/main", help="TTS corpus whose held-out voices are scored too")
    add_param_flag(rs, run_real_bench, "tts_clips", "held-out TTS clips scored")
    rs.add_argument("--quiet", action="store_true")
    rs.add_argument("--out", required=True)
    rs.set_defaults(func=_cmd_bench_real)
    from talkhead.bench.voices import VoicesBenchConfig

    vo = bsub.add_parser("voices", help="TTS voices on the same sentences: speed, lip sync, phone timing, word errors")
    add_config_flags(vo, VoicesBenchConfig, only=("voices", "model"))
    vo.add_argument("--out", required=True)
    vo.set_defaults(func=_cmd_bench_voices)


def _cmd_bench_voices(args: argparse.Namespace) -> None:
    from talkhead.bench.voices import VoicesBenchConfig, run_voices_bench

    run_voices_bench(args.out, config_from_args(VoicesBenchConfig, args))
    print(f"wrote {Path(args.out) / 'voices.json'} and {Path(args.out) / 'voices.png'}")


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="benchmarks (JSON + plot)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    from talkhead.cli import bench_live

    bench_live.register(bsub)
    _register_models(bsub)
    _register_speech(bsub)
    _register_faces(bsub)
    _register_real(bsub)


def _register_models(bsub: argparse._SubParsersAction) -> None:
    from talkhead.bench.compare import CompareConfig
    from talkhead.bench.motion import BenchConfig
    from talkhead.bench.steps import StepsConfig

    m = bsub.add_parser("motion", help="sampler/student Pareto table on a fixed 165-frame held-out clip")
    m.add_argument("--data", default="corpus/main", help="corpus whose held-out voices score lip sync")
    m.add_argument("--out", required=True)
    m.add_argument("--models-dir", default=None, help="look for students here first (default: shipped)")
    add_config_flags(m, BenchConfig, skip=("students", "seed"))
    m.set_defaults(func=_cmd_bench_motion)
    c = bsub.add_parser("compare", help="paired parity of two or more models/samplers over many noise seeds")
    c.add_argument("models", nargs="+", metavar="MODEL",
                   help="NAME[@STEPS[:SAMPLER]]: a shipped name or checkpoint path, e.g. student-1, teacher@4:unipc; "
                        "the first is the baseline")
    add_config_flags(c, CompareConfig)
    c.add_argument("--out", required=True)
    c.set_defaults(func=_cmd_bench_compare)
    s = bsub.add_parser("steps", help="which step of a few-step student adds the most error to the teacher's")
    add_config_flags(s, StepsConfig)
    s.add_argument("--data", default="corpus/main", help="corpus whose held-out voices give the windows")
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_bench_steps)


def _register_faces(bsub: argparse._SubParsersAction) -> None:
    from talkhead.bench.avatar import AvatarBenchConfig
    from talkhead.bench.latent import LatentBenchConfig
    from talkhead.bench.render import run_render_bench

    lt = bsub.add_parser("latent", help="latent face engine: Table 1 quality, Table 2 speed, E1/E2, cadence, warp beside it")
    lt.add_argument("--out", required=True)
    add_config_flags(lt, LatentBenchConfig, skip=("batch", "steps", "seed"))
    lt.set_defaults(func=_cmd_bench_latent)
    av = bsub.add_parser("avatar", help="avatars learnt from real video re-enacting held-out video, beside warp and retrieval")
    av.add_argument("--out", required=True, help="folder: avatar.json, avatar.png, avatar_sheet.png")
    add_config_flags(av, AvatarBenchConfig, only=("work", "videos", "talking", "extra", "pairs"))
    av.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    av.add_argument("--quiet", action="store_true")
    add_video_limit(av)
    av.set_defaults(func=_cmd_bench_avatar)

    r = bsub.add_parser("render", help="warp renderer and end-to-end speed, contact sheet")
    r.add_argument("--out", required=True)
    for name, what in (("size", "N or WIDTHxHEIGHT (e.g. 1080x1920)"), ("frames", "frames drawn"),
                       ("device", "cpu or cuda"), ("threads", "torch CPU threads (default: torch's own)")):
        add_param_flag(r, run_render_bench, name, what, type={"size": parse_size, "threads": int}.get(name),
                       **({"choices": ("cpu", "cuda")} if name == "device" else {}))
    r.add_argument("--no-e2e", action="store_true", help="skip the end-to-end generate timing")
    r.set_defaults(func=_cmd_bench_render)


def _register_real(bsub: argparse._SubParsersAction) -> None:
    from talkhead.bench.lips import LipsBenchConfig
    from talkhead.bench.phone import PhoneBenchConfig

    ph = bsub.add_parser("phone", help="memory and time of avatar train and reenact on a phone's 1080p video (made "
                                       "from the real face videos)")
    ph.add_argument("--out", required=True, help="folder: phone.json, phone.png")
    add_config_flags(ph, PhoneBenchConfig, skip=("train_sources", "reenact_sources"))
    add_video_limit(ph)
    ph.set_defaults(func=_cmd_bench_phone)
    lp = bsub.add_parser("lips", help="speech-driven lips against people filmed talking (held-out people), beside "
                                      "the capture ceiling and loudness")
    lp.add_argument("--videos", nargs="+", default=["../shared/data/talking"], help="real talking videos or folders")
    lp.add_argument("--out", required=True, help="folder: lips.json, lips.png, lips_sheet.png (and corpus/)")
    lp.add_argument("--corpus", default=None, help="the `data talking` corpus to use or make (default OUT/corpus)")
    lp.add_argument("--people", default=None, help="who is who (recipes/talking_people.json)")
    add_config_flags(lp, LipsBenchConfig, skip=("render_size", "seed"))
    lp.add_argument("--quiet", action="store_true")
    add_video_limit(lp)
    lp.set_defaults(func=_cmd_bench_lips)
