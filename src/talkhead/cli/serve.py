"""``talkhead serve``: the live WebSocket server and its browser page."""

from __future__ import annotations

import argparse
import sys

from talkhead.errors import InputError


def _cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from talkhead.serve.app import ServeConfig, create_app
    from talkhead.serve.webrtc import WebRtcConfig

    if not 1 <= args.max_sessions <= 64:
        raise InputError(f"--max-sessions must be 1..64, got {args.max_sessions}")
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be 1..65535, got {args.port}")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"talkhead: warning: serving on {args.host}, not loopback: anyone who reaches it can use it",
              file=sys.stderr)
    loopback = args.host in ("127.0.0.1", "localhost", "::1")
    for url in args.ice_server:
        if not url.startswith(("stun:", "turn:", "turns:")) or len(url) > 256:
            raise InputError(f"--ice-server takes a stun:, turn: or turns: URL, got {url[:64]!r}")
    # WebRTC host candidates follow --host: loopback only unless the server is bound beyond it.
    rtc = WebRtcConfig(ice_servers=tuple(args.ice_server), ice_username=args.ice_username,
                       ice_credential=args.ice_credential, ice_hosts=("127.0.0.1",) if loopback else None)
    cfg = ServeConfig(max_sessions=args.max_sessions, model=args.model, size=args.size, webrtc=rtc)
    print(f"talkhead: http://{args.host}:{args.port}/ (WebSocket /v1/stream, WebRTC POST /v1/webrtc)", file=sys.stderr)
    uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level="warning", ws_max_size=cfg.max_message)


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="a live talking face over WebSocket, with a browser page at /")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-sessions", type=int, default=4, help="live sessions at once; more get an error")
    s.add_argument("--model", default="student-1-whisper", help="motion model (default: the fastest shipped)")
    s.add_argument("--size", type=int, default=256, help="frame size in pixels (square)")
    s.add_argument("--ice-server", action="append", default=[], metavar="URL",
                   help="a STUN/TURN server for WebRTC beyond this machine (repeatable; none by default)")
    s.add_argument("--ice-username", default=None, help="username for --ice-server turn: URLs")
    s.add_argument("--ice-credential", default=None, help="credential for --ice-server turn: URLs")
    s.set_defaults(func=_cmd_serve)
