"""Motion files: Live Link Face style CSV (one row per 25 fps frame) and .npy.

``load_motion`` also reads Live Link Face's own exports: columns found by name in any order (its
capitalised ARKit names; ``HeadYaw``/``HeadPitch``/``HeadRoll`` as yaw/pitch/roll in radians, taken as
they come: their signs have not been checked against a device), its other columns (``Timecode``,
``BlendShapeCount``, eye angles) ignored, a head translation it lacks left at 0, and rows resampled
from their timecodes (Live Link Face records at 60 fps) to 25 fps.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np

from talkhead.config import FPS
from talkhead.errors import InputError
from talkhead.rig.spec import POSE, SPEC
from talkhead.util import atomic_write

_LIVE_LINK_FACE = {"HeadYaw": "yaw", "HeadPitch": "pitch", "HeadRoll": "roll", "Timecode": "timecode"}
_TIMECODE = re.compile(r"^(\d+):(\d+):(\d+)[:;](\d+)(?:\.(\d+))?$")
_TIMECODE_RATES = (24, 25, 30, 48, 50, 60, 100, 120)


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
    """Read motion written by ``save_motion`` or exported by Live Link Face (CSV columns matched by name)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such motion file: {path}")
    if path.suffix not in (".npy", ".csv"):
        raise InputError(f"motion file must end in .csv or .npy: {path}")
    if path.suffix == ".npy":
        try:  # mapped, not read: the shape is checked before anything the size of the file is allocated
            raw = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise InputError(f"{path}: not a motion .npy ({e})") from None
        if raw.ndim != 2 or raw.shape[1] != SPEC.dim or raw.dtype.kind not in "fiu":
            raise InputError(f"{path}: expected [T, {SPEC.dim}] numbers, got {list(raw.shape)} of {raw.dtype}")
        m = np.asarray(raw, np.float32)
        if not np.isfinite(m).all():  # a NaN would render as a grey block
            bad = int(np.flatnonzero(~np.isfinite(m).all(1))[0])
            raise InputError(f"{path}: motion is not finite (NaN or inf) from frame {bad}")
        return m
    return _load_csv(path)


def _load_csv(path: Path) -> np.ndarray:
    """A motion CSV: ours (one row per 25 fps frame) or a Live Link Face export (see ``load_motion``)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: not a motion CSV ({e})") from None
    if not rows:
        raise InputError(f"{path}: empty motion file")
    header = [h.strip() for h in rows[0]]
    header = [_LIVE_LINK_FACE.get(h, h[:1].lower() + h[1:]) for h in header]  # capitalised names, head angles
    missing = [n for n in SPEC.names if n not in header and n not in POSE]
    if missing:
        raise InputError(f"{path}: missing channels {missing[:5]}")
    body = [r for r in rows[1:] if any(v.strip() for v in r)]
    motion = np.zeros((len(body), SPEC.dim), np.float32)  # a pose channel the file lacks stays 0
    try:
        for n in SPEC.names:
            if n in header:
                c = header.index(n)
                motion[:, SPEC[n]] = [float(r[c]) for r in body]
    except (ValueError, IndexError) as e:
        raise InputError(f"{path}: malformed motion row ({e})") from None
    if not np.isfinite(motion).all():
        bad = int(np.argwhere(~np.isfinite(motion))[0, 0]) + 1
        raise InputError(f"{path}: row {bad} has a value that is not a finite number")
    if "timecode" in header and len(body) > 1:
        times = _timecodes([r[header.index("timecode")] for r in body], path)
        motion = _resample(motion, times)
    return motion


def _timecodes(codes: list[str], path: Path) -> np.ndarray:
    """Live Link Face timecodes HH:MM:SS:FF[.sub] -> seconds from the first row [N].

    The timecode rate is not in the file: it is taken as the smallest usual rate above the largest
    frame number seen when the file spans a second boundary, else Live Link Face's 60."""
    parts = []
    for k, code in enumerate(codes):
        m = _TIMECODE.match(code.strip())
        if m is None:
            raise InputError(f"{path}: row {k + 1}: timecode {code!r} is not HH:MM:SS:FF")
        parts.append([int(m[1]), int(m[2]), int(m[3]), int(m[4]) + float("0." + (m[5] or "0"))])
    tc = np.array(parts)
    whole = tc[:, 0] * 3600 + tc[:, 1] * 60 + tc[:, 2]
    top = tc[:, 3].max()
    rate = next((r for r in _TIMECODE_RATES if r > top), None) if whole.max() > whole.min() else 60
    if rate is None or top >= rate:
        raise InputError(f"{path}: timecode frame numbers reach {top:.0f}, above any usual rate")
    t = whole + tc[:, 3] / rate
    if (np.diff(t) < 0).any():
        raise InputError(f"{path}: timecodes go backwards at row {int(np.argmax(np.diff(t) < 0)) + 2}")
    return t - t[0]


def _resample(motion: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Rows at ``times`` (s, non-decreasing) -> 25 fps rows over the same span, linearly interpolated."""
    times, first = np.unique(times, return_index=True)  # a repeated timecode keeps its first row
    motion = motion[first]
    out_t = np.arange(int(np.floor(times[-1] * FPS + 1e-6)) + 1) / FPS
    cols = [np.interp(out_t, times, motion[:, c]) for c in range(motion.shape[1])]
    return np.stack(cols, 1).astype(np.float32)
