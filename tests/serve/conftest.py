"""A real talkhead server (uvicorn on a free loopback port, in a thread) for the serve tests."""

from __future__ import annotations

import socket
import threading
import time

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    import uvicorn

    from talkhead.serve.app import ServeConfig, create_app

    port = _free_port()
    cfg = uvicorn.Config(create_app(ServeConfig(max_sessions=2, size=128)), host="127.0.0.1", port=port,
                         log_level="warning", ws_max_size=1 << 20)
    srv = uvicorn.Server(cfg)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.time() + 60
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    assert srv.started, "the server did not start"
    yield f"127.0.0.1:{port}"
    srv.should_exit = True
    thread.join(timeout=10)
