"""The defaults that more than one place uses, written once; the settings of what a user runs (``MotionConfig``,
``GenerateConfig``, ``RenderConfig``: the API's, the CLI's flags are generated from their fields, batch jobs name
them); and the one parser of a frame size. Nothing here imports more than the standard library, so a command's
flags cost nothing to build."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from talkhead.errors import InputError

# How an avatar's lower face is drawn (``avatar.renderer.AvatarRenderer``'s ``mouth``): by its engine; or the chosen
# bank frame's real crop moved to the motion's mouth, no engine; or the engine's, its lips (and a band around them,
# ``avatar.flow.lips_mask``) filmed. The filmed lips follow far better, but are not the default (docs/avatar.md).
AVATAR_MOUTHS = ("engine", "filmed", "lips")

MODELS_DIR = Path(__file__).resolve().parent / "models"  # the shipped models: motion, lips/, latent/

FPS = 25  # motion frames and video frames per second, everywhere
SAMPLE_RATE = 16_000  # speech inside talkhead: mono, 16 kHz
HOP = SAMPLE_RATE // FPS  # speech samples per frame (640)
DEFAULT_VOICE = "us-female"  # espeak-ng's voice: installed with the package's system requirements
LIVE_MODEL = "student-1-whisper"  # the fastest shipped motion model: serve, Pipecat, a live student's base
LIVE_STUDENT = "student-1-whisper-live"  # client audio's motion (serve, Pipecat): the live student of LIVE_MODEL
LIPS_MODEL = "student-4-whisper"  # the best shipped: real-lips fine-tuning starts from it, data talking aligns with it
SAMPLER_NAMES = ("ddim", "ddpm", "dpmpp", "unipc")  # diffusion.samplers.SAMPLERS' keys (a test keeps them so)
MIN_SIDE, MAX_SIDE = 64, 4096  # a video's side in pixels
VIDEO_SIZE = 512  # a made video's side, unless told otherwise (generate, the renderers)
LIVE_SIZE = 256  # a live face's side (serve, Pipecat): 25 frames/s for several sessions on 2 cores


def option(default: Any, help: str = "", **cli: Any) -> Any:
    """A config field whose command-line flag is generated from it (``cli.common.add_config_flags``): its default
    and help are written here only. ``cli``: the flag's name, metavar, choices, a parser (``type``), ``nargs``..."""
    return dataclasses.field(default=default, metadata={"help": help, **cli})


def parse_size(text: str) -> tuple[int, int]:
    """"512" (square) or "WIDTHxHEIGHT" such as "1080x1920" -> (width, height); ValueError naming the problem."""
    parts = str(text).lower().split("x")
    if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"expected N or WIDTHxHEIGHT (e.g. 512 or 1080x1920), got {text!r}")
    w, h = int(parts[0]), int(parts[-1])
    if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        raise ValueError(f"each side must be {MIN_SIDE}..{MAX_SIDE} pixels, got {text!r}")
    return w, h


@dataclass(frozen=True)
class MotionConfig:
    """How motion is made: a model (name or path) and its sampling, or phoneme targets."""

    model: str | None = option(None, "motion model (talkhead models): a shipped name or a checkpoint; "
                                     "default: the best shipped")
    steps: int | None = option(None, "sampling steps (default: the model's own: a student's, 50 for the teacher)")
    sampler: str | None = option(None, "sampler (default: the model's own)", choices=SAMPLER_NAMES)
    guidance: float = option(1.0, "classifier-free guidance on audio (1 = off)")
    seed: int = option(0, "noise seed: the same seed, the same motion")
    driver: str = "model"  # "model" or "phones"; its flag is resolved by --transcript (cli.generate.driver_arg)

    def __post_init__(self) -> None:
        if self.steps is not None and self.steps < 1:
            raise InputError(f"--steps must be at least 1, got {self.steps}")


@dataclass(frozen=True)
class GenerateConfig:
    """One video: where speech and face come from, how motion is made, how frames are drawn."""

    image: str | None = option(None, "face photo (default: the astronaut from scikit-image)")
    audio: str | None = option(None, "speech: WAV, FLAC, MP3 or a video file's audio")
    text: str | None = option(None, "text to speak with the built-in TTS")
    transcript: str | None = option(None, "what --audio says: aligned to the recording, its phones drive the lips "
                                          "(the best lip sync for real speech; implies --driver phones)")
    voice: str = option(DEFAULT_VOICE, "TTS voice (talkhead tts --list-voices)")
    motion: MotionConfig = MotionConfig()
    size: int | tuple[int, int] = option(VIDEO_SIZE, "frame size: N for N x N, or WIDTHxHEIGHT such as 1080x1920",
                                         type=parse_size)
    cadence_stride: int = option(1, "render every K-th frame, blend the rest")
    renderer: str = option("warp", "how frames are drawn: warp (the photo warped by the rig) or latent (the latent "
                                   "face engine)")  # see talkhead.render.RENDERERS
    latent_engine: str | None = option(None, "--renderer latent: a shipped engine (latent-student-1|2|4, "
                                             "latent-teacher) or a checkpoint; default latent-student-4")
    avatar: str | None = option(None, "an .avatar file (talkhead avatar train): the person's own frames, lower face "
                                      "redrawn; frames at the video's own size (--size is ignored)")
    avatar_mouth: str = option("engine", "--avatar: how its lower face is drawn: engine (the avatar's latent "
                                         "engine), lips (the engine's, the lips the person's filmed ones moved to the "
                                         "motion's) or filmed (their filmed mouth moved, no engine)",
                               choices=AVATAR_MOUTHS)
    device: str = option("cpu", choices=("cpu", "cuda"))
    batch: int = option(32, "frames drawn at once")

    @property
    def stage_stride(self) -> int:
        """The frame stage's cadence: the latent renderer interpolates latents itself, so its stage draws all."""
        return 1 if self.renderer == "latent" else self.cadence_stride


@dataclass(frozen=True)
class RenderConfig:
    """What ``talkhead render`` draws: a motion file on a photo (``render_motion``)."""

    motion: str
    image: str | None = option(None, "photo (default: the astronaut from scikit-image); the video shows all of it")
    audio: str | None = option(None, "sound track (WAV, FLAC, MP3 or a video's audio); none: a silent video")
    size: tuple[int, int] | None = option(None, "frame size N or WIDTHxHEIGHT (default: the photo's own, odd sides "
                                                "less one pixel)", type=parse_size)
    device: str = option("cpu", choices=("cpu", "cuda"))
