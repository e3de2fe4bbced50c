"""``talkhead generate``: a talking-head video from a face photo and speech."""

from __future__ import annotations

import argparse

from talkhead.cli.common import add_device, check_device
from talkhead.config import DEFAULT_VOICE, FPS, parse_size


def size_arg(text: str) -> tuple[int, int]:
    """``--size``: "512" (square) or "WIDTHxHEIGHT" such as "1080x1920" -> (width, height)."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def driver_arg(args: argparse.Namespace) -> str:
    """``--driver``'s value; unset, it is 'phones' when a --transcript gives the true phones, else 'model'."""
    if args.transcript is not None and args.text is not None:
        from talkhead.errors import InputError

        raise InputError("--transcript goes with --audio, not --text (the TTS knows its own phones)")
    return args.driver or ("phones" if args.transcript is not None else "model")


def add_speech_args(p: argparse.ArgumentParser) -> None:
    """--audio, --text, --transcript, --voice and --driver: shared by generate and motion."""
    p.add_argument("--audio", help="speech: WAV, FLAC, MP3 or a video file's audio")
    p.add_argument("--text", help="text to speak with the built-in TTS")
    p.add_argument("--transcript", help="what --audio says: aligned to the recording, its phones drive the lips "
                                        "(the best lip sync for real speech; implies --driver phones)")
    p.add_argument("--voice", default=DEFAULT_VOICE, help="TTS voice (talkhead tts --list-voices)")
    p.add_argument("--driver", choices=["model", "phones"], default=None,
                   help="'phones': drive the face from phoneme targets instead of the model (needs --text or "
                        "--transcript); default: phones with --transcript, else model")


def _cmd_generate(args: argparse.Namespace) -> None:
    from talkhead.motion.stream import MotionConfig
    from talkhead.pipeline import GenerateConfig, generate

    check_device(args.device)
    motion = MotionConfig(model=args.model, steps=args.steps, seed=args.seed, driver=driver_arg(args))
    cfg = GenerateConfig(image=args.image, audio=args.audio, text=args.text, transcript=args.transcript,
                         voice=args.voice, motion=motion,
                         size=args.size, cadence_stride=args.cadence_stride, renderer=args.renderer,
                         latent_engine=args.latent_engine, avatar=args.avatar, device=args.device)
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
    g = sub.add_parser("generate", help="make a talking-head video (mp4) from a photo and speech")
    g.add_argument("--image", help="face photo (default: the astronaut from scikit-image)")
    g.add_argument("--avatar", help="an .avatar file (talkhead avatar train): the person's own frames, lower face redrawn; "
                                    "frames at the video's own size (--size is ignored)")
    add_speech_args(g)
    g.add_argument("-o", "--out", help="output .mp4 (optional with --latents-out)")
    g.add_argument("--model", default=None, help="motion model (talkhead models); default: the best shipped")
    g.add_argument("--steps", type=int, default=None, help="sampling steps (default: the model's own)")
    g.add_argument("--size", type=size_arg, default=(512, 512),
                   help="frame size: N for N x N, or WIDTHxHEIGHT such as 1080x1920 (default 512)")
    g.add_argument("--cadence-stride", type=int, default=1, help="render every K-th frame, blend the rest")
    g.add_argument("--renderer", default="warp",
                   help="how frames are drawn: warp (the photo warped by the rig) or latent (the latent face engine)")
    g.add_argument("--latent-engine", help="--renderer latent: a shipped engine (latent-student-1|2|4, "
                                           "latent-teacher) or a checkpoint; default latent-student-4")
    g.add_argument("--latents-out", help="--renderer latent: write the frame latents (.npz) for `talkhead decode`")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--motion-out", help="also write the motion as .csv or .npy")
    add_device(g)
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(func=_cmd_generate)
    d = sub.add_parser("decode", help="decode a latents file (generate --latents-out) into an mp4")
    d.add_argument("latents", help=".npz from `talkhead generate --renderer latent --latents-out`")
    d.add_argument("-o", "--out", required=True, help="output .mp4")
    d.add_argument("--engine", help="decode with this engine instead of the one the file names")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=_cmd_decode)
