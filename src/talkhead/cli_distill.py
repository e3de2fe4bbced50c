"""``talkhead distill``: few-step students from the teacher."""

from __future__ import annotations

import argparse


def _cmd_distill(args: argparse.Namespace) -> None:
    import torch

    from talkhead.train.distill import DistillConfig, distill

    if args.threads:
        torch.set_num_threads(args.threads)
    cfg = DistillConfig(method=args.method, start_steps=args.start_steps, to=args.to, iters=args.iters,
                        batch=args.batch, lr=args.lr, seed=args.seed, velocity=args.velocity, factor=args.factor,
                        init=args.init, pairs=args.pairs, teacher_steps=args.teacher_steps,
                        step_weights=_numbers(args.step_weights, "--step-weights", float, "3,1,1,5"),
                        segments=_numbers(args.segments, "--segments", int, "8,12,8,4"), experts=args.experts,
                        warp=args.warp, depth=args.depth, average=args.average, augmented=args.augment)
    for path in distill(args.teacher, args.data, args.out, cfg, progress=not args.quiet):
        print(f"wrote {path}")


def _numbers(text: str | None, flag: str, kind: type, example: str) -> tuple | None:
    from talkhead.errors import InputError

    if text is None:
        return None
    try:
        return tuple(kind(w) for w in text.split(","))
    except ValueError:
        noun = "whole numbers" if kind is int else "numbers"
        raise InputError(f"{flag} takes comma-separated {noun}, e.g. {example} (got {text!r})") from None


def register(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser("distill", help="distil the teacher into few-step students")
    d.add_argument("--teacher", default="teacher", help="shipped model name or checkpoint path")
    d.add_argument("--data", required=True, help="corpus directory")
    d.add_argument("--out", required=True, help="directory for student checkpoints (reruns resume)")
    d.add_argument("--method", choices=["progressive", "consistency", "trajectory"], default="progressive",
                   help="trajectory: refine --init so its N-step output matches the teacher's S=50 output")
    d.add_argument("--start-steps", type=int, default=16, help="teacher DDIM grid the chain starts from")
    d.add_argument("--to", type=int, default=1, help="progressive: stop at this many steps")
    d.add_argument("--iters", type=int, default=400,
                   help="optimiser steps per round (consistency, trajectory: in total)")
    d.add_argument("--batch", type=int, default=64)
    d.add_argument("--lr", type=float, default=2e-4)
    d.add_argument("--velocity", type=float, default=0.0,
                   help="progressive: weight of the frame-difference loss, against jitter")
    d.add_argument("--factor", type=int, default=2,
                   help="progressive: teacher steps merged into one student step per round (2: halve the grid)")
    d.add_argument("--step-weights", metavar="W1,W2,...",
                   help="progressive, one round: relative share of iterations per student step, first step "
                        "first (default: even), e.g. 3,1,1,5 to favour the steps that err most")
    d.add_argument("--segments", metavar="N1,N2,...",
                   help="progressive, one round: teacher grid steps per student step, first step first, adding "
                        "up to --start-steps (default: --factor each), e.g. 8,12,8,4 for a short last step")
    d.add_argument("--experts", action="store_true",
                   help="progressive: one network per student step (N times the file, the same time per step), "
                        "each starting from the student's starting weights")
    d.add_argument("--warp", type=float, default=0.0,
                   help="progressive: stretch each window's mel axis by a random factor within 1 +- WARP, so the "
                        "student meets voices the corpus lacks (the teacher hears the same audio), e.g. 0.12")
    d.add_argument("--depth", type=int, default=0,
                   help="progressive: the student's transformer layers (default: as its starting weights); extra "
                        "layers start as the identity, so it begins exactly as --init, with room to learn more")
    d.add_argument("--average", type=float, default=0.0, metavar="DECAY",
                   help="progressive: write an exponential moving average of each round's weights with this decay "
                        "instead of its last weights (default 0: off), e.g. 0.995 (about the last 200 steps)")
    d.add_argument("--init", help="the student to start from (shipped name or checkpoint path); "
                                  "trajectory: required; progressive: the first round's starting weights")
    d.add_argument("--pairs", type=int, default=8192,
                   help="trajectory: teacher sample windows to regress onto (stored under OUT/pairs, resumable)")
    d.add_argument("--teacher-steps", type=int, default=50, help="trajectory: the teacher's DDIM steps for them")
    d.add_argument("--augment", type=int, default=0,
                   help="progressive/consistency: augmented copies of each clip's audio (telephone, room, noise)")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--threads", type=int, default=0)
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=_cmd_distill)
