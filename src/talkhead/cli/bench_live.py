"""``talkhead bench startup|serve|batch|capacity|pipecat``: what a user waits for, the server, the scale."""

from __future__ import annotations

import argparse
from pathlib import Path

from talkhead.cli.common import add_config_flags, add_param_flag, config_from_args
from talkhead.errors import InputError


def register(bsub: argparse._SubParsersAction) -> None:
    _register_live(bsub)
    _register_batch(bsub)
    _register_pipecat(bsub)


def _cmd_bench_startup(args: argparse.Namespace) -> None:
    from talkhead.bench.startup import run_startup_bench

    if args.runs < 1:
        raise InputError(f"--runs must be at least 1, got {args.runs}")
    if args.against is not None and not (Path(args.against) / "talkhead" / "__init__.py").is_file():
        raise InputError(f"--against takes a checkout's src folder (holding talkhead/), not {args.against}")
    if args.avatar is not None and not Path(args.avatar).is_file():
        raise InputError(f"no such avatar file: {args.avatar}")
    r = run_startup_bench(args.out, args.runs, args.model, args.image, args.against, args.avatar)
    beside = f" ({r['seen_ratio_to_against']}x of {args.against}'s {r['against_seen_photo_s']} s)" if args.against else ""
    what = f"the avatar {r['avatar']}{beside}" if args.avatar else \
        f"a photo seen before{beside}, {r['new_photo_s']} s with a new one"
    print(f"generate --audio (6.6 s clip), whole process, median of {r['runs']}: {r['seen_photo_s']} s with "
          f"{what}; wrote {Path(args.out) / 'startup.json'}")


def _cmd_bench_serve(args: argparse.Namespace) -> None:
    from talkhead.bench.serve import run_serve_bench, summary

    if args.ray:
        _cmd_bench_serve_ray(args)
        return
    given = {k: v for k, v in (("seconds", args.seconds), ("max_sessions", args.sessions)) if v is not None}
    if given.get("seconds", 5) < 5 or not 1 <= given.get("max_sessions", 1) <= 16:  # else run_serve_bench's own
        raise InputError("--seconds must be at least 5 and --sessions 1..16")
    r = run_serve_bench(args.out, model=args.model, size=args.size, **given)
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


def _register_live(bsub: argparse._SubParsersAction) -> None:
    """What a user waits for: the whole process (startup) and the live server (serve)."""
    from talkhead.bench.serve import run_serve_bench
    from talkhead.bench.startup import run_startup_bench

    st = bsub.add_parser("startup", help="whole-process generate --audio time, start-up included")
    st.add_argument("--out", required=True)
    add_param_flag(st, run_startup_bench, "runs", "runs of each case (the median is reported)")
    st.add_argument("--model", default=None, help="motion model (default: the default one)")
    st.add_argument("--image", default=None, help="photo (default: the astronaut)")
    st.add_argument("--avatar", default=None, help="an .avatar file drawn instead of a photo (one case)")
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
    add_param_flag(sv, run_serve_bench, "size", "frame size in pixels (square)")
    sv.add_argument("--ray", action="store_true",
                    help="serve --ray on a one-node Ray cluster here: sessions at 25 fps per replica count, a replica killed")
    sv.add_argument("--replicas", type=int, nargs="+", default=None, help="with --ray: replica counts (default 1 2)")
    sv.add_argument("--max-sessions", type=int, default=None, help="with --ray: each replica's session limit (default 4)")
    sv.set_defaults(func=_cmd_bench_serve)


def _cmd_bench_batch(args: argparse.Namespace) -> None:
    from talkhead.bench.batch import BatchBenchConfig, run_batch_bench

    if args.jobs < 2:
        raise InputError(f"--jobs must be at least 2, got {args.jobs}")
    r = run_batch_bench(args.out, config_from_args(BatchBenchConfig, args))
    for row in r["rows"]:
        print(f"{row['backend']:>5s} x{row['workers']}: {row['jobs_per_min']} jobs/min (start-up {row['startup_s']} s, "
              f"median job {row['job_s_median']} s)")
    print(", ".join(f"{k} {v}x" for k, v in r["ratios"].items()) + f"; wrote {Path(args.out) / 'batch.json'} and batch.png")


def _register_batch(bsub: argparse._SubParsersAction) -> None:
    """``bench batch``: talkhead batch's jobs per minute, 1 and 2 workers, local and on Ray."""
    from talkhead.bench.batch import BatchBenchConfig

    bt = bsub.add_parser("batch", help="talkhead batch: jobs/min on 1 and 2 workers, local processes and Ray")
    bt.add_argument("--out", required=True)
    add_config_flags(bt, BatchBenchConfig, skip=("workers",))
    bt.set_defaults(func=_cmd_bench_batch)
    cp = bsub.add_parser("capacity", help="docs/scale.md's capacity table, computed from the benchmarks' JSON files")
    cp.add_argument("--bench", default="docs/bench", help="folder of benchmark outputs (batch/, serve*/) (default "
                                                          "docs/bench)")
    cp.add_argument("--doc", default="docs/scale.md", help="the page whose table is rewritten (between its markers; "
                                                           "default docs/scale.md)")
    cp.set_defaults(func=_cmd_bench_capacity)


def _cmd_bench_capacity(args: argparse.Namespace) -> None:
    from talkhead.bench.capacity import update_doc

    if not Path(args.bench).is_dir() or not Path(args.doc).is_file():
        raise InputError(f"no benchmark folder {args.bench} or no page {args.doc}")
    print(update_doc(args.doc, args.bench))
    print(f"wrote the table into {args.doc}")


def _cmd_bench_pipecat(args: argparse.Namespace) -> None:
    import importlib.util

    if importlib.util.find_spec("pipecat") is None:
        raise InputError("bench pipecat needs Pipecat: pip install 'talkhead[pipecat]'")
    if not (1 <= args.utterances <= 50 and 1.0 <= args.seconds <= 30 and all(1 <= n <= 8 for n in args.agents)
            and 2.0 <= args.agent_seconds <= 120 and 32 <= args.size <= 1024):
        raise InputError("give --utterances 1..50, --seconds 1..30, --agents 1..8 each, --agent-seconds 2..120 "
                         "and --size 32..1024")
    from talkhead.bench.pipecat import PipecatBenchConfig, run_pipecat_bench

    r = run_pipecat_bench(args.out, config_from_args(PipecatBenchConfig, args))
    first, av = r["first_image_ms"], r["av_offset_ms"]
    print(f"first image after the first TTS audio frame (medians): {first['in_process']['median']} ms in-process, "
          f"{first['remote']['median']} ms remote, {first['v1_stream']['median']} ms /v1/stream; A/V offset p95 "
          f"{av['live']['p95']} ms live, {av['synced']['p95']} ms synced; {r['stale_images_after_interrupt']['max']} "
          f"stale images; {r['agents_at_25fps']} agents at 25 fps; wrote {Path(args.out) / 'pipecat.json'} and .png")


def _register_pipecat(bsub: argparse._SubParsersAction) -> None:
    from talkhead.bench.pipecat import PipecatBenchConfig

    p = bsub.add_parser("pipecat", help="the Pipecat service in real pipelines: first image, A/V offset, stale "
                                        "images after an interruption, agents at 25 fps; beside /v1/stream")
    p.add_argument("--out", required=True, help="folder: pipecat.json, pipecat.png")
    add_config_flags(p, PipecatBenchConfig, skip=("interrupts", "threads"))
    p.set_defaults(func=_cmd_bench_pipecat)
