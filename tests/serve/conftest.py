"""A real talkhead server (uvicorn on a free loopback port, in a thread) for the serve tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def server():
    from talkhead.serve.app import ServeConfig, serve_in_thread

    srv, address = serve_in_thread(ServeConfig(max_sessions=2, size=128))
    yield address
    srv.should_exit = True
