"""Motion files: Live Link Face style CSV (one row per 25 fps frame) and .npy."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from talkhead.errors import InputError
from talkhead.rig.spec import SPEC
from talkhead.util import atomic_write


def save_motion(path: str | Path, motion: np.ndarray) -> None:
    """Write [T, 58] motion as CSV (header of channel names) or .npy, by extension, atomically."""
    path = Path(path)
    motion = np.asarray(motion, np.float32)
    if motion.ndim != 2 or motion.shape[1] != SPEC.dim:
        raise ValueError(f"motion must be [T, {SPEC.dim}], got {list(motion.shape)}")
    if path.suffix == ".npy":
        buf = io.BytesIO()
        np.save(buf, motion)
        atomic_write(path, buf.getvalue())
    elif path.suffix == ".csv":
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        w.writerow(SPEC.names)
        w.writerows([[f"{v:.6g}" for v in row] for row in motion])
        atomic_write(path, text.getvalue().encode())
    else:
        raise InputError(f"motion file must end in .csv or .npy: {path}")


def load_motion(path: str | Path) -> np.ndarray:
    """Read motion written by ``save_motion`` (CSV columns are matched by name)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such motion file: {path}")
    if path.suffix not in (".npy", ".csv"):
        raise InputError(f"motion file must end in .csv or .npy: {path}")
    if path.suffix == ".npy":
        try:
            m = np.load(path).astype(np.float32)
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"{path}: not a motion .npy ({e})") from None
        if m.ndim != 2 or m.shape[1] != SPEC.dim:
            raise InputError(f"{path}: expected [T, {SPEC.dim}] motion, got {list(m.shape)}")
        return m
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: not a motion CSV ({e})") from None
    if not rows:
        raise InputError(f"{path}: empty motion file")
    header = [h[:1].lower() + h[1:] for h in rows[0]]  # accept Live Link Face's capitalised names
    missing = [n for n in SPEC.names if n not in header]
    if missing:
        raise InputError(f"{path}: missing channels {missing[:5]}")
    cols = [header.index(n) for n in SPEC.names]
    try:
        return np.array([[float(r[c]) for c in cols] for r in rows[1:]], np.float32).reshape(-1, SPEC.dim)
    except (ValueError, IndexError) as e:
        raise InputError(f"{path}: malformed motion row ({e})") from None
