"""``talkhead serve``: the live WebSocket server and its browser page."""

from __future__ import annotations

import argparse
import os
import sys

from talkhead.cli.common import add_config_flags, config_from_args
from talkhead.errors import InputError


def _cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from talkhead.serve.app import ServeConfig, create_app
    from talkhead.serve.guard import LOOPBACK, GuardConfig
    from talkhead.serve.webrtc import WebRtcConfig

    if not 1 <= args.max_sessions <= 64:
        raise InputError(f"--max-sessions must be 1..64, got {args.max_sessions}")
    if args.threads < 0:
        raise InputError(f"--threads must be >= 0, got {args.threads}")
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be 1..65535, got {args.port}")
    guard = config_from_args(GuardConfig, args, token=args.token or os.environ.get("TALKHEAD_TOKEN") or None)
    guard.check()  # beyond loopback without a token: refused here, before anything loads
    loopback = args.host in LOOPBACK
    for url in args.ice_servers:
        if not url.startswith(("stun:", "turn:", "turns:")) or len(url) > 256:
            raise InputError(f"--ice-server takes a stun:, turn: or turns: URL, got {url[:64]!r}")
    # WebRTC host candidates follow --host: loopback only unless the server is bound beyond it.
    rtc = config_from_args(WebRtcConfig, args, ice_hosts=("127.0.0.1",) if loopback else None)
    live = None if args.live_model in ("none", "") else args.live_model
    cfg = config_from_args(ServeConfig, args, webrtc=rtc, live_model=live, threads=args.threads or None, guard=guard)
    if args.ray is not None:
        _serve_on_ray(args, cfg)
        return
    if any(v is not None for v in (args.replicas, args.min_replicas, args.max_replicas, args.router)):
        raise InputError("--replicas, --min-replicas, --max-replicas and --router go with --ray")
    print(f"talkhead: http://{args.host}:{args.port}/ (WebSocket /v1/stream, WebRTC POST /v1/webrtc)", file=sys.stderr)
    uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level="warning", ws_max_size=cfg.max_message)


def _serve_on_ray(args: argparse.Namespace, cfg) -> None:
    """``serve --ray``: the same app as a Ray Serve deployment (talkhead.serve.ray_serve)."""
    from talkhead.scale.ray import import_ray, probe

    if args.ray:
        probe(args.ray)  # an address that does not answer: one line within seconds, before Ray is even imported
    if args.replicas is not None and (args.min_replicas is not None or args.max_replicas is not None):
        raise InputError("give --replicas N (a fixed count) or --min-replicas/--max-replicas (autoscaling), not both")
    import_ray()
    from talkhead.scale.ray import RayServeConfig
    from talkhead.serve.ray_serve import serve_forever, with_store

    given = {k: v for k, v in (("upscale_delay_s", args.upscale_delay), ("downscale_delay_s", args.downscale_delay))
             if v is not None}  # not given: the config's own, as for --replicas and --router
    rc = config_from_args(RayServeConfig, args, address=args.ray or None, **given)
    serve_forever(rc, with_store(cfg, args.avatar_store))


def register(sub: argparse._SubParsersAction) -> None:
    from talkhead.scale.ray import RayServeConfig
    from talkhead.serve.config import ServeConfig
    from talkhead.serve.guard import GuardConfig
    from talkhead.serve.webrtc import WebRtcConfig

    s = sub.add_parser("serve", help="a live talking face over WebSocket, with a browser page at /")
    add_config_flags(s, GuardConfig)
    add_config_flags(s, RayServeConfig, only=("port",))
    add_config_flags(s, ServeConfig, only=("max_sessions", "model", "live_model", "size", "avatar_store"))
    s.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: each session draws in a thread of its own; 0: torch's default)")
    add_config_flags(s, WebRtcConfig, only=("ice_servers", "ice_username", "ice_credential"))
    r = s.add_argument_group("many sessions on Ray Serve (docs/scale.md)")
    r.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="serve as a Ray Serve deployment: on a one-node cluster here, or the cluster at ADDRESS "
                        "(as `ray start --head` prints it)")
    r.add_argument("--replicas", type=int, default=None, help="replicas, each holding --max-sessions (default 1)")
    add_config_flags(r, RayServeConfig, only=("min_replicas", "max_replicas", "replica_cpus"))
    r.add_argument("--router", default=None, metavar="{sessions,serve}",
                   help="who places new sessions: 'sessions' (default) the replica with fewest, sessions that arrive "
                        "together spread too; 'serve' Ray Serve's own router (power of two choices)")
    r.add_argument("--upscale-delay", type=float, default=None, metavar="S",
                   help="autoscaling: add a replica after S seconds over the target (default 3)")
    r.add_argument("--downscale-delay", type=float, default=None, metavar="S",
                   help="autoscaling: remove one after S seconds under it (default 60)")
    s.set_defaults(func=_cmd_serve)
