"""A real talkhead server (uvicorn on a free loopback port, in a thread) for the serve tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def server():
    from talkhead.serve.app import ServeConfig, serve_in_thread
    from talkhead.serve.webrtc import WebRtcConfig

    # A peer that never connects is freed after 3 s (15 s by default), and a socket that never starts after 3 s
    # (10 s), so the tests of them are short; one video job may wait (4).
    srv, address = serve_in_thread(ServeConfig(max_sessions=2, size=128, start_timeout=3.0, video_queue=1,
                                               webrtc=WebRtcConfig(ice_timeout_s=3.0)))
    yield address
    srv.should_exit = True
