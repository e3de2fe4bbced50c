"""``talkhead motion``, ``talkhead models`` and ``talkhead eval``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from talkhead.cli.common import add_config_flags, add_video_limit, config_from_args
from talkhead.cli.generate import add_speech_args
from talkhead.config import FPS
from talkhead.errors import InputError


def _cmd_motion(args: argparse.Namespace) -> None:
    from talkhead.audio.io import load_audio
    from talkhead.audio.tts import synthesize
    from talkhead.cli.generate import driver_arg
    from talkhead.motion.stream import MotionConfig
    from talkhead.pipeline import motion_from_speech, speech_from_recording
    from talkhead.rig.io import save_motion

    out = Path(args.out)
    if out.suffix not in (".csv", ".npy"):
        raise InputError(f"output must end in .csv or .npy: {out}")
    if args.from_video is not None:
        _motion_from_video(args, out)
        return
    if (args.audio is None) == (args.text is None):
        raise InputError("give exactly one of --audio FILE, --text TEXT or --from-video VIDEO")
    driver = driver_arg(args)
    speech = synthesize(args.text, args.voice) if args.text else speech_from_recording(load_audio(args.audio), args.transcript)
    cfg = config_from_args(MotionConfig, args, driver=driver)
    motion = motion_from_speech(speech, cfg)
    save_motion(out, motion)
    print(f"wrote {out}: {len(motion)} frames at {FPS} fps ({len(motion) / FPS:.2f} s)")


def _motion_from_video(args: argparse.Namespace, out: Path) -> None:
    """``--from-video``: the motion fitted to the video's face, frame by frame (notes on stderr)."""
    import sys

    from talkhead.face.capture import VideoConfig, capture
    from talkhead.rig.io import save_motion
    from talkhead.util import check_writable

    speech = {"--audio": args.audio, "--text": args.text, "--transcript": args.transcript, "--driver": args.driver}
    given = [flag for flag, value in speech.items() if value]
    if given:
        raise InputError(f"--from-video takes the motion from the video: drop {' and '.join(given)}")
    check_writable(out)  # before the slow part
    got = capture(args.from_video, VideoConfig(), progress=not args.quiet,
                  say=lambda msg: print(f"talkhead: {msg}", file=sys.stderr))
    save_motion(out, got["motion"])
    n, lost = len(got["motion"]), sum(b - a + 1 for a, b in got["lost"])
    print(f"wrote {out}: {n} frames at {FPS} fps ({n / FPS:.2f} s), fitted to the face in {n - lost} "
          f"(lost in {lost})")


def _cmd_models(args: argparse.Namespace) -> None:
    from talkhead.checkpoint import load_checkpoint
    from talkhead.config import MODELS_DIR
    from talkhead.motion.model import average_weights, default_model_name, load, shipped_models

    if args.export:
        import torch

        if not args.name:
            raise InputError("--export needs --name NAME (e.g. teacher, student-1)")
        target = Path(args.dir) if args.dir else MODELS_DIR
        model = average_weights([load(p) for p in args.export])
        if args.default_sampling:
            model.sampling = _default_sampling(args.default_sampling, model.sampling)
        extra, kind = {"name": args.name}, ""
        if len(args.export) > 1:
            extra["averaged"], kind = list(args.export), f"the mean of {len(args.export)} checkpoints' weights, "
        model.save(target / f"{args.name}.safetensors", extra, dtype=torch.float16)
        print(f"wrote {target / (args.name + '.safetensors')} ({kind}fp16)")
        return
    paths = shipped_models()
    if not paths:
        print("no shipped models")
        return
    default = default_model_name()
    for p in paths:
        _, meta = load_checkpoint(p)
        sampling = meta.get("sampling", {})
        steps = len(sampling["timesteps"]) if "timesteps" in sampling else sampling.get("steps")
        mark = "*" if p.stem == default else " "
        print(f"{mark} {p.stem:16s} {meta.get('kind', '?'):10s} steps={steps:<3} sampler={sampling.get('sampler', 'ddim'):6s}"
              f" {p.stat().st_size / 1e6:.1f} MB")
    from talkhead.latent.engine import LATENT_DIR
    from talkhead.latent.renderer import DEFAULT_ENGINE

    for p in sorted(LATENT_DIR.glob("*.safetensors")):  # generate --renderer latent --latent-engine NAME
        _, meta = load_checkpoint(p)
        mark = "*" if p.stem == DEFAULT_ENGINE else " "
        print(f"{mark} {p.stem:16s} latent     steps={len(meta['timesteps']):<3} sampler=ddim   {p.stat().st_size / 1e6:.1f} MB")
    print("* default")


def _default_sampling(text: str, current: dict) -> dict:
    """``SAMPLER@STEPS`` -> the sampling metadata of a model that runs on a trailing grid (not a student's own)."""
    from talkhead.diffusion.samplers import SAMPLERS

    sampler, _, steps = text.partition("@")
    if sampler not in SAMPLERS or not steps.isdigit() or int(steps) < 1:
        raise InputError(f"--default-sampling takes SAMPLER@STEPS with a sampler of {', '.join(sorted(SAMPLERS))}, "
                         f"e.g. unipc@4 (got {text!r})")
    if "timesteps" in current:
        raise InputError("--default-sampling: this checkpoint is a student with its own step grid")
    return {"sampler": sampler, "steps": int(steps)}


def _cmd_eval(args: argparse.Namespace) -> None:
    from talkhead.bench.evaluate import evaluate
    from talkhead.motion.model import load_model
    from talkhead.util import atomic_write

    model = load_model(args.model)
    seeds = {} if args.seeds is None else {"seeds": args.seeds}  # unset: evaluate's own
    result = {"model": args.model, **evaluate(model, args.data, steps=args.steps, sampler=args.sampler,
                                               clips=args.clips, guidance=args.guidance, **seeds)}
    text = json.dumps(result, indent=1)
    if args.out:
        atomic_write(args.out, text.encode())
    print(text)


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.config import MotionConfig

    m = sub.add_parser("motion", help="speech, or a face video, -> 58-channel motion CSV "
                                      "(ARKit blendshapes + head pose, 25 fps)")
    add_speech_args(m)
    m.add_argument("--from-video", metavar="VIDEO",
                   help="instead of speech: the motion of the face in this video (any container or frame "
                        "rate, audio not needed), fitted frame by frame; frames where the face is lost are "
                        "filled from either side and listed")
    m.add_argument("-o", "--out", required=True, help="output .csv (Live Link Face style) or .npy")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    add_config_flags(m, MotionConfig, skip=("driver",))
    add_video_limit(m)
    m.set_defaults(func=_cmd_motion)

    ls = sub.add_parser("models", help="list the shipped motion models (or --export one)")
    ls.add_argument("--export", metavar="CKPT", nargs="+",
                    help="store this checkpoint as a shipped model (fp16); several: the mean of their weights")
    ls.add_argument("--name", help="name to ship it under, with --export")
    ls.add_argument("--dir", help="with --export: write here instead of the package's models/ folder")
    ls.add_argument("--default-sampling", metavar="SAMPLER@STEPS",
                    help="with --export: the sampling the shipped file uses unless told otherwise, e.g. unipc@4 "
                         "(a student keeps its own step grid)")
    ls.set_defaults(func=_cmd_models)

    e = sub.add_parser("eval", help="evaluate a motion model on a corpus' held-out voices (JSON)")
    e.add_argument("--data", required=True, nargs="+",
                   help="corpus directories (synthetic or aligned real speech); their held-out splits are pooled")
    e.add_argument("--clips", type=int, default=None, help="limit the number of held-out clips")
    e.add_argument("--seeds", type=int, default=None, help="samples per clip for diversity (default: evaluate's, 3)")
    e.add_argument("--out", help="write the JSON here too")
    add_config_flags(e, MotionConfig, skip=("driver", "seed"))
    e.set_defaults(func=_cmd_eval)
