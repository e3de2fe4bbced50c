"""The defaults that more than one place uses, written once; and the one parser of a frame size."""

from __future__ import annotations

from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "models"  # the shipped models: motion, lips/, latent/

FPS = 25  # motion frames and video frames per second, everywhere
SAMPLE_RATE = 16_000  # speech inside talkhead: mono, 16 kHz
HOP = SAMPLE_RATE // FPS  # speech samples per frame (640)
DEFAULT_VOICE = "us-female"  # espeak-ng's voice: installed with the package's system requirements
LIVE_MODEL = "student-1-whisper"  # the fastest shipped motion model: serve, Pipecat, a live student's base
MIN_SIDE, MAX_SIDE = 64, 4096  # a video's side in pixels


def parse_size(text: str) -> tuple[int, int]:
    """"512" (square) or "WIDTHxHEIGHT" such as "1080x1920" -> (width, height); ValueError naming the problem."""
    parts = str(text).lower().split("x")
    if len(parts) not in (1, 2) or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"expected N or WIDTHxHEIGHT (e.g. 512 or 1080x1920), got {text!r}")
    w, h = int(parts[0]), int(parts[-1])
    if not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        raise ValueError(f"each side must be {MIN_SIDE}..{MAX_SIDE} pixels, got {text!r}")
    return w, h
