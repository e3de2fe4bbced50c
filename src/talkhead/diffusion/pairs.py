"""Stored teacher samples: (noise, conditioning, teacher output) sets, made once and reused.

Trajectory distillation regresses a student's whole run onto them, and the step benchmark scores
students against them. A set is written in chunks, each its own atomically written safetensors
file named by its index and seeded by it, so a killed run keeps what it finished and the set is
the same whatever point it was resumed from. Each chunk records a description of what made it
(``meta``: the teacher's and data's fingerprints, the grid, the seed), and a folder never mixes in
samples made another way.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save
from torch import Tensor
from tqdm import tqdm

from talkhead.errors import InputError
from talkhead.util import atomic_write

# make_chunk(n, seed) -> {"noise": ..., "target": ..., conditioning...}, each [n, ...]
ChunkFn = Callable[[int, int], dict[str, Tensor]]


@dataclass(frozen=True)
class PairsConfig:
    """The stored teacher samples: how many, from which grid, in chunks of what size."""

    windows: int = 8192
    teacher_steps: int = 50
    chunk: int = 256
    seed: int = 0


def fingerprint(tensors: Iterable[Tensor]) -> str:
    """A digest of tensors' values (a teacher's weights, the clips samples are drawn from)."""
    h = hashlib.sha1()
    for v in tensors:
        h.update(v.detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def stored_samples(make_chunk: ChunkFn, directory: str | Path, cfg: PairsConfig, meta: dict[str, str],
                   tag: str = "train", progress: bool = True) -> dict[str, Tensor]:
    """Make (or resume) ``cfg.windows`` samples under ``directory`` with ``make_chunk``; returns them all."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    meta = {**meta, "teacher_steps": str(cfg.teacher_steps), "chunk": str(cfg.chunk), "seed": str(cfg.seed)}
    parts = []
    for c in tqdm(range(math.ceil(cfg.windows / cfg.chunk)), desc=f"teacher S={cfg.teacher_steps} samples ({tag})",
                  disable=not progress):
        path = directory / f"{tag}-{c:04d}.safetensors"
        if not path.exists():
            chunk = make_chunk(cfg.chunk, cfg.seed * 100_003 + c)
            atomic_write(path, save({k: v.contiguous() for k, v in chunk.items()}, metadata=meta))
        parts.append(_load_chunk(path, meta))
    return {k: torch.cat([p[k] for p in parts])[: cfg.windows] for k in parts[0]}


def _load_chunk(path: Path, meta: dict[str, str]) -> dict[str, Tensor]:
    with safe_open(str(path), framework="pt") as f:
        if f.metadata() != meta:
            raise InputError(f"{path} was made with other settings ({f.metadata()}, not {meta}); "
                             f"remove {path.parent} or use another folder")
        return {k: f.get_tensor(k) for k in f.keys()}
