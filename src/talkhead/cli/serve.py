"""``talkhead serve``: the live WebSocket server and its browser page."""

from __future__ import annotations

import argparse
import os
import sys

from talkhead.config import LIVE_MODEL
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
    guard = GuardConfig(host=args.host, allow_hosts=tuple(args.allow_host), allow_origins=tuple(args.allow_origin),
                        token=args.token or os.environ.get("TALKHEAD_TOKEN") or None)
    guard.check()  # beyond loopback without a token: refused here, before anything loads
    loopback = args.host in LOOPBACK
    for url in args.ice_server:
        if not url.startswith(("stun:", "turn:", "turns:")) or len(url) > 256:
            raise InputError(f"--ice-server takes a stun:, turn: or turns: URL, got {url[:64]!r}")
    # WebRTC host candidates follow --host: loopback only unless the server is bound beyond it.
    rtc = WebRtcConfig(ice_servers=tuple(args.ice_server), ice_username=args.ice_username,
                       ice_credential=args.ice_credential, ice_hosts=("127.0.0.1",) if loopback else None)
    live = None if args.live_model in ("none", "") else args.live_model
    cfg = ServeConfig(max_sessions=args.max_sessions, model=args.model, size=args.size, webrtc=rtc,
                      avatar_store=args.avatar_store, live_model=live, threads=args.threads or None, guard=guard)
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
    from talkhead.serve.ray_serve import RayServeConfig, serve_forever, with_store

    given = {k: v for k, v in (("upscale_delay_s", args.upscale_delay), ("downscale_delay_s", args.downscale_delay),
                               ("router", args.router)) if v is not None}  # not given: RayServeConfig's defaults
    rc = RayServeConfig(address=args.ray or None, replicas=args.replicas or 1, min_replicas=args.min_replicas,
                        max_replicas=args.max_replicas, replica_cpus=args.replica_cpus, host=args.host, port=args.port,
                        **given)
    serve_forever(rc, with_store(cfg, args.avatar_store))


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="a live talking face over WebSocket, with a browser page at /")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--token", default=None,
                   help="clients send 'Authorization: Bearer TOKEN' (or ?token=TOKEN) on every /v1/ request; required "
                        "beyond loopback (default: $TALKHEAD_TOKEN, else none on loopback)")
    s.add_argument("--allow-origin", action="append", default=[], metavar="URL",
                   help="a web page origin (http://host:port) allowed to use the server besides its own page "
                        "(repeatable; '*' any); other pages get 403")
    s.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="a name the server is reached by besides loopback and --host (a proxy's, a LAN name; "
                        "repeatable); other Host headers get 403 (DNS rebinding)")
    s.add_argument("--max-sessions", type=int, default=4, help="live sessions at once; more get an error")
    s.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: each session draws in a thread of its own; 0: torch's default)")
    s.add_argument("--model", default=LIVE_MODEL, help="motion model (default: the fastest shipped)")
    s.add_argument("--live-model", default="student-1-whisper-live", metavar="MODEL",
                   help="motion model for client audio (a live student: talkhead distill live); 'none': the "
                        "session's model over 0.2 s blocks (first frame 0.6 s after its audio)")
    s.add_argument("--size", type=int, default=256, help="frame size in pixels (square)")
    s.add_argument("--ice-server", action="append", default=[], metavar="URL",
                   help="a STUN/TURN server for WebRTC beyond this machine (repeatable; none by default)")
    s.add_argument("--ice-username", default=None, help="username for --ice-server turn: URLs")
    s.add_argument("--ice-credential", default=None, help="credential for --ice-server turn: URLs")
    s.add_argument("--avatar-store", default=None, metavar="DIR|ray:",
                   help="keep uploaded avatars in DIR by content id, shared by every replica and kept across restarts "
                        "(default: memory only; with --ray, the cache folder's avatars/); with --ray, 'ray:' keeps "
                        "them in Ray's object store instead (a cluster without shared storage)")
    r = s.add_argument_group("many sessions on Ray Serve (docs/scale.md)")
    r.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="serve as a Ray Serve deployment: on a one-node cluster here, or the cluster at ADDRESS "
                        "(as `ray start --head` prints it)")
    r.add_argument("--replicas", type=int, default=None, help="replicas, each holding --max-sessions (default 1)")
    r.add_argument("--min-replicas", type=int, default=None, help="autoscale on sessions in progress from this many")
    r.add_argument("--max-replicas", type=int, default=None, help="... up to this many")
    r.add_argument("--replica-cpus", type=float, default=1.0, help="CPUs Ray reserves for each replica (default 1)")
    r.add_argument("--router", default=None, metavar="{sessions,serve}",
                   help="who places new sessions: 'sessions' (default) the replica with fewest, sessions that arrive "
                        "together spread too; 'serve' Ray Serve's own router (power of two choices)")
    r.add_argument("--upscale-delay", type=float, default=None, metavar="S",
                   help="autoscaling: add a replica after S seconds over the target (default 3)")
    r.add_argument("--downscale-delay", type=float, default=None, metavar="S",
                   help="autoscaling: remove one after S seconds under it (default 60)")
    s.set_defaults(func=_cmd_serve)
