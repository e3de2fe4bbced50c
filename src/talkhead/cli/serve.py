"""``talkhead serve``: the live WebSocket server and its browser page."""

from __future__ import annotations

import argparse
import sys

from talkhead.errors import InputError


def _cmd_serve(args: argparse.Namespace) -> None:
    import uvicorn

    from talkhead.serve.app import ServeConfig, create_app

    if not 1 <= args.max_sessions <= 64:
        raise InputError(f"--max-sessions must be 1..64, got {args.max_sessions}")
    if not 1 <= args.port <= 65535:
        raise InputError(f"--port must be 1..65535, got {args.port}")
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"talkhead: warning: serving on {args.host}, not loopback: anyone who reaches it can use it",
              file=sys.stderr)
    cfg = ServeConfig(max_sessions=args.max_sessions, model=args.model, size=args.size)
    print(f"talkhead: http://{args.host}:{args.port}/ (WebSocket /v1/stream)", file=sys.stderr)
    uvicorn.run(create_app(cfg), host=args.host, port=args.port, log_level="warning", ws_max_size=cfg.max_message)


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("serve", help="a live talking face over WebSocket, with a browser page at /")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback only)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-sessions", type=int, default=4, help="live sessions at once; more get an error")
    s.add_argument("--model", default="student-1-whisper", help="motion model (default: the fastest shipped)")
    s.add_argument("--size", type=int, default=256, help="frame size in pixels (square)")
    s.set_defaults(func=_cmd_serve)
