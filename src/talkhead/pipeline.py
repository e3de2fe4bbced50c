"""The one path from speech to motion to video; offline generation and streaming share these stages.

The API's front door: ``MotionConfig`` and ``load_model`` (from ``motion``) are here beside ``stream`` and
``generate``.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import numpy as np

from talkhead.audio.features import warm
from talkhead.audio.tts import Speech
from talkhead.config import FPS, MAX_SIDE, GenerateConfig, RenderConfig
from talkhead.errors import InputError
from talkhead.motion.model import MotionModel, in_person_range, load_model, on_face
from talkhead.motion.stream import OFFLINE, Hearing, MotionConfig, motion_from_audio
from talkhead.rig import target_motion


def motion_from_speech(speech: Speech, cfg: MotionConfig = MotionConfig(), model: MotionModel | None = None,
                       lip_range: tuple[float, float] | None = None) -> np.ndarray:
    """Speech -> motion [T, 58]: from the diffusion model, or from phoneme targets (``driver="phones"``);
    ``lip_range``: a person's own (``motion.model.in_person_range``; an avatar's ``Avatar.lip_range``)."""
    if cfg.driver == "phones":
        if not speech.phones:
            raise InputError("the phones driver needs speech with phone timings (use --text, or --driver model)")
        return target_motion(speech.wav, speech.sample_rate, speech.phones, cfg.seed)
    if cfg.driver != "model":
        raise InputError(f"unknown driver {cfg.driver!r}; use 'model' or 'phones'")
    if model is None:
        model = load_model(cfg.model)
    return motion_from_audio(in_person_range(model, lip_range), speech.wav, cfg)


def for_renderer(model: MotionModel, renderer) -> MotionModel:
    """``model`` as ``stream`` drives ``renderer`` with it: a renderer with a ``lip_range`` (an avatar's) has the
    lips opened in that person's own range; one with a ``lip_rig`` (the warp renderer's photo) has the lip net's
    opening solved on that face (``on_face``)."""
    return on_face(in_person_range(model, getattr(renderer, "lip_range", None)), getattr(renderer, "lip_rig", None))


def renderer_options(cfg: GenerateConfig, latents_only: bool = False) -> dict:
    """What the chosen renderer takes beyond photo and size: the latent one samples its own cadence."""
    if cfg.renderer != "latent":
        return {}
    from talkhead.latent.renderer import DEFAULT_ENGINE

    return {"engine": cfg.latent_engine or DEFAULT_ENGINE, "stride": cfg.cadence_stride,
            "seed": cfg.motion.seed, "output": "latents" if latents_only else "frames"}


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


class Frame(NamedTuple):
    """One video frame of a stream: its index (25 fps), the image, and the motion it shows."""

    index: int
    image: np.ndarray  # uint8 [H, W, 3]
    motion: np.ndarray  # [58], rig units


def stream(chunks: Iterable[np.ndarray], model: MotionModel, renderer, cfg: MotionConfig = MotionConfig(),
           stride: int = 1, batch: int = 32, hearing: Hearing = OFFLINE, tail: np.ndarray | None = None
           ) -> Iterator[Frame]:
    """Speech arriving in chunks (16 kHz mono) -> frames, each as soon as it is final.

    Stages: audio front end in blocks, motion windows continuing the previous window's tail, then the
    renderer in batches fixed by frame index. ``generate`` is this generator fed the whole recording, so a
    stream gives the same frames however speech is chunked. ``hearing`` is how the motion stream hears the
    speech (``motion.stream.Hearing``: offline by default) and ``tail``, the motion shown just before, which the
    speech continues from (a live face).
    The model drives the renderer as ``for_renderer`` says (the person's lip range, the face's own lips).
    """
    from talkhead.motion.stream import MotionStream

    model = for_renderer(model, renderer)
    motion = MotionStream(model, cfg, hearing, tail)

    def blocks() -> Iterator[np.ndarray]:
        for chunk in chunks:
            yield from motion.push(chunk)
        yield from motion.flush()

    yield from frames_from_motion(blocks(), renderer, stride, batch)


def frames_from_motion(blocks: Iterable[np.ndarray], renderer, stride: int = 1, batch: int = 32) -> Iterator[Frame]:
    """Motion arriving in blocks [m, 58] -> frames: the frame stage of ``stream``, alone (e.g. for phone targets)."""
    from talkhead.render.stage import FrameStage

    stage, pending, index = FrameStage(renderer, stride, batch), deque(), 0  # motion rows not yet drawn

    def paired(images: Iterator[np.ndarray]) -> Iterator[Frame]:
        nonlocal index
        for image in images:
            yield Frame(index, image, pending.popleft())
            index += 1

    for block in blocks:
        pending.extend(np.asarray(block, np.float32))
        yield from paired(stage.push(block))
    yield from paired(stage.flush())


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


def generate(cfg: GenerateConfig, out: str | None, motion_out: str | None = None, progress: bool = True,
             latents_out: str | None = None) -> dict:
    """Photo + speech -> talking-head mp4 (H.264 + AAC, 25 fps); returns each stage's seconds.

    The model driver runs ``stream`` over the whole recording: offline and live share one path.
    ``latents_out`` (latent renderer): also, or with ``out`` None only, write the frame latents
    for ``talkhead decode`` (E2, deferred decoding).
    """
    from tqdm import tqdm

    from talkhead.rig.io import save_motion
    from talkhead.util import prefetch
    from talkhead.video import write_mp4

    _check_outputs(cfg, out, latents_out)
    times: dict[str, float] = {}
    model = _timed(times, "model", _motion_model, cfg.motion)
    renderer = _timed(times, "face", face_renderer, cfg, latents_only=out is None)
    if latents_out and out is not None:
        renderer.recorded = []
    speech = _timed(times, "speech", load_speech, cfg)
    t = time.perf_counter()
    frames = _frames(cfg, model, renderer, speech)
    shown: list[np.ndarray] = []
    bar = tqdm(total=-(-len(speech.wav) * FPS // speech.sample_rate), unit="frame", desc="generate",
               disable=not progress)

    def images() -> Iterator[np.ndarray]:
        for f in frames:
            shown.append(f.motion)
            bar.update(1)
            yield f.image

    if out is not None:
        write_mp4(out, prefetch(images()), speech.wav, speech.sample_rate)  # render beside the encoder
        latents = renderer.recorded if latents_out else None
    else:
        latents = list(images())
    bar.close()
    times["motion_render_encode"] = time.perf_counter() - t
    if latents_out:
        from talkhead.latent.renderer import LatentVideo

        LatentVideo(np.stack(latents), renderer.engine_name, renderer.background, renderer.box, speech.wav).save(latents_out)
    if motion_out:
        save_motion(motion_out, cadence_motion(np.stack(shown), cfg.cadence_stride))
    return {"frames": len(shown), "seconds": len(shown) / FPS, **{f"{k}_s": round(v, 3) for k, v in times.items()}}


def _motion_model(cfg: MotionConfig) -> MotionModel | None:
    """The model ``cfg`` drives with (None: phone targets), its speech encoder set loading in the background while
    the photo and the speech are read."""
    if cfg.driver == "phones":
        return None
    model = load_model(cfg.model)
    warm(model.hearing, OFFLINE.precision)
    return model


def _timed(times: dict[str, float], stage: str, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, its wall time kept in ``times[stage]``."""
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    times[stage] = time.perf_counter() - t
    return out


def face_renderer(cfg: GenerateConfig, latents_only: bool = False):
    """The renderer a config asks for: an avatar's (its own frames), or the photo's through ``make_renderer``."""
    from talkhead.face.detect import default_photo, load_image
    from talkhead.render import make_renderer

    if cfg.avatar is not None:
        if cfg.image is not None:
            raise InputError("give --image PHOTO or --avatar FILE, not both")
        from talkhead.avatar.file import load_avatar

        avatar = load_avatar(cfg.avatar)
        if avatar.stored is None:  # its base views are made now: seconds before the first frame, at every run
            print(f"talkhead: {cfg.avatar} was trained before avatar files stored their base frames' views; "
                  f"'talkhead avatar update {cfg.avatar} --out {cfg.avatar}' makes it start sooner", file=sys.stderr)
        return make_renderer("avatar", avatar=avatar, seed=cfg.motion.seed, mouth=cfg.avatar_mouth)
    if cfg.avatar_mouth != "engine":
        raise InputError(f"--avatar-mouth {cfg.avatar_mouth} draws an avatar's mouth: give --avatar FILE")
    photo = load_image(cfg.image) if cfg.image else default_photo()
    return make_renderer(cfg.renderer, photo, cfg.size, cfg.device, cfg.image or "astronaut",
                         **renderer_options(cfg, latents_only=latents_only))


def _frames(cfg: GenerateConfig, model: MotionModel | None, renderer, speech: Speech) -> Iterator[Frame]:
    """The whole recording through the stream (model driver) or its phone targets through the frame stage."""
    if model is None:
        return frames_from_motion([motion_from_speech(speech, cfg.motion)], renderer, cfg.stage_stride, cfg.batch)
    return stream([speech.wav], model, renderer, cfg.motion, cfg.stage_stride, cfg.batch)


def _check_outputs(cfg: GenerateConfig, out: str | None, latents_out: str | None) -> None:
    """Refuse bad outputs before any work is done."""
    if out is None and latents_out is None:
        raise InputError("give -o OUT.mp4, or --latents-out FILE.npz with --renderer latent (or both)")
    if out is not None:
        check_output(out)
    if cfg.avatar is not None and (latents_out is not None or cfg.renderer != "warp"):
        raise InputError("--avatar draws with the avatar's own engine: drop --renderer and --latents-out")
    if latents_out is not None:
        if cfg.renderer != "latent":
            raise InputError("--latents-out keeps the latent engine's latents: it needs --renderer latent")
        check_output(latents_out, ".npz")
    if cfg.cadence_stride < 1:
        raise InputError("--cadence-stride must be >= 1")


def render_motion(cfg: RenderConfig, out: str, progress: bool = False) -> dict:
    """Draw ``cfg.motion`` on the photo and write the mp4 (atomically); returns frames, size and seconds."""
    from tqdm import tqdm

    from talkhead.audio.io import SAMPLE_RATE, load_audio
    from talkhead.face.detect import default_photo, load_image
    from talkhead.rig.io import load_motion
    from talkhead.util import prefetch
    from talkhead.video import write_mp4
    from talkhead.warp.renderer import WarpRenderer

    check_output(out)
    motion = load_motion(cfg.motion)
    if len(motion) == 0:
        raise InputError(f"{cfg.motion}: no frames of motion")
    photo = load_image(cfg.image) if cfg.image else default_photo()
    if cfg.size is None and max(photo.shape[:2]) > MAX_SIDE:  # its own size: at most what --size allows
        raise InputError(f"the photo is {photo.shape[1]}x{photo.shape[0]}: give --size WxH "
                         f"(at most {MAX_SIDE} a side)")
    audio = load_audio(cfg.audio) if cfg.audio else None
    renderer = WarpRenderer(photo, cfg.size, cfg.device, name=cfg.image or "astronaut", full_frame=True)
    bar = tqdm(total=len(motion), unit="frame", desc="render", disable=not progress)
    write_mp4(out, prefetch(renderer.frames(motion)), audio, SAMPLE_RATE, progress=lambda n: bar.update(1))
    bar.close()
    return {"frames": len(motion), "size": renderer.size, "seconds": len(motion) / FPS,
            "audio_seconds": None if audio is None else len(audio) / SAMPLE_RATE}
