"""``talkhead bench``: benchmarks that write JSON and a plot."""

from __future__ import annotations

import argparse
from pathlib import Path

from talkhead.errors import InputError


def _device(name: str) -> str:
    import torch

    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is available")
    return name


def _cmd_bench_motion(args: argparse.Namespace) -> None:
    from talkhead.bench.motion import BenchConfig, run_motion_bench

    cfg = BenchConfig(teacher=args.teacher, repeats=args.repeats, lipsync_clips=args.clips, device=_device(args.device))
    models_dir = Path(args.models_dir) if args.models_dir else None
    run_motion_bench(args.data, args.out, cfg, models_dir=models_dir)
    print(f"wrote {Path(args.out) / 'bench.json'} and {Path(args.out) / 'pareto.png'}")


def _cmd_bench_render(args: argparse.Namespace) -> None:
    from talkhead.bench.render import run_render_bench

    run_render_bench(args.out, device=_device(args.device), size=args.size, frames=args.frames)
    print(f"wrote {args.out}")


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="benchmarks (JSON + plot)")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    m = bsub.add_parser("motion", help="sampler/student Pareto table on a fixed 165-frame held-out clip")
    m.add_argument("--data", default="corpus/main", help="corpus whose held-out voices score lip sync")
    m.add_argument("--out", required=True)
    m.add_argument("--teacher", default="teacher")
    m.add_argument("--models-dir", default=None, help="look for students here first (default: shipped)")
    m.add_argument("--repeats", type=int, default=10)
    m.add_argument("--clips", type=int, default=24, help="held-out clips for lip sync")
    m.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    m.set_defaults(func=_cmd_bench_motion)
    r = bsub.add_parser("render", help="warp renderer and end-to-end speed, contact sheet")
    r.add_argument("--out", required=True)
    r.add_argument("--size", type=int, default=512)
    r.add_argument("--frames", type=int, default=165)
    r.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    r.set_defaults(func=_cmd_bench_render)
