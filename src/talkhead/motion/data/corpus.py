"""The synthetic training corpus: TTS speech, its phones and target motion, in shards.

Layout of a corpus directory::

    corpus.json            what made it (seed, minutes, voices, held-out voices)
    manifest.jsonl         one row per clip: id, voice, split, text, duration, frames, shard, phones
    shards/shard-00000.npz per clip: <id>/audio (int16, 16 kHz), <id>/motion (float32 [T, 58])

Shard k is a pure function of (seed, k), so a corpus is deterministic for a
seed, and a killed run resumes by skipping the shards already on disk (each
written atomically) and rewriting the manifest.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import numpy as np

from talkhead.audio.tts import CORPUS_VOICES, HELD_OUT_VOICES, SAMPLE_RATE, VOICES, get_voice, synthesize
from talkhead.config import option
from talkhead.errors import InputError
from talkhead.motion.data.text import paragraph
from talkhead.rig import n_frames, target_motion
from talkhead.util import atomic_write, clear_stale_parts

FORMAT_VERSION = 1


@dataclass(frozen=True)
class CorpusConfig:
    """What a corpus is made of; stored in corpus.json and checked on resume."""

    minutes: float = 60.0
    seed: int = option(0, "seeds the texts, voices and motion")
    clips_per_shard: int = 32
    min_s: float = 2.0
    max_s: float = 12.0
    voices: tuple[str, ...] = CORPUS_VOICES
    held_out: tuple[str, ...] = HELD_OUT_VOICES


VOICE_SETS: dict[str, tuple[str, ...]] = {
    "standard": CORPUS_VOICES,  # the teacher's corpus
    "wide": tuple(VOICES),  # plus the extra voices: more speakers for a student to match its teacher on
}


def _clip(cfg: CorpusConfig, shard: int, index: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """One clip, fully determined by (seed, shard, index): manifest row, int16 audio, motion."""
    rng = np.random.default_rng([cfg.seed, shard, index])
    voice = cfg.voices[int(rng.integers(len(cfg.voices)))]
    v = get_voice(voice)
    rate = int(v.rate * rng.uniform(0.85, 1.15))
    pitch = int(np.clip(v.pitch + rng.integers(-10, 11), 0, 99))
    for _ in range(20):
        text = paragraph(rng, int(rng.integers(1, 4)))
        speech = synthesize(text, voice, rate=rate, pitch=pitch)
        if cfg.min_s <= speech.duration <= cfg.max_s:
            break
    else:  # a clip outside the range is trimmed rather than dropped: determinism over purity
        pass
    motion = target_motion(speech.wav, speech.sample_rate, speech.phones, rng)
    cid = f"s{shard:05d}c{index:03d}"
    row = {
        "id": cid, "voice": voice, "split": "heldout" if voice in cfg.held_out else "train",
        "text": text, "rate": rate, "pitch": pitch, "duration": round(speech.duration, 4),
        "frames": n_frames(len(speech.wav), SAMPLE_RATE), "shard": f"shards/shard-{shard:05d}.npz",
        "phones": [[p.phone, round(p.start, 5), round(p.end, 5)] for p in speech.phones],
    }
    audio = np.clip(np.round(speech.wav * 32767), -32768, 32767).astype(np.int16)
    return row, audio, motion


def write_shard(path: Path, clips: list[tuple[dict, np.ndarray, np.ndarray]]) -> list[dict]:
    """Store (row, int16 audio, motion) clips in one shard file, atomically; returns the rows."""
    arrays: dict[str, np.ndarray] = {}
    for row, audio, motion in clips:
        arrays[f"{row['id']}/audio"] = audio
        arrays[f"{row['id']}/motion"] = motion
    rows = [row for row, _, _ in clips]
    arrays["rows"] = np.frombuffer(json.dumps(rows).encode(), np.uint8)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())
    return rows


def _make_shard(args: tuple[CorpusConfig, int, str]) -> list[dict]:
    cfg, shard, out = args
    clips = [_clip(cfg, shard, i) for i in range(cfg.clips_per_shard)]
    return write_shard(Path(out) / clips[0][0]["shard"], clips)


def read_shard_rows(path: Path) -> list[dict]:
    """The manifest rows stored inside a shard."""
    with np.load(path) as z:
        return json.loads(z["rows"].tobytes().decode())


def _check_config(out: Path, cfg: CorpusConfig) -> None:
    meta = out / "corpus.json"
    want = {"format": FORMAT_VERSION, **asdict(cfg)}
    want.pop("minutes")  # a resumed or extended run may ask for more minutes
    if meta.exists():
        have = json.loads(meta.read_text())
        have.pop("minutes", None)
        if have != json.loads(json.dumps(want)):
            raise InputError(f"{out} holds a corpus made with other settings; use a new --out")


def synth_corpus(out: str | Path, cfg: CorpusConfig, workers: int = 2,
                 progress: Callable[[float], None] | None = None) -> list[dict]:
    """Make (or resume) a corpus of at least ``cfg.minutes`` of speech; returns the manifest rows."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "shards").mkdir(exist_ok=True)
    _check_config(out, cfg)
    atomic_write(out / "corpus.json", json.dumps({"format": FORMAT_VERSION, **asdict(cfg)}, indent=1).encode())
    clear_stale_parts(out / "shards")  # left by a killed run; the shard it was writing is made again
    target = cfg.minutes * 60.0
    rows: list[dict] = []
    total, shard = 0.0, 0

    def todo():
        k = shard
        while True:
            yield cfg, k, str(out)
            k += 1

    # Shards already on disk are read, the rest made in order; stop at the first shard that reaches the target.
    while total < target and (out / f"shards/shard-{shard:05d}.npz").exists():
        got = read_shard_rows(out / f"shards/shard-{shard:05d}.npz")
        rows += got
        total += sum(r["duration"] for r in got)
        shard += 1
        if progress:
            progress(min(total, target))
    if total < target:
        ctx = get_context("fork")
        with ctx.Pool(workers) if workers > 1 else _InlinePool() as pool:
            for got in pool.imap(_make_shard, todo()):
                rows += got
                total += sum(r["duration"] for r in got)
                shard += 1
                if progress:
                    progress(min(total, target))
                if total >= target:
                    break
    for extra in (out / "shards").glob("shard-*.npz"):
        if int(extra.stem.split("-")[1]) >= shard:
            extra.unlink()  # made ahead by a worker past the target: not part of this corpus
    clear_stale_parts(out / "shards")  # a worker stopped mid-write when the target was reached
    atomic_write(out / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    return rows


class _InlinePool:
    """The Pool interface in this process, for workers=1."""

    def __enter__(self) -> "_InlinePool":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def imap(self, fn, items):
        return map(fn, items)


def load_manifest(corpus: str | Path) -> list[dict]:
    """Rows of a finished corpus."""
    path = Path(corpus) / "manifest.jsonl"
    if not path.is_file():
        raise InputError(f"{corpus} is not a talkhead corpus (no manifest.jsonl); make one with `talkhead data synth`")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
