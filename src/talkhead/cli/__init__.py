"""The ``talkhead`` command line: each subcommand maps onto a config dataclass and one function.

One module per command family (``data``, ``generate``, ``train``, ``motion``, ``bench``, ``serve``); shared
argument checks live in ``common``.
"""

from __future__ import annotations

import argparse
import sys

from talkhead.errors import InputError

# Each top-level command and the module that registers it (one module per command family).
COMMANDS = {"tts": "data", "data": "data", "generate": "generate", "decode": "generate", "train": "train",
            "distill": "train", "motion": "motion", "models": "motion", "eval": "motion", "bench": "bench",
            "serve": "serve", "latent": "latent", "render": "render", "avatar": "avatar", "batch": "batch"}


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser: for ``argv`` that names a command, only its family's (importing the others' configs cost
    0.2 s of every start-up); otherwise every command's, for the help."""
    from importlib import import_module

    p = argparse.ArgumentParser(prog="talkhead", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    first = next((a for a in (argv or []) if not a.startswith("-")), None)
    families = [COMMANDS[first]] if first in COMMANDS else dict.fromkeys(COMMANDS.values())
    for family in families:
        import_module(f"talkhead.cli.{family}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input is one line on stderr and exit code 2."""
    args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
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


def run() -> None:
    """The ``talkhead`` script: ``main``, then exit without the interpreter's last garbage collection.

    A process that has imported torch holds about a million objects; collecting them all at exit took 0.3-0.4 s
    of every command (a third of a short ``generate``'s start-up and shut-down). ``gc.freeze`` leaves them to the
    operating system; files are closed and ``atexit`` handlers still run."""
    import gc

    code = main()
    gc.freeze()
    sys.exit(code)
