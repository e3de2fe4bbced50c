"""Training data for the latent face engine: aligned face crops with the exact motion that made them.

The warp renderer drives each photo through a motion corpus (``talkhead data synth`` or ``data
align``), framed tightly around the face by its 68 landmarks, so every crop comes with its
58-channel motion and the clip's audio (by corpus id). Photos are identities: ``heldout`` names the
ones kept out of training, so evaluation sees faces the model never saw. Shards (one per photo and
group of clips) are written atomically and a killed run resumes.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.config import option
from talkhead.errors import InputError
from talkhead.motion.data.corpus import load_manifest
from talkhead.util import atomic_write


@dataclass(frozen=True)
class FacesConfig:
    """Crop size and framing, how many corpus clips per photo, and which photos are held out."""

    size: int = option(128, "crop side in pixels")
    framing: float = option(1.9, "face widths across the crop's side")
    clips: int = option(32, "corpus clips rendered per photo (0: all)")
    clips_per_shard: int = 8
    heldout: tuple[str, ...] = option((), "photos (file names or stems) held out of training, for evaluation",
                                      nargs="*", metavar="PHOTO")


def photo_id(photo: np.ndarray) -> str:
    """A content id: the same pixels, the same id, whatever the file is called."""
    return hashlib.sha256(np.ascontiguousarray(photo).tobytes() + str(photo.shape).encode()).hexdigest()[:12]


def _is_heldout(path: Path, cfg: FacesConfig) -> bool:
    return path.name in cfg.heldout or path.stem in cfg.heldout


def _check_config(out: Path, cfg: FacesConfig, corpus: Path) -> None:
    """A folder holds crops made one way: a rerun with other settings is refused, not mixed in."""
    want = {"config": asdict(cfg), "corpus": str(corpus)}
    path = out / "config.json"
    if path.exists():
        have = json.loads(path.read_text())
        if have != json.loads(json.dumps(want)):
            raise InputError(f"{out} holds face crops made with other settings ({have}); use another --out")
    else:
        out.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(want, indent=1).encode())


def render_faces(corpus: str | Path, photos: list[str | Path], out: str | Path, cfg: FacesConfig = FacesConfig(),
                 progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Render ``cfg.clips`` corpus clips through every photo; returns the manifest rows (one per clip and photo)."""
    from talkhead.face.detect import load_image
    from talkhead.warp.renderer import WarpRenderer

    corpus, out = Path(corpus), Path(out)
    names = {n for p in map(Path, photos) for n in (p.name, p.stem)}
    unknown = [h for h in cfg.heldout if h not in names]
    if unknown:
        raise InputError(f"--heldout names no given photo: {', '.join(unknown)}")
    rows = load_manifest(corpus)[: cfg.clips or None]
    _check_config(out, cfg, corpus)
    shard_dir = out / "shards"
    shard_dir.mkdir(exist_ok=True)
    groups = [rows[i:i + cfg.clips_per_shard] for i in range(0, len(rows), cfg.clips_per_shard)]
    manifest, done, total = [], 0, len(photos) * len(groups)
    for p in map(Path, photos):
        photo = load_image(p)
        pid = photo_id(photo)
        renderer = None
        for g, group in enumerate(groups):
            path = shard_dir / f"{pid}-{g:04d}.npz"
            if not path.exists():  # a finished shard is kept: the run resumes after it
                renderer = renderer or WarpRenderer(photo, cfg.size, framing=cfg.framing, name=p.name)
                _write_shard(path, corpus, group, renderer)
            split = "heldout" if _is_heldout(p, cfg) else "train"
            manifest += [{"id": f"{pid}/{r['id']}", "photo": pid, "photo_name": p.name, "clip": r["id"],
                          "frames": r["frames"], "split": split, "shard": f"shards/{path.name}"} for r in group]
            done += 1
            if progress is not None:
                progress(done, total)
    atomic_write(out / "manifest.jsonl", "".join(json.dumps(r) + "\n" for r in manifest).encode())
    return manifest


def _write_shard(path: Path, corpus: Path, group: list[dict], renderer) -> None:
    arrays: dict[str, np.ndarray] = {}
    shards: dict[str, np.lib.npyio.NpzFile] = {}
    for r in group:
        src = shards.setdefault(r["shard"], np.load(corpus / r["shard"]))
        motion = src[f"{r['id']}/motion"].astype(np.float32)
        arrays[f"{r['id']}/frames"] = np.stack(list(renderer.frames(motion, 16)))
        arrays[f"{r['id']}/motion"] = motion
    arrays["reference"] = renderer.background  # the photo's own crop at rest: the identity anchor
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write(path, buf.getvalue())


def load_faces(root: str | Path, split: str | None = None) -> list[dict]:
    """The crops of a split as dicts: frames uint8 [T, S, S, 3], motion [T, 58], reference [S, S, 3], row."""
    root = Path(root)
    path = root / "manifest.jsonl"
    if not path.is_file():
        raise InputError(f"{root} holds no face crops (no manifest.jsonl); make them with `talkhead data faces`")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out, shards = [], {}
    for r in rows:
        if split is None or r["split"] == split:
            z = shards.setdefault(r["shard"], np.load(root / r["shard"]))
            out.append({"frames": z[f"{r['clip']}/frames"], "motion": z[f"{r['clip']}/motion"],
                        "reference": z["reference"], "row": r})
    return out
