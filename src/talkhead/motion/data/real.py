"""Real recordings with transcripts -> force-aligned clips in the corpus format.

``talkhead data align AUDIO_DIR --transcripts FILE --out DIR`` writes what ``talkhead data synth``
writes (``corpus.json``, ``manifest.jsonl``, shards of audio and phone-driven target motion), so
``talkhead eval``, the benchmarks and training read real speech unchanged. A clip that cannot be
aligned is skipped and listed in ``report.json`` with the reason; the rest of the folder goes on.
Shards are written atomically and a killed run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.audio.align import AlignError, align
from talkhead.audio.io import SAMPLE_RATE, load_audio
from talkhead.config import option
from talkhead.errors import InputError
from talkhead.motion.data.corpus import read_shard_rows, write_shard
from talkhead.rig import n_frames, target_motion
from talkhead.util import atomic_write, clear_stale_parts

AUDIO_SUFFIXES = (".wav", ".flac", ".mp3", ".ogg", ".m4a")


@dataclass(frozen=True)
class AlignConfig:
    """How a folder of recordings becomes a corpus; stored in corpus.json and checked on resume."""

    speaker: str = option("real", "speaker name for per-speaker figures (the manifest's voice)")
    heldout: float = option(1.0, "share of clips for evaluation, picked by a hash of the id (1: all)")
    min_s: float = option(0.5, "skip shorter recordings", flag="--min-seconds")
    max_s: float = 30.0
    min_score: float = -32.0
    clips_per_shard: int = 32
    seed: int = option(0, "seeds the split and the non-verbal motion")


def read_transcripts(path: str | Path) -> dict[str, str]:
    """``ID: text`` or ``ID<TAB>text`` per line (``;`` and ``#`` start comments) -> {id: text}."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such transcript file: {path}")
    out: dict[str, str] = {}
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = line.strip()
        if not line or line[0] in ";#":
            continue
        sep = "\t" if "\t" in line else ":"
        if sep not in line:
            raise InputError(f"{path}:{n}: expected 'ID: text' or 'ID<TAB>text'")
        key, text = line.split(sep, 1)
        out[key.strip()] = text.strip()
    if not out:
        raise InputError(f"{path} holds no transcripts")
    return out


def _split(cid: str, cfg: AlignConfig) -> str:
    h = int(hashlib.sha1(f"{cfg.seed}:{cid}".encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "heldout" if h < cfg.heldout else "train"


def _clip(audio_dir: Path, cid: str, path: Path, text: str, cfg: AlignConfig) -> tuple[dict, np.ndarray, np.ndarray]:
    wav = load_audio(path)
    dur = len(wav) / SAMPLE_RATE
    if not cfg.min_s <= dur <= cfg.max_s:
        raise AlignError(f"{dur:.2f} s is outside {cfg.min_s}-{cfg.max_s} s")
    phones = align(wav, text, cfg.min_score)
    seed = int(hashlib.sha1(cid.encode()).hexdigest()[:8], 16)
    motion = target_motion(wav, SAMPLE_RATE, phones, np.random.default_rng([cfg.seed, seed]))
    row = {"id": cid, "voice": cfg.speaker, "split": _split(cid, cfg), "text": text,
           "file": str(path.relative_to(audio_dir)), "duration": round(dur, 4),
           "frames": n_frames(len(wav), SAMPLE_RATE), "phones": [[p, s, e] for p, s, e in phones]}
    return row, np.clip(np.round(wav * 32767), -32768, 32767).astype(np.int16), motion


def _pairs(audio_dir: Path, transcripts: dict[str, str]) -> tuple[list[tuple[str, Path, str]], list[dict]]:
    """(id, audio path, text) for every transcript with a recording; the rest go to the report."""
    found, missing = [], []
    for cid, text in sorted(transcripts.items()):
        path = next((audio_dir / f"{cid}{s}" for s in AUDIO_SUFFIXES if (audio_dir / f"{cid}{s}").is_file()), None)
        if path is None:
            missing.append({"id": cid, "reason": "no recording with this id"})
        else:
            found.append((cid, path, text))
    return found, missing


def align_folder(audio_dir: str | Path, transcripts: str | Path, out: str | Path, cfg: AlignConfig = AlignConfig(),
                 progress: Callable[[int, int], None] | None = None) -> tuple[list[dict], list[dict]]:
    """Align every recording that has a transcript; returns (manifest rows, skipped clips with reasons)."""
    audio_dir, out = Path(audio_dir), Path(out)
    if not audio_dir.is_dir():
        raise InputError(f"no such folder of recordings: {audio_dir}")
    items, skipped = _pairs(audio_dir, read_transcripts(transcripts))
    if not items:
        raise InputError(f"no recording in {audio_dir} matches an id in {transcripts}")
    (out / "shards").mkdir(parents=True, exist_ok=True)
    meta = {"format": 1, "kind": "aligned", "source": str(audio_dir), **asdict(cfg)}
    if (out / "corpus.json").exists() and json.loads((out / "corpus.json").read_text()) != meta:
        raise InputError(f"{out} holds a corpus made with other settings; use a new --out")
    atomic_write(out / "corpus.json", json.dumps(meta, indent=1).encode())
    clear_stale_parts(out / "shards")
    rows: list[dict] = []
    k = cfg.clips_per_shard
    for shard, lo in enumerate(range(0, len(items), k)):
        path = out / f"shards/shard-{shard:05d}.npz"
        if path.exists():  # made before a kill: its clips and its skips are on disk
            rows += read_shard_rows(path)
            skipped += json.loads((out / f"shards/skipped-{shard:05d}.json").read_text())
        else:
            clips, bad = [], []
            for cid, p, text in items[lo : lo + k]:
                try:
                    row, audio, motion = _clip(audio_dir, cid, p, text, cfg)
                except InputError as e:  # AlignError and undecodable audio alike: skip, report
                    bad.append({"id": cid, "reason": str(e)})
                    continue
                clips.append(({**row, "shard": f"shards/shard-{shard:05d}.npz"}, audio, motion))
            atomic_write(out / f"shards/skipped-{shard:05d}.json", json.dumps(bad).encode())
            rows += write_shard(path, clips)  # after its skips: a shard on disk means both are
            skipped += bad
        if progress:
            progress(min(lo + k, len(items)), len(items))
    atomic_write(out / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    atomic_write(out / "report.json", json.dumps({"clips": len(rows), "skipped": skipped}, indent=1).encode())
    return rows, skipped
