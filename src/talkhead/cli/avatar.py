"""``talkhead avatar train|reenact|info|update``: a person's own video as an avatar, the self-reenactment test, what
an avatar file holds, and an older file brought up to date."""

from __future__ import annotations

import argparse

from talkhead.cli.common import add_config_flags, add_video_limit, config_from_args, set_threads
from talkhead.config import AVATAR_MOUTHS


def _cmd_train(args: argparse.Namespace) -> None:
    from talkhead.avatar.train import AvatarTrainConfig, train_avatar
    from talkhead.pipeline import check_output

    check_output(args.out, ".avatar")
    set_threads(args.threads)
    from talkhead.avatar.data import AvatarDataConfig

    cfg = config_from_args(AvatarTrainConfig, args, data=config_from_args(AvatarDataConfig, args))
    info = train_avatar(args.videos, args.out, cfg, progress=not args.quiet, log=(lambda *a: None) if args.quiet else print)
    print(f"wrote {args.out}: {info['engine']}, {info['wall_s']['total_s'] / 60:.1f} min")


def _cmd_reenact(args: argparse.Namespace) -> None:
    from talkhead.avatar.reenact import reenact
    from talkhead.pipeline import check_output

    check_output(args.out)
    set_threads(args.threads)
    info = reenact(args.avatar, args.video, args.out, seed=args.seed, progress=not args.quiet, mouth=args.mouth)
    print(f"wrote {args.out}: {info['frames']} frames, {info['redrawn']} redrawn")


def _cmd_info(args: argparse.Namespace) -> None:
    import json

    from talkhead.avatar.file import describe_avatar

    print(json.dumps(describe_avatar(args.avatar), indent=1))


def _cmd_update(args: argparse.Namespace) -> None:
    from talkhead.avatar.file import update_avatar
    from talkhead.pipeline import check_output

    check_output(args.out, ".avatar")
    set_threads(args.threads)
    if update_avatar(args.avatar, args.out):
        print(f"wrote {args.out}: {args.avatar} with its base frames' views stored (loads without making them)")
    else:
        print(f"{args.avatar} stores its base frames' views already; nothing written")


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.avatar.data import AvatarDataConfig
    from talkhead.avatar.train import AvatarTrainConfig

    av = sub.add_parser("avatar", help="a person's own video as an avatar: train it, re-enact a video with it, inspect it")
    asub = av.add_subparsers(dest="avatar_command", required=True)
    t = asub.add_parser("train", help="learn a person's lips and teeth from 30 s - 5 min of their own video",
                        description="Resumes after a kill: run the same command again (its work folder is OUT.work).")
    t.add_argument("videos", nargs="+", help="videos of one person (any fps, size and container; sound not needed)")
    t.add_argument("--out", required=True, help="NAME.avatar")
    add_config_flags(t, AvatarTrainConfig, skip=("data",))
    add_config_flags(t, AvatarDataConfig)
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    t.add_argument("--quiet", action="store_true")
    add_video_limit(t)
    t.set_defaults(func=_cmd_train)
    r = asub.add_parser("reenact", help="the motion fitted to VIDEO's frames drives the avatar in VIDEO's own frames")
    r.add_argument("avatar", help="NAME.avatar (talkhead avatar train)")
    r.add_argument("video", help="a video of the same person")
    r.add_argument("-o", "--out", required=True, help="OUT.mp4, VIDEO's size and framing")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--mouth", choices=AVATAR_MOUTHS,
                   help="how the lower face is drawn: the avatar's engine, the engine's with the person's filmed "
                        "lips, or their filmed mouth moved (no engine) (default: the engine)")
    r.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    r.add_argument("--quiet", action="store_true")
    add_video_limit(r)
    r.set_defaults(func=_cmd_reenact)
    i = asub.add_parser("info", help="what an avatar file holds (JSON): base, mouth bank, videos, training time")
    i.add_argument("avatar", help="NAME.avatar")
    i.set_defaults(func=_cmd_info)
    u = asub.add_parser("update", help="an older avatar file (info: views_stored null) written again with its base "
                        "frames' views stored, as train writes them: generate and serve start sooner "
                        "(Pexels' 20.8 -> 8.0 s)")
    u.add_argument("avatar", help="NAME.avatar")
    u.add_argument("--out", required=True, help="NEW.avatar (may be NAME.avatar itself: written atomically)")
    u.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    u.set_defaults(func=_cmd_update)
