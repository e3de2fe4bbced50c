"""``talkhead generate``: a talking-head video from a face photo and speech."""

from __future__ import annotations

import argparse

from talkhead.cli.common import add_config_flags, check_device, config_from_args
from talkhead.config import FPS

SPEECH = ("audio", "text", "transcript", "voice")  # GenerateConfig's speech fields: motion's flags too


def driver_arg(args: argparse.Namespace) -> str:
    """``--driver``'s value; unset, it is 'phones' when a --transcript gives the true phones, else 'model'."""
    if args.transcript is not None and args.text is not None:
        from talkhead.errors import InputError

        raise InputError("--transcript goes with --audio, not --text (the TTS knows its own phones)")
    return args.driver or ("phones" if args.transcript is not None else "model")


def add_speech_args(p: argparse.ArgumentParser) -> None:
    """--audio, --text, --transcript, --voice and --driver: shared by generate and motion."""
    from talkhead.config import GenerateConfig

    add_config_flags(p, GenerateConfig, only=SPEECH)
    p.add_argument("--driver", choices=["model", "phones"], default=None,
                   help="'phones': drive the face from phoneme targets instead of the model (needs --text or "
                        "--transcript); default: phones with --transcript, else model")


def _cmd_generate(args: argparse.Namespace) -> None:
    from talkhead.motion.stream import MotionConfig
    from talkhead.pipeline import GenerateConfig, generate

    check_device(args.device)
    motion = config_from_args(MotionConfig, args, driver=driver_arg(args))
    cfg = config_from_args(GenerateConfig, args, motion=motion)
    info = generate(cfg, args.out, motion_out=args.motion_out, progress=not args.quiet, latents_out=args.latents_out)
    wrote = " and ".join(p for p in (args.out, args.latents_out) if p)
    print(f"wrote {wrote}: {info['frames']} frames, {info['seconds']:.2f} s")


def _cmd_decode(args: argparse.Namespace) -> None:
    from talkhead.latent.renderer import LatentVideo, decode_video
    from talkhead.pipeline import check_output

    check_output(args.out)
    n = decode_video(LatentVideo.load(args.latents), args.out, args.engine, progress=not args.quiet)
    print(f"wrote {args.out}: {n} frames, {n / FPS:.2f} s")


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.config import GenerateConfig, MotionConfig

    g = sub.add_parser("generate", help="make a talking-head video (mp4) from a photo and speech")
    add_speech_args(g)
    add_config_flags(g, GenerateConfig, skip=(*SPEECH, "motion", "batch"))
    add_config_flags(g, MotionConfig, skip=("driver",))
    g.add_argument("-o", "--out", help="output .mp4 (optional with --latents-out)")
    g.add_argument("--latents-out", help="--renderer latent: write the frame latents (.npz) for `talkhead decode`")
    g.add_argument("--motion-out", help="also write the motion as .csv or .npy")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(func=_cmd_generate)
    d = sub.add_parser("decode", help="decode a latents file (generate --latents-out) into an mp4")
    d.add_argument("latents", help=".npz from `talkhead generate --renderer latent --latents-out`")
    d.add_argument("-o", "--out", required=True, help="output .mp4")
    d.add_argument("--engine", help="decode with this engine instead of the one the file names")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=_cmd_decode)
