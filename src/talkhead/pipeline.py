"""The one path from speech to motion to video; offline generation and streaming share these stages."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from talkhead.audio.tts import Speech
from talkhead.errors import InputError
from talkhead.motion.model import MotionModel
from talkhead.rig import target_motion


@dataclass(frozen=True)
class MotionConfig:
    """How motion is made: a model (name or path) and its sampling, or phoneme targets."""

    model: str | None = None  # None: the default shipped model
    steps: int | None = None  # None: the model's own (a student's step count, 50 for the teacher)
    sampler: str | None = None
    guidance: float = 1.0
    seed: int = 0
    driver: str = "model"  # "model" or "phones"

    def __post_init__(self) -> None:
        if self.steps is not None and self.steps < 1:
            raise InputError(f"--steps must be at least 1, got {self.steps}")


def motion_from_audio(model: MotionModel, wav: np.ndarray, cfg: MotionConfig = MotionConfig()) -> np.ndarray:
    """Mono 16 kHz audio [N] -> motion [T, 58] at 25 fps, T = ceil(N / 640)."""
    feats = model.audio_features(wav)[None]
    gen = torch.Generator().manual_seed(cfg.seed)
    noise = model.init_noise(1, feats.shape[1], gen)
    return model.sample(feats, noise, steps=cfg.steps, sampler=cfg.sampler, guidance=cfg.guidance,
                        generator=gen)[0].numpy()


def motion_from_speech(speech: Speech, cfg: MotionConfig = MotionConfig(),
                       model: MotionModel | None = None) -> np.ndarray:
    """Speech -> motion [T, 58]: from the diffusion model, or from phoneme targets (``driver="phones"``)."""
    if cfg.driver == "phones":
        if not speech.phones:
            raise InputError("the phones driver needs speech with phone timings (use --text, or --driver model)")
        return target_motion(speech.wav, speech.sample_rate, speech.phones, cfg.seed)
    if cfg.driver != "model":
        raise InputError(f"unknown driver {cfg.driver!r}; use 'model' or 'phones'")
    if model is None:
        model = load_model(cfg.model)
    return motion_from_audio(model, speech.wav, cfg)


def load_model(name: str | None) -> MotionModel:
    """A shipped model by name, a checkpoint path, or the default shipped model."""
    from talkhead.motion.model import default_model_name, load

    return load(name or default_model_name())


@dataclass(frozen=True)
class GenerateConfig:
    """One video: where speech and face come from, how motion is made, how frames are drawn."""

    image: str | None = None  # None: the astronaut photo bundled with scikit-image
    audio: str | None = None
    text: str | None = None
    transcript: str | None = None  # what --audio says: aligned to it, its phones can drive the lips
    voice: str = "us-female"
    motion: MotionConfig = MotionConfig()
    size: int | tuple[int, int] = 512  # N (square) or (width, height)
    cadence_stride: int = 1
    device: str = "cpu"
    batch: int = 32


def load_speech(cfg: GenerateConfig) -> Speech:
    """Stage 1: text -> TTS speech with phones, or an audio file -> speech without phones."""
    from talkhead.audio.io import load_audio
    from talkhead.audio.tts import synthesize

    if (cfg.audio is None) == (cfg.text is None):
        raise InputError("give exactly one of --audio FILE or --text TEXT")
    if cfg.text is not None:
        if cfg.transcript is not None:
            raise InputError("--transcript goes with --audio (the TTS knows its own phones)")
        return synthesize(cfg.text, cfg.voice)
    return speech_from_recording(load_audio(cfg.audio), cfg.transcript)


def speech_from_recording(wav: np.ndarray, transcript: str | None = None) -> Speech:
    """A recording as Speech; with its transcript, force-aligned so that it carries phone timings."""
    if transcript is None:
        return Speech(wav, 16_000, [])
    from talkhead.audio.align import align

    return Speech(wav, 16_000, align(wav, transcript))


def render_frames(renderer, motion: np.ndarray, stride: int, batch: int = 32):
    """Stage 3: motion [T, 58] -> frames uint8 [H, W, 3] one by one; with stride K only keyframes are
    rendered and the frames between are blended from their two neighbouring keyframes."""
    from talkhead.rig.cadence import interpolation_weights, keyframes

    if stride <= 1:
        yield from renderer.frames(motion, batch)
        return
    key_idx = keyframes(len(motion), stride)
    keys = renderer(motion[key_idx])
    left, right, w = interpolation_weights(len(motion), key_idx)
    for i in range(len(motion)):
        if w[i] >= 1.0:
            yield keys[right[i]]
        else:
            a, b = keys[left[i]].astype(np.float32), keys[right[i]].astype(np.float32)
            yield np.round(a + w[i] * (b - a)).astype(np.uint8)


def cadence_motion(motion: np.ndarray, stride: int) -> np.ndarray:
    """The motion a cadence-K video shows: keyframes kept, frames between interpolated (lerp/slerp)."""
    from talkhead.rig.cadence import interpolate_motion, keyframes

    if stride <= 1:
        return motion
    key_idx = keyframes(len(motion), stride)
    return interpolate_motion(motion[key_idx], key_idx, len(motion))


def check_output(path: str, suffix: str = ".mp4") -> None:
    """Refuse a bad output path before any work is done."""
    from pathlib import Path

    from talkhead.util import check_writable

    p = Path(path)
    if p.suffix.lower() != suffix:
        raise InputError(f"output must be a {suffix} file: {p}")
    check_writable(p)


def generate(cfg: GenerateConfig, out: str, motion_out: str | None = None, progress: bool = True) -> dict:
    """Photo + speech -> talking-head mp4 (H.264 + AAC, 25 fps); returns each stage's seconds."""
    import time

    from tqdm import tqdm

    from talkhead.render.face import default_photo, load_image
    from talkhead.render.warp import WarpRenderer
    from talkhead.rig.io import save_motion
    from talkhead.video import write_mp4

    check_output(out)
    if cfg.cadence_stride < 1:
        raise InputError("--cadence-stride must be >= 1")
    times: dict[str, float] = {}
    t = time.perf_counter()
    photo = load_image(cfg.image) if cfg.image else default_photo()
    renderer = WarpRenderer(photo, cfg.size, cfg.device, name=cfg.image or "astronaut")
    times["face"] = time.perf_counter() - t
    t = time.perf_counter()
    speech = load_speech(cfg)
    times["speech"] = time.perf_counter() - t
    t = time.perf_counter()
    motion = cadence_motion(motion_from_speech(speech, cfg.motion), cfg.cadence_stride)
    times["motion"] = time.perf_counter() - t
    if motion_out:
        save_motion(motion_out, motion)
    t = time.perf_counter()
    bar = tqdm(total=len(motion), unit="frame", desc="render+encode", disable=not progress)
    frames = render_frames(renderer, motion, cfg.cadence_stride, cfg.batch)
    write_mp4(out, frames, speech.wav, speech.sample_rate, progress=lambda n: bar.update(n - bar.n))
    bar.close()
    times["render_encode"] = time.perf_counter() - t
    return {"frames": len(motion), "seconds": len(motion) / 25, **{f"{k}_s": round(v, 3) for k, v in times.items()}}
