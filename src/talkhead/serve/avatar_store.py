"""Where uploaded avatars outlive one server process: a store of their bytes by content id, bounded.

One interface (``AvatarStore``), two backends:

- ``DirStore``: a folder (``--avatar-store DIR``), one file per avatar, written atomically. On one machine
  that is the cache folder; on a cluster, a path on shared storage that every node mounts at the same place.
- ``RayStore``: Ray's own cluster (``--avatar-store ray:`` or ``ray:NAME``), for a cluster of machines
  without shared storage. A detached named actor on the head node keeps an index, and the bytes sit in Ray's
  object store, owned by that actor: a replica on any node fetches them straight from there.

Both keep at most ``max_files`` avatars and ``max_bytes`` in all, the least recently used removed first, and
never take one larger than an upload may be. The store only keeps bytes; ``Avatars`` checks them (the id is
the hash of what they decode to) every time it reads them back, whichever backend they came from.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from talkhead.errors import InputError
from talkhead.util import atomic_write, check_writable

KINDS = (".avatar", ".photo")  # how the bytes are read back: an .avatar file or a photo
RAY_PREFIX = "ray:"
_RAY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
RAY_NAMESPACE = "talkhead"  # the store actor's namespace: every app on the cluster finds it by name there


@dataclass(frozen=True)
class StoreLimits:
    """Bounds of a store: avatars kept, bytes kept in all, bytes of one avatar."""

    max_files: int
    max_bytes: int
    max_item: int


class AvatarStore(Protocol):
    """Avatar bytes by content id, shared by every server that opens the same store."""

    where: str  # for messages: the folder, or ``ray:NAME``

    def put(self, aid: str, kind: str, data: bytes) -> None:
        """Keep ``data`` (already checked to be the face ``aid`` names) under its id, then bound the store."""

    def get(self, aid: str) -> tuple[str, bytes] | None:
        """The kind and bytes stored under ``aid`` (now the most recently used), or None if there are none."""


def open_store(spec: str | None, limits: StoreLimits) -> AvatarStore | None:
    """The store that ``--avatar-store`` names: None (memory only), ``ray:[NAME]``, or a folder."""
    if not spec:
        return None
    if spec.startswith(RAY_PREFIX):
        return RayStore(ray_store_name(spec), limits)
    return DirStore(Path(spec), limits)


def ray_store_name(spec: str) -> str:
    """The actor name in ``ray:NAME`` (``ray:`` alone: ``avatars``), checked."""
    name = spec[len(RAY_PREFIX):] or "avatars"
    if not _RAY_NAME.fullmatch(name):
        raise InputError(f"avatar store {spec[:80]}: a name is 1-64 letters, digits, '_', '.' or '-'")
    return name


class DirStore:
    """A folder of ``ID.photo`` / ``ID.avatar`` files; a file's modification time is its last use."""

    def __init__(self, path: Path, limits: StoreLimits) -> None:
        self.path, self.limits, self.where = path, limits, str(path)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"avatar store {path}: {e.strerror or e}") from None
        check_writable(path / "probe")

    def put(self, aid: str, kind: str, data: bytes) -> None:
        path = self.path / f"{aid}{kind}"
        if path.exists():
            os.utime(path)  # the same id is the same face: only its last use changes
            return
        atomic_write(path, data)
        kept, total = [], 0
        for p in sorted((p for k in KINDS for p in self.path.glob(f"*{k}")), key=_mtime, reverse=True):
            total += _size(p)
            if len(kept) < self.limits.max_files and total <= self.limits.max_bytes:
                kept.append(p)
            elif p != path:  # the newest upload always stays, even alone over max_bytes
                p.unlink(missing_ok=True)  # another replica may have removed it already

    def get(self, aid: str) -> tuple[str, bytes] | None:
        for kind in KINDS:
            path = self.path / f"{aid}{kind}"
            try:
                if path.stat().st_size > self.limits.max_item:  # never read a file this size into memory
                    raise InputError(f"stored avatar {aid!r} is larger than an upload may be")
                data = path.read_bytes()
                os.utime(path)
            except FileNotFoundError:
                continue
            return kind, data
        return None


class RayStore:
    """The bytes in Ray's object store, indexed by a detached actor ``NAME`` on the head node.

    Detached: it outlives the replica that started it (and the app: like a folder, it keeps its avatars
    until the cluster stops or someone kills the actor). On the head node: the node whose loss ends the
    cluster anyway. If its process dies, Ray restarts it empty and the avatars must be uploaded again."""

    def __init__(self, name: str, limits: StoreLimits, timeout_s: float = 30.0) -> None:
        self.where, self.limits, self.timeout_s = f"{RAY_PREFIX}{name}", limits, timeout_s
        ray = sys.modules.get("ray")  # only a process already on Ray (a replica) can use this store
        if ray is None or not ray.is_initialized():
            raise InputError(f"avatar store {self.where} is Ray's: it works with serve --ray only")
        self.ray = ray
        self.actor = _store_actor(ray, name, limits)
        self._call("stats")  # it answers now, or the server does not start

    def _call(self, method: str, *args):
        try:
            return self.ray.get(getattr(self.actor, method).remote(*args), timeout=self.timeout_s)
        except self.ray.exceptions.RayError as e:
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise InputError(f"avatar store {self.where}: {first[:200]}") from None

    def put(self, aid: str, kind: str, data: bytes) -> None:
        self._call("put", aid, kind, data)

    def get(self, aid: str) -> tuple[str, bytes] | None:
        found = self._call("get", aid)
        if found is None:
            return None
        kind, (ref,) = found
        try:
            return kind, self.ray.get(ref, timeout=self.timeout_s)
        except self.ray.exceptions.RayError:  # its owner restarted since (the bytes went with it): not stored
            return None

    def stats(self) -> dict:
        """``{"avatars": N, "bytes": B}`` held now."""
        return self._call("stats")


class _Index:
    """The store actor's state: ids -> (kind, the bytes' object ref, size), least recently used first.

    ``ray.put`` in here makes this actor the bytes' owner, so they live as long as it holds the ref, whichever
    replica uploaded them; a replica that reads one holds a borrowed ref, so a removal never cuts a read short."""

    def __init__(self, limits: StoreLimits) -> None:
        from collections import OrderedDict

        self.limits, self.items, self.total = limits, OrderedDict(), 0

    def put(self, aid: str, kind: str, data: bytes) -> None:
        import ray

        if kind not in KINDS or len(data) > self.limits.max_item:
            raise ValueError(f"refused: {kind!r}, {len(data)} bytes (at most {self.limits.max_item})")
        if aid in self.items:
            self.items.move_to_end(aid)
            return
        self.items[aid] = (kind, ray.put(data), len(data))
        self.total += len(data)
        while len(self.items) > 1 and (len(self.items) > self.limits.max_files or self.total > self.limits.max_bytes):
            _, (_, _, size) = self.items.popitem(last=False)  # dropping the ref frees the bytes
            self.total -= size

    def get(self, aid: str):
        if aid not in self.items:
            return None
        self.items.move_to_end(aid)
        kind, ref, _ = self.items[aid]
        return kind, [ref]  # in a list: Ray hands the ref over as it is, the reader fetches the bytes itself

    def stats(self) -> dict:
        return {"avatars": len(self.items), "bytes": self.total}


def _store_actor(ray, name: str, limits: StoreLimits):
    """The store's actor, started by the first replica that asks (the limits are that replica's)."""
    opts = dict(name=name, namespace=RAY_NAMESPACE, get_if_exists=True, lifetime="detached", num_cpus=0,
                resources={"node:__internal_head__": 0.001}, scheduling_strategy="DEFAULT",
                max_restarts=-1, max_concurrency=1)
    try:
        return ray.remote(_Index).options(**opts).remote(limits)
    except ValueError:  # another replica created it at the same moment
        return ray.get_actor(name, namespace=RAY_NAMESPACE)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
