"""``talkhead latent vae|train|distill|export``: the latent face engine's trainings and its ONNX export."""

from __future__ import annotations

import argparse
from pathlib import Path

from talkhead.cli.common import add_config_flags, config_from_args, set_threads
from talkhead.errors import InputError


def _cmd_vae(args: argparse.Namespace) -> None:
    from talkhead.latent.train_vae import VAETrainConfig, train_vae
    from talkhead.latent.vae import VAEConfig

    set_threads(args.threads)
    cfg, tc = config_from_args(VAEConfig, args), config_from_args(VAETrainConfig, args)
    if tc.steps < 1 or tc.batch < 1:
        raise InputError("--steps and --batch must be at least 1")
    if any(w < 8 or w % 8 for w in cfg.widths):
        raise InputError("--widths are multiples of 8 (its group norm has 8 groups)")
    r = train_vae(args.faces, args.out, cfg, tc.steps, tc.batch, tc.lr, tc.seed, args.resume, not args.quiet)
    held = "none held out" if r["psnr_heldout_db"] is None else f"{r['psnr_heldout_db']} dB on held-out identities"
    print(f"wrote {args.out}/vae.safetensors: reconstruction PSNR {r['psnr_train_db']} dB on training identities, {held}")


def _train_config(args: argparse.Namespace, distill: bool = False):
    """LatentTrainConfig from the flags; a distillation's --steps and --lr are the student's (distill_steps,
    distill_lr)."""
    from talkhead.latent.train import LatentTrainConfig

    cfg = config_from_args(LatentTrainConfig, args)
    steps, lr = (cfg.distill_steps, cfg.distill_lr) if distill else (cfg.steps, cfg.lr)
    if min(steps, cfg.batch) < 1 or lr <= 0:
        raise InputError("--steps and --batch must be at least 1 and --lr positive")
    return cfg


def _cmd_train(args: argparse.Namespace) -> None:
    from talkhead.face.framing import CHANNELS
    from talkhead.latent.net import LatentConfig
    from talkhead.latent.train import train_teacher

    set_threads(args.threads)
    net = config_from_args(LatentConfig, args, geometry=CHANNELS if args.geometry else 0)
    if len(net.widths) != 3 or any(w < 8 or w % 8 for w in net.widths):
        raise InputError("--widths are three multiples of 8, e.g. 48,96,128")
    r = train_teacher(args.vae, args.faces, args.out, _train_config(args), net, args.resume, not args.quiet)
    print(f"wrote {args.out}/teacher.safetensors after {r['steps']} steps{_loss(r)}")


def _cmd_distill(args: argparse.Namespace) -> None:
    from talkhead.latent.train import distill_student

    set_threads(args.threads)
    r = distill_student(args.teacher, args.faces, args.out, args.to, _train_config(args, distill=True), args.resume,
                        not args.quiet)
    print(f"wrote {args.out}/student-{args.to}.safetensors after {r['steps']} steps{_loss(r)}")


def _loss(r: dict) -> str:
    return "" if r["loss_last"] is None else f" (loss {r['loss_last']:.4f})"  # None: resumed a finished run


def _cmd_export(args: argparse.Namespace) -> None:
    from talkhead.latent.onnx import export_onnx

    paths = export_onnx(args.engine, args.out)
    print("wrote " + ", ".join(str(p) for p in paths))


def _cmd_ship(args: argparse.Namespace) -> None:
    import torch

    from talkhead.latent.engine import LATENT_DIR, load_engine, save_engine

    if not args.name.replace("-", "").isalnum():
        raise InputError(f"--name is letters, digits and dashes (got {args.name!r})")
    engine = load_engine(args.engine)
    target = (Path(args.dir) if args.dir else LATENT_DIR) / f"{args.name}.safetensors"
    target.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in engine.meta.items() if k not in ("format", "kind", "vae", "latent", "stats", "timesteps")}
    save_engine(target, engine, {**meta, "name": args.name}, dtype=torch.float16)
    print(f"wrote {target} (fp16, {target.stat().st_size / 1e6:.1f} MB)")


def _run_flags(p: argparse.ArgumentParser, faces_help: str = "face crops folder (talkhead data faces)",
               out_help: str = "run folder") -> None:
    p.add_argument("--faces", required=True, help=faces_help)
    p.add_argument("--out", required=True, help=out_help)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out where it stopped")
    p.add_argument("--quiet", action="store_true")


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.latent.net import LatentConfig
    from talkhead.latent.train import LatentTrainConfig
    from talkhead.latent.train_vae import VAETrainConfig
    from talkhead.latent.vae import VAEConfig

    lat = sub.add_parser("latent", help="the latent face engine: train its VAE, teacher and students; export ONNX")
    lsub = lat.add_subparsers(dest="latent_command", required=True)
    v = lsub.add_parser("vae", help="train the face VAE on crops from `talkhead data faces`")
    _run_flags(v, out_help="run folder: vae.safetensors, state.pt, report.json")
    add_config_flags(v, VAEConfig)
    add_config_flags(v, VAETrainConfig)
    v.set_defaults(func=_cmd_vae)
    t = lsub.add_parser("train", help="train the noise-predicting latent teacher (T = 1000) on a VAE's latents")
    t.add_argument("--vae", required=True, help="vae.safetensors (talkhead latent vae)")
    t.add_argument("--geometry", action="store_true", help="also condition on the frame's mouth drawn from the rig")
    add_config_flags(t, LatentConfig, skip=("geometry", "context"))  # context: an avatar's (avatar train)
    add_config_flags(t, LatentTrainConfig, skip=("distill_steps", "distill_lr"))
    _run_flags(t)
    t.set_defaults(func=_cmd_train)
    s = lsub.add_parser("distill", help="distil a few-step student from the teacher's 50-step DDIM")
    s.add_argument("--teacher", required=True, help="teacher.safetensors (talkhead latent train)")
    s.add_argument("--to", type=int, required=True, help="the student's steps: 1, 2, 4, ...")
    add_config_flags(s, LatentTrainConfig, skip=("steps", "lr"))
    _run_flags(s)
    s.set_defaults(func=_cmd_distill)
    e = lsub.add_parser("export", help="export an engine's denoiser (one step) and decoder to ONNX")
    e.add_argument("engine", help="a shipped engine name or a checkpoint")
    e.add_argument("--out", required=True, help="folder for denoiser.onnx and decoder.onnx")
    e.set_defaults(func=_cmd_export)
    sh = lsub.add_parser("ship", help="copy an engine checkpoint into the package as fp16 (a shipped engine name)")
    sh.add_argument("engine", help="a checkpoint (teacher.safetensors, student-K.safetensors)")
    sh.add_argument("--name", required=True, help="shipped name, e.g. latent-student-2")
    sh.add_argument("--dir", help="target folder (default: the package's models/latent)")
    sh.set_defaults(func=_cmd_ship)
