"""``talkhead render``: a motion file (ours, or a Live Link Face export) drawn on a photo by the warp renderer.

By default the frames are the whole photo at its own size and in its own coordinates (not a square crop
around the face), so motion captured from a video (``talkhead motion --from-video``) and drawn on one of
that video's frames re-enacts it where it was filmed. A photo with an odd side loses its last column or
row (H.264 needs even sides). ``--size WxH`` scales instead: the largest rectangle of that aspect,
centred on the face as far as the photo allows. Audio is optional: without it the video is silent.
"""

from __future__ import annotations

import argparse

from talkhead.cli.common import add_config_flags, check_device, config_from_args


def _cmd_render(args: argparse.Namespace) -> None:
    from talkhead.pipeline import RenderConfig, render_motion

    check_device(args.device)
    cfg = config_from_args(RenderConfig, args)
    info = render_motion(cfg, args.out, progress=not args.quiet)
    w, h = info["size"]
    sound = "silent" if info["audio_seconds"] is None else f"audio {info['audio_seconds']:.2f} s, fitted to the video"
    print(f"wrote {args.out}: {info['frames']} frames, {info['seconds']:.2f} s, {w}x{h}, {sound}")


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.config import RenderConfig

    r = sub.add_parser("render", help="draw a motion file (ours or a Live Link Face CSV) on a photo as an mp4")
    r.add_argument("--motion", required=True, help="motion .csv (ours or Live Link Face's) or .npy")
    r.add_argument("-o", "--out", required=True, help="output .mp4")
    add_config_flags(r, RenderConfig, skip=("motion",))
    r.add_argument("--quiet", action="store_true")
    r.set_defaults(func=_cmd_render)
