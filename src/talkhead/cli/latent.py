"""``talkhead latent``: the latent face engine (issue 21), so far its VAE."""

from __future__ import annotations

import argparse

from talkhead.cli.common import numbers, set_threads
from talkhead.errors import InputError


def _cmd_vae(args: argparse.Namespace) -> None:
    from talkhead.render.latent.vae import VAEConfig, train_vae

    set_threads(args.threads)
    if args.steps < 1 or args.batch < 1:
        raise InputError("--steps and --batch must be at least 1")
    cfg = VAEConfig(size=args.size, **({"widths": numbers(args.widths, "--widths", int)} if args.widths else {}))
    if any(w < 8 or w % 8 for w in cfg.widths):
        raise InputError("--widths are multiples of 8 (its group norm has 8 groups)")
    r = train_vae(args.faces, args.out, cfg, args.steps, args.batch, args.lr, args.seed, args.resume, not args.quiet)
    held = "none held out" if r["psnr_heldout_db"] is None else f"{r['psnr_heldout_db']} dB on held-out identities"
    print(f"wrote {args.out}/vae.safetensors: reconstruction PSNR {r['psnr_train_db']} dB on training identities, {held}")


def register(sub: argparse._SubParsersAction) -> None:
    lat = sub.add_parser("latent", help="the latent face engine (in progress): its face VAE")
    lsub = lat.add_subparsers(dest="latent_command", required=True)
    v = lsub.add_parser("vae", help="train the face VAE on crops from `talkhead data faces`")
    v.add_argument("--faces", required=True, help="face crops folder (talkhead data faces)")
    v.add_argument("--out", required=True, help="run folder: vae.safetensors, state.pt, report.json")
    v.add_argument("--size", type=int, default=128, help="crop side the crops were made at")
    v.add_argument("--widths", help="channels of each stride-2 stage, e.g. 32,64,96 (default: VAEConfig's)")
    v.add_argument("--steps", type=int, default=2000)
    v.add_argument("--batch", type=int, default=16)
    v.add_argument("--lr", type=float, default=2e-3)
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    v.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    v.add_argument("--quiet", action="store_true")
    v.set_defaults(func=_cmd_vae)
