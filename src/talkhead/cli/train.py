"""``talkhead train`` (the teacher) and ``talkhead distill progressive|consistency|trajectory`` (students).

Their flags are built from the config dataclasses, so each default exists once, in the config.
"""

from __future__ import annotations

import argparse

from talkhead.cli.common import add_config_flags, check_device, config_from_args, set_threads
from talkhead.config import LIPS_MODEL, LIVE_MODEL
from talkhead.errors import InputError


def _cmd_train(args: argparse.Namespace) -> None:
    from talkhead.audio.features import FeatureConfig
    from talkhead.motion.net import DenoiserConfig
    from talkhead.motion.train.configs import TrainConfig
    from talkhead.motion.train.teacher import train

    set_threads(args.threads)
    check_device(args.device)
    if args.audio_kernel is not None and (args.audio_kernel < 1 or args.audio_kernel % 2 == 0):
        raise InputError(f"--audio-kernel must be an odd number >= 1, got {args.audio_kernel}")
    if args.augmented < 0:
        raise InputError(f"--augment must be >= 0, got {args.augmented}")
    features = config_from_args(FeatureConfig, args)
    sizes = {k: getattr(args, k) for k in ("width", "depth", "heads", "audio_kernel") if getattr(args, k) is not None}
    model_cfg = DenoiserConfig(audio_dim=features.dim, **sizes)
    cfg = config_from_args(TrainConfig, args)
    path = train(args.data, args.out, model_cfg, cfg, resume=args.resume, progress=not args.quiet, features=features)
    print(f"wrote {path}")


def _cmd_distill(args: argparse.Namespace) -> None:
    from talkhead.motion.train.configs import METHODS
    from talkhead.motion.train.distill import distill

    set_threads(args.threads)
    if args.augmented < 0:
        raise InputError(f"--augment must be >= 0, got {args.augmented}")
    cfg = config_from_args(METHODS[args.method], args)
    for path in distill(args.teacher, args.data, args.out, cfg, progress=not args.quiet):
        print(f"wrote {path}")


def _register_train(sub: argparse._SubParsersAction) -> None:
    from talkhead.audio.features import FeatureConfig
    from talkhead.motion.train.configs import TrainConfig

    t = sub.add_parser("train", help="train the motion diffusion teacher on a corpus")
    t.add_argument("--data", required=True, nargs="+",
                   help="corpus directories (talkhead data synth / data align), pooled; the first one's "
                        "held-out voices validate")
    t.add_argument("--out", required=True, help="run directory: checkpoints, metrics.jsonl")
    add_config_flags(t, FeatureConfig, only=("kind",))
    # Network sizes default to DenoiserConfig's own (not repeated here, and torch stays unimported).
    t.add_argument("--width", type=int, help="transformer width (default: DenoiserConfig's, 192)")
    t.add_argument("--depth", type=int, help="transformer layers (default: DenoiserConfig's, 4)")
    t.add_argument("--heads", type=int, help="attention heads (default: DenoiserConfig's, 4)")
    t.add_argument("--audio-kernel", type=int, help="frames each audio convolution sees, odd (default: 5)")
    add_config_flags(t, TrainConfig)
    _add_run_flags(t, "continue the run in --out where it stopped")
    t.set_defaults(func=_cmd_train)


def _add_run_flags(p: argparse.ArgumentParser, resume_help: str) -> None:
    """The flags every training command ends with: threads, resume, quiet."""
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--resume", action="store_true", help=resume_help)
    p.add_argument("--quiet", action="store_true")


def _register_distill(sub: argparse._SubParsersAction) -> None:
    from talkhead.motion.train.configs import METHODS

    d = sub.add_parser("distill", help="distil the teacher into few-step students")
    msub = d.add_subparsers(dest="method", required=True, metavar="METHOD")
    for name, cls in METHODS.items():
        m = msub.add_parser(name, help=cls.__doc__.splitlines()[0].split(": ", 1)[-1])
        m.add_argument("--teacher", default="teacher", help="shipped model name or checkpoint path")
        m.add_argument("--data", required=True, help="corpus directory")
        m.add_argument("--out", required=True, help="directory for student checkpoints (reruns resume)")
        add_config_flags(m, cls)
        m.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
        m.add_argument("--quiet", action="store_true")
        m.set_defaults(func=_cmd_distill)
    _register_live(msub)
    _register_lips(msub)
    _register_lipnet(msub)


def _cmd_live(args: argparse.Namespace) -> None:
    from talkhead.motion.train.live import LiveConfig, distill_live

    set_threads(args.threads)
    cfg = config_from_args(LiveConfig, args)
    report = distill_live(args.base, args.data, args.out, cfg, resume=args.resume, progress=not args.quiet)
    print(f"wrote {args.out} ({report['steps']} steps)")


def _register_live(msub: argparse._SubParsersAction) -> None:
    from talkhead.motion.train.live import LiveConfig

    m = msub.add_parser("live", help="fine-tune a one-step student on the features and windows of live client audio")
    m.add_argument("--base", default=LIVE_MODEL, help="a one-step Whisper student (name or path)")
    m.add_argument("--data", required=True, help="corpus directory (its training clips)")
    m.add_argument("--out", required=True, help="the live student's .safetensors (a rerun with --resume continues)")
    add_config_flags(m, LiveConfig)
    _add_run_flags(m, "continue the run that wrote --out's state file")
    m.set_defaults(func=_cmd_live)


def _cmd_lips(args: argparse.Namespace) -> None:
    from talkhead.motion.train.lips import LipsConfig, finetune_lips

    set_threads(args.threads)
    cfg = config_from_args(LipsConfig, args)
    if cfg.iters < 1 or cfg.batch < 1 or cfg.lr <= 0:
        raise InputError("--iters and --batch must be at least 1, --lr positive")
    _said(finetune_lips(args.init, args.real, args.out, cfg, args.data, resume=args.resume, progress=not args.quiet))


def _said(report: dict) -> None:
    """A real-lips run's one line: what it wrote and whom it learnt from."""
    print(f"wrote {report['out']} ({report['steps']} steps, learnt from {len(report['people'])} people: "
          f"{', '.join(report['people'])})")


def _real_run(m: argparse.ArgumentParser, cls: type, func, what: str) -> None:
    """The flags every real-lips run ends with: --out, the config's own, the run flags; then its command."""
    m.add_argument("--out", required=True, help=f"the {what}'s .safetensors (a rerun with --resume continues)")
    add_config_flags(m, cls)
    _add_run_flags(m, "continue the run that wrote --out's state file")
    m.set_defaults(func=func)


def _register_lips(msub: argparse._SubParsersAction) -> None:
    from talkhead.motion.train.lips import LipsConfig

    m = msub.add_parser("lips", help="fine-tune a motion model's lips on people filmed talking (talkhead data talking)")
    m.add_argument("--init", default=LIPS_MODEL, help="the model to start from (name or path)")
    m.add_argument("--real", required=True, help="a `talkhead data talking` corpus")
    m.add_argument("--data", default=None, help="a synthetic corpus that holds the rest of the face (optional)")
    _real_run(m, LipsConfig, _cmd_lips, "model")


def _cmd_lipnet(args: argparse.Namespace) -> None:
    from talkhead.motion.lipnet import MIN_SPREAD
    from talkhead.motion.train.lipnet import LipNetTrainConfig, train_lipnet

    set_threads(args.threads)
    cfg = config_from_args(LipNetTrainConfig, args)
    if min(cfg.iters, cfg.batch, cfg.frames, cfg.hidden, cfg.members) < 1 or cfg.lr <= 0 or cfg.kernel % 2 == 0:
        raise InputError("--iters, --batch, --frames, --hidden and --members must be at least 1, --lr positive, "
                         "--kernel odd")
    if not -1 <= cfg.ahead <= 4 * (cfg.kernel // 2):
        raise InputError(f"--ahead must be -1 or 0..{4 * (cfg.kernel // 2)} (two convolutions' reach), got {cfg.ahead}")
    if cfg.augmented < 0 or not 0 <= cfg.dropout < 1:
        raise InputError("--augment must be >= 0 and --dropout in [0, 1)")
    if not 0 <= cfg.synthetic_share < 1:
        raise InputError(f"--synthetic-share must be in [0, 1), got {cfg.synthetic_share:g}")
    if not MIN_SPREAD <= cfg.spread <= 1:
        raise InputError(f"--spread must be in [{MIN_SPREAD}, 1], got {cfg.spread:g}")
    if not all(0.5 <= v <= 2 for v in cfg.speeds):
        raise InputError(f"--speeds must each be in [0.5, 2], got {','.join(f'{v:g}' for v in cfg.speeds)}")
    if cfg.teacher and not args.synthetic:
        raise InputError("--teacher labels --synthetic's clips: name a synthetic corpus with --synthetic")
    if not all(1 <= t <= 4 for t in cfg.taps) or len(set(cfg.taps)) != len(cfg.taps):
        raise InputError(f"--taps names Whisper encoder layers 1 to 4, each once, got {','.join(map(str, cfg.taps))}")
    _said(train_lipnet(args.real, args.out, cfg, resume=args.resume, progress=not args.quiet, synthetic=args.synthetic))


def _register_lipnet(msub: argparse._SubParsersAction) -> None:
    from talkhead.motion.train.lipnet import LipNetTrainConfig

    m = msub.add_parser("lipnet", help="train the lip net, which sets the lip opening from speech, on people filmed "
                                       "talking (talkhead data talking)")
    m.add_argument("--real", required=True, help="a `talkhead data talking` corpus")
    m.add_argument("--synthetic", default=None, help="a `talkhead data synth` corpus, mixed in by --synthetic-share")
    _real_run(m, LipNetTrainConfig, _cmd_lipnet, "net")


def register(sub: argparse._SubParsersAction) -> None:
    _register_train(sub)
    _register_distill(sub)

