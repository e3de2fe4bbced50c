"""Small shared helpers: atomic file writes."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from talkhead.errors import InputError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only if the block succeeds."""
    path = Path(path)
    tmp = _create_beside(path)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _create_beside(path: Path) -> Path:
    """Create an empty temporary file in ``path``'s folder, or raise InputError saying why it cannot be."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(f"output directory does not exist: {parent}")
    if not os.access(parent, os.W_OK):
        raise InputError(f"output directory is not writable: {parent}")
    # Not mkstemp: its files are 0600; a file opened with 0666 gets the user's umask like any other output.
    tmp = parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.part{path.suffix}"
    try:  # access() says yes to root almost everywhere (/proc too); only a real create tells
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise InputError(f"cannot write to {parent}: {e.strerror}") from None
    return tmp


def check_writable(path: str | Path) -> None:
    """Refuse, before any work is done, an output path whose folder cannot take a new file."""
    Path(_create_beside(Path(path))).unlink()


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write bytes so that readers see the old file or the whole new one, never a part."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())


def clear_stale_parts(directory: str | Path) -> None:
    """Remove temp files that a killed ``atomic_path`` write left behind; the files they replaced are intact."""
    for stale in Path(directory).glob(".*.part*"):
        stale.unlink(missing_ok=True)


def file_sha256(path: str | Path) -> str:
    """The file's SHA-256 in hex."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def cache_dir() -> Path | None:
    """Where talkhead keeps what it can recompute (photo registrations, front-end constants):
    $TALKHEAD_CACHE (empty: nothing is cached), else $XDG_CACHE_HOME or ~/.cache, /talkhead."""
    env = os.environ.get("TALKHEAD_CACHE")
    if env is not None:
        return Path(env) if env else None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "talkhead"
