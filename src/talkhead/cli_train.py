"""``talkhead train``: the teacher's training command."""

from __future__ import annotations

import argparse

from talkhead.errors import InputError


def _cmd_train(args: argparse.Namespace) -> None:
    import torch

    from talkhead.audio.features import FeatureConfig
    from talkhead.motion.denoiser import DenoiserConfig
    from talkhead.train.loop import TrainConfig, train

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputError("--device cuda: no CUDA device is available")
    if args.audio_kernel < 1 or args.audio_kernel % 2 == 0:
        raise InputError(f"--audio-kernel must be an odd number >= 1, got {args.audio_kernel}")
    features = FeatureConfig(kind=args.features)
    model_cfg = DenoiserConfig(width=args.width, depth=args.depth, heads=args.heads, audio_kernel=args.audio_kernel,
                               audio_dim=features.dim)
    cfg = TrainConfig(steps=args.steps, batch=args.batch, lr=args.lr, val_every=args.val_every,
                      ckpt_every=args.ckpt_every, seed=args.seed, device=args.device, val_clips=args.val_clips,
                      snr_min=args.snr_min, snr_max=args.snr_max, velocity=args.velocity,
                      stop_at=args.stop_at, augmented=args.augment)
    if args.augment < 0:
        raise InputError(f"--augment must be >= 0, got {args.augment}")
    path = train(args.data, args.out, model_cfg, cfg, resume=args.resume, progress=not args.quiet, features=features)
    print(f"wrote {path}")


def register(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("train", help="train the motion diffusion teacher on a corpus")
    t.add_argument("--data", required=True, nargs="+",
                   help="corpus directories (talkhead data synth / data align), pooled; the first one's "
                        "held-out voices validate")
    t.add_argument("--features", choices=["logmel", "whisper"], default="logmel",
                   help="audio front end, recorded in the checkpoint (README, 'Real speech')")
    t.add_argument("--augment", type=int, default=0,
                   help="augmented copies of each clip's audio (telephone, room, noise, level), cached per corpus")
    t.add_argument("--out", required=True, help="run directory: checkpoints, metrics.jsonl")
    t.add_argument("--steps", type=int, default=4000)
    t.add_argument("--batch", type=int, default=64)
    t.add_argument("--lr", type=float, default=4e-4)
    t.add_argument("--width", type=int, default=192)
    t.add_argument("--depth", type=int, default=4)
    t.add_argument("--heads", type=int, default=4)
    t.add_argument("--audio-kernel", type=int, default=5, help="frames each audio convolution sees (odd)")
    t.add_argument("--snr-min", type=float, default=1.0, help="truncated-SNR loss weight floor (0: plain x0 MSE)")
    t.add_argument("--snr-max", type=float, default=5.0, help="truncated-SNR loss weight cap")
    t.add_argument("--velocity", type=float, default=1.0, help="weight of the temporal (frame-difference) loss")
    t.add_argument("--val-every", type=int, default=500)
    t.add_argument("--val-clips", type=int, default=16)
    t.add_argument("--ckpt-every", type=int, default=200)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    t.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    t.add_argument("--stop-at", type=int, default=0,
                   help="checkpoint and stop at this step; --resume continues on the same LR schedule")
    t.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=_cmd_train)
