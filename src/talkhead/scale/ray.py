"""``talkhead batch --ray``: the same jobs on Ray actors, one ``Worker`` each (models loaded once per actor).

Without an address, the run starts a one-node cluster on this machine and stops it at the end; with
one (``ray start --head`` prints it), it connects as a driver. An address that does not answer is a
one-line error within a few seconds: its port is probed first, and Ray's own connection retries
(minutes by default) are bounded through its environment settings. Input files go to the actors as
bytes and the videos come back as bytes, written here atomically: the cluster's nodes need talkhead
installed, not a shared disk.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from talkhead.config import option
from talkhead.errors import InputError
from talkhead.util import atomic_write

# Ray's connection retries, bounded (Ray reads these when ray.init connects; a value the user set wins).
# Unbounded, an address that does not answer keeps ray.init retrying for two minutes or more.
_CONNECT_ENV = {"RAY_gcs_server_port_wait_time_s": "1", "RAY_gcs_rpc_server_connect_timeout_s": "1",
                "RAY_py_gcs_connect_timeout_s": "2"}
_QUIET = {"log_to_driver": False, "logging_level": logging.WARNING}
CONNECT_TIMEOUT_S = 3.0  # how long an address's port may take to answer

ROUTERS = ("sessions", "serve")  # ours, fewest sessions first (ray_router); Serve's default, power of two choices


@dataclass(frozen=True)
class RayServeConfig:
    """Where and how many: the cluster, the replicas (fixed, or autoscaled between a minimum and a maximum)."""

    address: str | None = None  # None: a one-node cluster on this machine, for as long as the server runs
    replicas: int = 1  # its flag, default unset, is checked against the autoscaling ones (cli.serve)
    min_replicas: int | None = option(None, "autoscale on sessions in progress from this many")
    max_replicas: int | None = option(None, "... up to this many")
    replica_cpus: float = option(1.0, "CPUs Ray reserves for each replica (its sessions' threads share them)")
    target_fill: float = 0.75  # autoscaling keeps about this share of each replica's sessions in use
    host: str = "127.0.0.1"  # Serve's proxy binds here: loopback unless told otherwise
    port: int = option(8000, "the port to serve on (the plain server's too)")
    drain_s: float = 300.0  # a replica that is scaled down keeps its open sessions this long before it stops
    # Autoscaling: up quickly (a new replica takes seconds to load its models, sessions wait for it), down
    # slowly (a replica stopped too soon is one started again at the next burst); both in seconds.
    upscale_delay_s: float = 3.0
    downscale_delay_s: float = 60.0
    queued: int = 4  # connections the proxy holds while every replica is full; beyond them, HTTP 503 at once
    router: str = "sessions"  # who places sessions (ROUTERS): ours, or "serve" for Serve's own (bench compares)

    def autoscaled(self) -> bool:
        return self.min_replicas is not None or self.max_replicas is not None

    def most_replicas(self) -> int:
        return (self.max_replicas or max(self.min_replicas or 1, 1)) if self.autoscaled() else self.replicas


def import_ray():
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'talkhead[ray]'") from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray would otherwise report usage over the network
    return ray


def probe(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Refuse, within ``timeout_s``, an address whose port does not answer (light: no Ray, no torch imported)."""
    if address == "auto":  # Ray finds a cluster started on this machine, or says there is none
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--ray {address}: expected HOST:PORT (as `ray start --head` prints), auto or ray://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise InputError(f"--ray {address}: no Ray cluster answers there ({e.strerror or e}); "
                         "start one with `ray start --head`") from None


def _why(address: str, e: BaseException) -> str:
    """ray.init's failure as one line: a missing token told apart, else its first line."""
    chain = []
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any("AuthenticationError" in type(x).__name__ or "InvalidAuthToken" in str(x) for x in chain):
        return (f"--ray {address}: the cluster wants its authentication token: set RAY_AUTH_MODE=token "
                "(the token from ~/.ray/auth_token, or RAY_AUTH_TOKEN)")
    first = (str(chain[0]).strip().splitlines() or [type(chain[0]).__name__])[0]
    return f"--ray {address}: no Ray cluster answered ({first})"


def connect(address: str | None, timeout_s: float = CONNECT_TIMEOUT_S, num_cpus: int | None = None) -> bool:
    """Connect this process to Ray; True if it did so (and so should ``ray.shutdown()`` at the end).

    A caller already connected (``ray.init`` done) keeps its connection. ``address`` None: a new
    one-node cluster on this machine with ``num_cpus`` CPUs (None: all of them).
    """
    if address:
        probe(address, timeout_s)
        for key, value in _CONNECT_ENV.items():  # before Ray is imported: it reads them once, then
            os.environ.setdefault(key, value)
    ray = import_ray()
    if ray.is_initialized():
        return False
    if not address:
        # "local": always a new cluster, never one that `ray start` or another run left on this machine.
        # Its token authentication is on (Ray's default for a new cluster); the notice saying so each run is not needed.
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **_QUIET)
        return True
    _reread_config(ray)
    try:
        ray.init(address=address, **_QUIET)
    except Exception as e:  # ConnectionError, RuntimeError, version mismatch...: one line, exit 2
        raise InputError(_why(address, e)) from None
    return True


class RayRunner:
    """``workers`` Ray actors (one CPU each); jobs go to the least loaded, results come back as bytes."""

    backend = "ray"

    def __init__(self, workers: int | None, address: str | None, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        self.requested, self.address, self.timeout_s = workers, address, timeout_s
        self.workers = workers or 0
        self.owned = connect(address, timeout_s) if address else None  # an explicit address fails fast, here
        self.actor_class = None
        self.actors: list = []
        self.load: dict = {}  # actor -> jobs queued on it
        self.pending: dict = {}  # ObjectRef -> (job, actor)

    def start(self) -> None:
        """Connect (or start the local cluster), then start the actors and wait until each one is warm."""
        ray = import_ray()
        if self.owned is None:
            self.owned = connect(None, num_cpus=max(self.requested or 0, len(os.sched_getaffinity(0))))
        cpus = int(ray.cluster_resources().get("CPU", 1))
        if self.requested and self.requested > cpus:
            raise InputError(f"--workers {self.requested}: the Ray cluster has {cpus} CPUs (each worker takes one)")
        self.workers = self.requested or cpus
        from talkhead.scale.workers import Worker

        self.actor_class = ray.remote(num_cpus=1)(Worker)
        self.actors = [self.actor_class.remote() for _ in range(self.workers)]
        self.load = {a: 0 for a in self.actors}
        try:
            ray.get([a.warm.remote() for a in self.actors])
        except ray.exceptions.RayError as e:  # e.g. no motion model on the cluster's nodes: one line, exit 2
            from talkhead.scale.workers import error_text

            raise InputError(f"the Ray workers could not start: {error_text(getattr(e, 'cause', None) or e)}") from None

    def submit(self, job) -> None:
        from talkhead.scale.workers import FILE_KEYS

        actor = min(self.actors, key=self.load.__getitem__)
        fields = tuple(k for k in FILE_KEYS if getattr(job.cfg, k) is not None)
        blobs = [_blob(getattr(job.cfg, k), *_stamp(getattr(job.cfg, k))) for k in fields]
        ref = actor.run_shipped.remote(job.cfg, job.out.name, fields, *blobs)
        self.pending[ref] = (job, actor)
        self.load[actor] += 1

    def next(self) -> list[tuple[object, dict]]:
        """Wait for at least one job; its video written here, (job, outcome) for each finished."""
        from talkhead.scale.workers import error_text, failed

        ray = import_ray()
        done, _ = ray.wait(list(self.pending), num_returns=1)
        results = []
        for ref in done:
            job, actor = self.pending.pop(ref)
            self.load[actor] -= 1
            try:
                outcome, data = ray.get(ref)
            except ray.exceptions.RayActorError:  # the actor's process died: replace it, fail its job
                self._replace(actor)
                outcome, data = failed("the Ray worker running this job died"), None
            except ray.exceptions.RayError as e:  # the job's task itself broke (e.g. its worker's disk)
                outcome, data = failed(error_text(e.cause if getattr(e, "cause", None) else e)), None
            if data is not None:
                atomic_write(job.out, data)
            results.append((job, outcome))
        return results

    def _replace(self, actor) -> None:
        if actor in self.load:
            del self.load[actor]
            self.actors.remove(actor)
            fresh = self.actor_class.remote()
            fresh.warm.remote()  # queued ahead of its jobs: they wait for its models, not for a ready check
            self.actors.append(fresh)
            self.load[fresh] = 0

    def close(self, interrupted: bool = False) -> None:
        """Stop the actors (their jobs in flight are lost when ``interrupted``) and the cluster if ours."""
        if not self.owned and not self.actors:
            return
        ray = import_ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors, self.load, self.pending = [], {}, {}
        _blob.cache_clear()  # its object refs die with the connection
        if self.owned:
            ray.shutdown()
            self.owned = None


def _stamp(path: str) -> tuple[int, int]:
    st = Path(path).stat()
    return st.st_mtime_ns, st.st_size


def _reread_config(ray) -> None:
    """Make an already imported Ray see _CONNECT_ENV (Ray itself does this when it turns token auth on)."""
    config = getattr(getattr(ray, "_raylet", None), "Config", None)
    if config is not None and hasattr(config, "initialize"):
        config.initialize("")


@functools.lru_cache(maxsize=32)
def _blob(path: str, mtime_ns: int, size: int):
    """An input file in Ray's object store, put once while it is unchanged (many jobs share one photo)."""
    ray = import_ray()
    return ray.put(Path(path).read_bytes())
