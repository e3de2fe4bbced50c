"""``talkhead serve --ray``: the same app (``create_app``) as a Ray Serve deployment whose replicas hold sessions.

Each replica is one process running the whole server: its models, its sessions, its session limit
(``max_sessions``), so a replica that dies takes only its own sessions with it; Ray Serve's proxy
closes their WebSockets and starts a new replica, and the other replicas' sessions go on.

Placement is ours (``serve.ray_router``, ``router="sessions"``): a WebSocket is one ongoing request for as
long as it is open, a replica takes at most ``max_sessions`` of them (``max_ongoing_requests``), and our request
router in Serve's proxy sends each new one to the replica with the fewest sessions, counted by the proxy itself
and reserved as soon as a replica is picked, so sessions that arrive together spread out too (Serve's default
router, power of two choices, ``router="serve"``, placed 4 sessions opened at once on 2 replicas of 4 as [4, 0]
or [3, 1]). Serve still asks the replica for room first, so a replica is never sent a session it would refuse.
While every replica is full, the proxy holds a few new connections until a session ends (or, autoscaled, a new
replica is up) and answers the rest with HTTP 503 at once (``max_queued_requests``). Autoscaling counts the same
ongoing requests, open or waiting, and reacts within seconds (``upscale_delay_s``, metrics pushed every second).
Avatars go to a store that every replica shares (``serve.avatar_store``: a folder, or Ray's object store with
``ray:``), so an avatar uploaded through one replica is found by all.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import socket
import sys
import time

from ray import serve
from ray.serve.config import RequestRouterConfig

from talkhead.errors import InputError
from talkhead.scale.ray import ROUTERS, RayServeConfig
from talkhead.serve.app import ServeConfig, create_app
from talkhead.serve.guard import GuardConfig
from talkhead.serve.ray_router import SessionRouter

APP = "talkhead"
class _ReplicaApp:
    """The ASGI app Serve calls in a replica: the server that this replica built in its constructor.

    Serve copies an ingress app to the replicas as it is at deploy time; ours needs the replica's own
    models, so this stand-in is what gets copied, and it hands each request to the app of the process it
    is in (every replica is a process of its own). Any Ray Serve that takes an ASGI ingress runs it."""

    app = None

    async def __call__(self, scope, receive, send) -> None:
        await type(self).app(scope, receive, send)


@serve.ingress(_ReplicaApp())
class Replica:
    """One replica: the app built in the replica's own process (models loaded there, once)."""

    def __init__(self, cfg: ServeConfig) -> None:
        _ReplicaApp.app = create_app(cfg, replica=serve.get_replica_context().replica_tag)


def check(rc: RayServeConfig, cfg: ServeConfig) -> None:
    """Refuse impossible settings before anything starts."""
    lo, hi = rc.min_replicas, rc.max_replicas
    if not rc.autoscaled() and not 1 <= rc.replicas <= 256:
        raise InputError(f"--replicas must be 1..256, got {rc.replicas}")
    if rc.autoscaled():
        lo, hi = (lo if lo is not None else 1), (hi if hi is not None else max(lo or 1, 1))
        if not 0 <= lo <= hi <= 256 or hi < 1:
            raise InputError(f"--min-replicas/--max-replicas must satisfy 0 <= min <= max <= 256, max >= 1; got {lo}, {hi}")
    if not 1 <= cfg.max_sessions <= 64:
        raise InputError(f"--max-sessions must be 1..64, got {cfg.max_sessions}")
    if not 0 < rc.replica_cpus <= 256:
        raise InputError(f"--replica-cpus must be above 0, got {rc.replica_cpus}")
    if not 1 <= rc.port <= 65535:
        raise InputError(f"--port must be 1..65535, got {rc.port}")
    if not (0 <= rc.upscale_delay_s <= 3600 and 0 <= rc.downscale_delay_s <= 3600):
        raise InputError(f"the scaling delays must be 0..3600 s, got {rc.upscale_delay_s}, {rc.downscale_delay_s}")
    if rc.router not in ROUTERS:
        raise InputError(f"--router must be one of {', '.join(ROUTERS)}, got {rc.router!r}")


def deployment_options(rc: RayServeConfig, cfg: ServeConfig) -> dict:
    """Ray Serve's options for the deployment: the session limit as its request limit, replicas or autoscaling."""
    # Serve's proxy keeps a deployment's handle, and the request router made for it, across a delete and a redeploy
    # under the same name, whatever router the new one names: a name per router makes --router take effect on a
    # cluster that ran the other one (a bench comparing both, a long-lived cluster given --router serve).
    name = "talkhead" if rc.router == "sessions" else f"talkhead-{rc.router}-router"
    opts = {"name": name, "max_ongoing_requests": cfg.max_sessions, "max_queued_requests": rc.queued,
            "ray_actor_options": {"num_cpus": rc.replica_cpus}, "graceful_shutdown_timeout_s": rc.drain_s,
            "max_constructor_retry_count": 3}  # a replica that cannot load its models fails in seconds, not minutes
    if rc.router == "sessions":  # "serve": Serve's default router, left as it is
        opts["request_router_config"] = RequestRouterConfig(request_router_class=SessionRouter)
    if not rc.autoscaled():
        return {**opts, "num_replicas": rc.replicas}
    lo = rc.min_replicas if rc.min_replicas is not None else 1
    hi = rc.max_replicas if rc.max_replicas is not None else max(lo, 1)
    # The proxy pushes its sessions (open or waiting) every second (Serve's default: 10 s), and Serve decides on
    # their mean over the last 5 s (default 30 s): a burst is seen in about a second, not half a minute. Serve
    # marks metrics_interval_s deprecated (still used in 2.60); once it is gone, the cluster's environment sets
    # it: RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S=1 (docs/scale.md).
    auto = {"min_replicas": lo, "max_replicas": hi, "initial_replicas": max(lo, 1),
            "target_ongoing_requests": max(1.0, rc.target_fill * cfg.max_sessions),
            "upscale_delay_s": rc.upscale_delay_s, "downscale_delay_s": rc.downscale_delay_s,
            "metrics_interval_s": 1.0, "look_back_period_s": 5.0}
    return {**opts, "num_replicas": "auto", "autoscaling_config": auto}


def application(rc: RayServeConfig, cfg: ServeConfig):
    """The Serve application: the replica class with its options, bound to the server's config."""
    return serve.deployment(Replica).options(**deployment_options(rc, cfg)).bind(cfg)


_PLACEMENT_ARGS = ("replicas", "min_replicas", "max_replicas", "replica_cpus", "target_fill", "drain_s", "queued",
                   "upscale_delay_s", "downscale_delay_s", "router")
_SERVER_ARGS = ("max_sessions", "model", "size", "jpeg_quality", "max_text", "max_audio_s", "max_avatars",
                "avatar_store", "max_stored_avatars", "max_stored_bytes", "threads")


def configs_from_args(args: dict) -> tuple[RayServeConfig, ServeConfig]:
    """A Serve config file's ``args`` (KubeRay's serveConfigV2, ``serve run``) as the two configs, checked."""
    if not isinstance(args, dict):
        raise InputError("the application's args are a mapping")
    unknown = sorted(set(args) - set(_PLACEMENT_ARGS) - set(_SERVER_ARGS))
    if unknown:
        raise InputError(f"unknown talkhead args {unknown}; known: {', '.join(_PLACEMENT_ARGS + _SERVER_ARGS)}")
    given = {**{f.name: f.default for f in dataclasses.fields(RayServeConfig)},
             **{f.name: f.default for f in dataclasses.fields(ServeConfig)}}
    for key, value in args.items():
        if isinstance(value, bool) or not _fits(value, given[key]):
            raise InputError(f"talkhead arg {key!r}: {value!r} is not a {type(given[key]).__name__}")
    rc = RayServeConfig(**{k: v for k, v in args.items() if k in _PLACEMENT_ARGS})
    cfg = ServeConfig(**{k: v for k, v in args.items() if k in _SERVER_ARGS})
    check(rc, cfg)
    return rc, cfg


def _fits(value, default) -> bool:
    if default is None:  # an optional count (min_replicas) or store (avatar_store: a path or ray:NAME)
        return value is None or isinstance(value, (int, str))
    return isinstance(value, (int, float) if isinstance(default, float) else type(default))


def app_builder(args: dict):
    """For a Serve config file: ``import_path: talkhead.serve.ray_serve:app_builder`` with ``args`` of
    ServeConfig fields (max_sessions, model, size, avatar_store, ...) and the replicas (replicas, or
    min_replicas/max_replicas). The cluster's Serve config sets the proxy's host and port."""
    import os

    rc, cfg = configs_from_args(args or {})
    # The cluster's proxy decides the address and names, so the Host check cannot know them; pages of other
    # origins are still refused, and TALKHEAD_TOKEN (set on the cluster) is required when it is set.
    guard = GuardConfig(host="0.0.0.0", token=os.environ.get("TALKHEAD_TOKEN") or None)
    return application(rc, with_store(dataclasses.replace(cfg, guard=guard), cfg.avatar_store))


def _port_free(host: str, port: int) -> None:
    """On a cluster of our own the proxy binds here: refuse a port in use now, not after Serve's retries."""
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, port))
    except OSError as e:
        raise InputError(f"--port {port}: cannot listen on {host}:{port} ({e.strerror or e})") from None


def deploy(rc: RayServeConfig, cfg: ServeConfig, on_connected=None) -> bool:
    """Connect (or start a one-node cluster), start Serve's proxy and the replicas; return once they all serve.

    Returns True when this process started the cluster (``shutdown`` then stops it); ``on_connected(owned)``
    is called as soon as the connection is made (the replicas take a while longer)."""
    import ray

    from talkhead.scale.ray import connect

    check(rc, cfg)
    if rc.address is None and not ray.is_initialized():
        _port_free(rc.host, rc.port)
    cpus = max(len(os.sched_getaffinity(0)), math.ceil(rc.most_replicas() * rc.replica_cpus))
    owned = connect(rc.address, num_cpus=cpus)
    if on_connected is not None:
        on_connected(owned)
    for name in ("ray.serve", "ray"):  # Serve's start-up notices: the CLI prints its own line
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        serve.start(http_options={"host": rc.host, "port": rc.port})
        serve.run(application(rc, cfg), name=APP, route_prefix="/")
    except Exception as e:  # a replica that failed to start (models missing on a node, ...): one line, exit 2
        shutdown(owned)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise InputError(f"serve --ray: the replicas did not start ({first[:300]})") from None
    return owned


def shutdown(owned: bool) -> None:
    """Remove the app; stop Serve and the cluster too when this process started them."""
    import ray

    if not ray.is_initialized():
        return
    if owned:  # the whole cluster is ours: it goes, Serve's controller and proxy with it
        ray.shutdown()
    else:
        serve.delete(APP)


def replica_actors() -> dict[str, object]:
    """The running replicas' actor handles by replica tag (what ``/v1/status`` and ``ready`` call ``replica``)."""
    import ray

    out = {}
    for a in ray.util.list_named_actors(all_namespaces=True):
        name, ns = (a["name"], a["namespace"]) if isinstance(a, dict) else (a, None)
        if name.startswith("SERVE_REPLICA::") and f"#{APP}#" in f"#{name.split('::', 1)[1]}":
            try:
                out[name.rsplit("#", 1)[-1]] = ray.get_actor(name, namespace=ns)
            except ValueError:  # listed, then gone before the lookup: a replica scaled down meanwhile is not running
                continue
    return out


def serve_forever(rc: RayServeConfig, cfg: ServeConfig) -> None:
    """``talkhead serve --ray``: deploy, say where, serve until Ctrl-C or SIGTERM, then take it all down."""
    import signal

    owned = None

    def connected(o: bool) -> None:
        nonlocal owned
        owned = o
        # After ray.init, which sets a handler of its own: a service manager's stop takes the cluster down too.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    try:
        deploy(rc, cfg, connected)
    except (KeyboardInterrupt, SystemExit):  # stopped while the replicas were starting (deploy cleans up errors)
        if owned is not None:
            shutdown(owned)
        raise
    how = (f"{rc.min_replicas if rc.min_replicas is not None else 1}..{rc.most_replicas()} replicas (autoscaled)"
           if rc.autoscaled() else f"{rc.replicas} replica{'s' * (rc.replicas > 1)}")
    print(f"talkhead: http://{rc.host}:{rc.port}/ on Ray Serve, {how} of {cfg.max_sessions} sessions each "
          f"(WebSocket /v1/stream); avatars in {cfg.avatar_store}", file=sys.stderr)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        shutdown(owned)


def with_store(cfg: ServeConfig, store: str | None) -> ServeConfig:
    """The avatar store the replicas share: the one given (a folder, or ``ray:[NAME]``, Ray's object store),
    else the cache folder's ``avatars`` (one machine)."""
    from talkhead.serve.avatar_store import RAY_PREFIX, ray_store_name
    from talkhead.util import cache_dir

    if store is not None and store.startswith(RAY_PREFIX):
        ray_store_name(store)  # a bad name is refused here, not by every replica as it starts
        return dataclasses.replace(cfg, avatar_store=store)
    if store is None:
        base = cache_dir()
        if base is None:
            raise InputError("serve --ray needs an avatar store the replicas share: give --avatar-store DIR "
                             "(TALKHEAD_CACHE is empty, so there is no cache folder)")
        store = str(base / "avatars")
    return dataclasses.replace(cfg, avatar_store=os.path.abspath(store))
