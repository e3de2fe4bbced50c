"""``talkhead render``: a motion file (ours, or a Live Link Face export) drawn on a photo by the warp renderer.

By default the frames are the whole photo at its own size and in its own coordinates (not a square crop
around the face), so motion captured from a video (``talkhead motion --from-video``) and drawn on one of
that video's frames re-enacts it where it was filmed. A photo with an odd side loses its last column or
row (H.264 needs even sides). ``--size WxH`` scales instead: the largest rectangle of that aspect,
centred on the face as far as the photo allows. Audio is optional: without it the video is silent.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from talkhead.cli.common import add_device, check_device
from talkhead.cli.generate import size_arg
from talkhead.config import FPS
from talkhead.errors import InputError

MAX_SIDE = 4096  # as --size allows


@dataclass(frozen=True)
class RenderConfig:
    """What ``talkhead render`` draws: the flags, with their defaults."""

    motion: str
    image: str | None = None  # None: the demo photo
    audio: str | None = None  # None: a silent video
    size: tuple[int, int] | None = None  # None: the photo's own
    device: str = "cpu"


def render_motion(cfg: RenderConfig, out: str, progress: bool = False) -> dict:
    """Draw ``cfg.motion`` on the photo and write the mp4 (atomically); returns frames, size and seconds."""
    from tqdm import tqdm

    from talkhead.audio.io import SAMPLE_RATE, load_audio
    from talkhead.face.detect import default_photo, load_image
    from talkhead.pipeline import check_output
    from talkhead.rig.io import load_motion
    from talkhead.util import prefetch
    from talkhead.video import write_mp4
    from talkhead.warp.renderer import WarpRenderer

    check_output(out)
    motion = load_motion(cfg.motion)
    if len(motion) == 0:
        raise InputError(f"{cfg.motion}: no frames of motion")
    photo = load_image(cfg.image) if cfg.image else default_photo()
    if cfg.size is None and max(photo.shape[:2]) > MAX_SIDE:
        raise InputError(f"the photo is {photo.shape[1]}x{photo.shape[0]}: give --size WxH "
                         f"(at most {MAX_SIDE} a side)")
    audio = load_audio(cfg.audio) if cfg.audio else None
    renderer = WarpRenderer(photo, cfg.size, cfg.device, name=cfg.image or "astronaut", full_frame=True)
    bar = tqdm(total=len(motion), unit="frame", desc="render", disable=not progress)
    write_mp4(out, prefetch(renderer.frames(motion)), audio, SAMPLE_RATE, progress=lambda n: bar.update(1))
    bar.close()
    return {"frames": len(motion), "size": renderer.size, "seconds": len(motion) / FPS,
            "audio_seconds": None if audio is None else len(audio) / SAMPLE_RATE}


def _cmd_render(args: argparse.Namespace) -> None:
    check_device(args.device)
    cfg = RenderConfig(motion=args.motion, image=args.image, audio=args.audio, size=args.size, device=args.device)
    info = render_motion(cfg, args.out, progress=not args.quiet)
    w, h = info["size"]
    sound = "silent" if info["audio_seconds"] is None else f"audio {info['audio_seconds']:.2f} s, fitted to the video"
    print(f"wrote {args.out}: {info['frames']} frames, {info['seconds']:.2f} s, {w}x{h}, {sound}")


def register(sub: argparse._SubParsersAction) -> None:
    r = sub.add_parser("render", help="draw a motion file (ours or a Live Link Face CSV) on a photo as an mp4")
    r.add_argument("--motion", required=True, help="motion .csv (ours or Live Link Face's) or .npy")
    r.add_argument("--image", help="photo (default: the astronaut from scikit-image); the video shows all of it")
    r.add_argument("--audio", help="sound track (WAV, FLAC, MP3 or a video's audio); none: a silent video")
    r.add_argument("-o", "--out", required=True, help="output .mp4")
    r.add_argument("--size", type=size_arg, default=None,
                   help="frame size N or WIDTHxHEIGHT (default: the photo's own, odd sides less one pixel)")
    add_device(r)
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_cmd_render)
