"""The ``talkhead`` command line: each subcommand maps onto a config dataclass and one function.

One module per command family (``data``, ``generate``, ``train``, ``motion``, ``bench``, ``serve``); shared
argument checks live in ``common``.
"""

from __future__ import annotations

import argparse
import sys

from talkhead.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="talkhead", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    for register in _extra_commands():
        register(sub)
    return p


def _extra_commands() -> list:
    # One module per command family; imports stay light until a command runs.
    from talkhead.cli import avatar, batch, bench, data, generate, latent, motion, render, serve, train

    return [data.register, generate.register, train.register, motion.register, bench.register, serve.register,
            latent.register, render.register, avatar.register, batch.register]


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input is one line on stderr and exit code 2."""
    args = build_parser().parse_args(argv)
    try:
        from talkhead.video import video_limit

        with video_limit(getattr(args, "max_seconds", None)):
            args.func(args)
    except InputError as e:
        print(f"talkhead: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("talkhead: interrupted", file=sys.stderr)
        return 130
    return 0

