"""``talkhead batch``: one video per line of a JSON-lines jobs file, on local worker processes or Ray."""

from __future__ import annotations

import argparse
import sys


def _cmd_batch(args: argparse.Namespace) -> None:
    owned = False
    if args.ray:  # connected before torch is imported: an address that does not answer fails within seconds
        from talkhead.scale.ray import connect

        owned = connect(args.ray)
    from talkhead.scale.batch import REPORT, BatchConfig, run_batch

    cfg = BatchConfig(workers=args.workers, ray=args.ray is not None, ray_address=args.ray or None,
                      progress=not args.quiet)
    try:
        r = run_batch(args.jobs, args.out, cfg)
    finally:
        if owned:
            import ray

            ray.shutdown()
    where = f"{r['workers']} {r['backend']} workers" if r["workers"] else "no workers needed"
    rate = f", {r['jobs_per_min']} jobs/min after a {r['startup_s']} s start" if r["jobs_per_min"] else ""
    print(f"batch: {r['ok']} made, {r['skipped']} already there, {r['failed']} failed in {r['wall_s']} s "
          f"({where}{rate}); wrote {r['out']}/{REPORT}")
    if r["failed"]:
        sys.exit(1)  # finished, but not every video was made: scripts can tell


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("batch", help="one video per line of a JSON-lines jobs file (local processes or Ray)",
                       description="Each line is a JSON object with generate's flags as keys, e.g. "
                                   '{"text": "Hello.", "image": "me.jpg", "seed": 1, "out": "hello.mp4"}. '
                                   "Keys: out, text or audio, transcript, image, voice, size, renderer, latent_engine, "
                                   "cadence_stride, model, steps, seed, driver. A rerun skips the videos already made.")
    p.add_argument("jobs", help="jobs file: one JSON object per line")
    p.add_argument("--out", required=True, help="folder for the videos (each job's \"out\" is a file name in it) "
                                                "and report.json")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes, one torch thread each (default: one per CPU, or per CPU of the Ray cluster)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Ray: a one-node cluster here, or the cluster at ADDRESS (as `ray start --head` "
                        "prints it; put --ray after the jobs file, or write --ray=ADDRESS)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_batch)
