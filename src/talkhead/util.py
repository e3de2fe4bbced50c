"""Small shared helpers: atomic file writes, the cache folder, background prefetch."""

from __future__ import annotations

import hashlib
import os
import queue
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from talkhead.errors import InputError

T = TypeVar("T")


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


_PART = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.part(\.[^.]*)?$")  # what _create_beside names


def clear_stale_parts(directory: str | Path) -> None:
    """Remove temp files that a killed ``atomic_path`` write left behind; the files they replaced are intact.
    Only names that ``atomic_path`` makes, and only those whose process is gone: a user's own ``.x.part``
    file, or one that a run still going is writing, is left alone."""
    for stale in Path(directory).glob(".*.part*"):
        m = _PART.match(stale.name)
        if m and not _alive(int(m.group(1))):
            stale.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # this process has no write in flight where it clears (it clears before it writes)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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


def prefetch(items: Iterable[T], size: int = 48) -> Iterator[T]:
    """``items``, produced by a background thread up to ``size`` ahead of the consumer.

    Rendering (torch, which releases the GIL) then overlaps with encoding: 0.2-0.3 s of a 6.6 s
    ``generate`` on 2 cores. An exception in the producer is raised in the consumer; a consumer that
    stops early stops the producer at its next item.
    """
    q: queue.Queue = queue.Queue(size)
    stop, end = threading.Event(), object()

    def run() -> None:
        try:
            for x in items:
                while not stop.is_set():
                    try:
                        q.put((x, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((end, None))
        except BaseException as e:  # handed to the consumer, which raises it
            q.put((end, e))

    threading.Thread(target=run, daemon=True, name="prefetch").start()
    try:
        while True:
            x, err = q.get()
            if x is end:
                if err is not None:
                    raise err
                return
            yield x
    finally:
        stop.set()


def npz_headers(path: str | Path) -> dict[str, tuple[tuple[int, ...], object]]:
    """(shape, dtype) of each array in an ``.npz``, read from the headers only: a compressed file's arrays can
    be thousands of times its size, so they are checked before any is decompressed. Not an npz: ValueError."""
    import zipfile

    from numpy.lib import format as npy

    out = {}
    try:
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                with z.open(name) as f:
                    version = npy.read_magic(f)
                    read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    shape, _, dtype = read(f)
                out[name[:-4] if name.endswith(".npy") else name] = (tuple(shape), dtype)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, SyntaxError) as e:
        raise ValueError(f"not an npz ({e})") from None
    return out
