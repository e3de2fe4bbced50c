"""``talkhead bench serve``'s pieces against a real server: a measurement starts once the last one's sessions
are gone."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

from talkhead.bench.serve import _session, _settled
from talkhead.serve.app import ServeConfig, serve_in_thread


def _sessions(server: str) -> int:
    with urllib.request.urlopen(f"http://{server}/v1/status", timeout=5) as r:
        return json.load(r)["sessions"]


def test_settled_waits_until_the_last_measurements_sessions_are_gone():
    srv, server = serve_in_thread(ServeConfig(max_sessions=2, size=128))
    try:
        async def open_speak_close() -> int:
            ws = await _session(server)
            await ws.send(json.dumps({"type": "say", "text": "One more sentence before we go."}))
            during = _sessions(server)
            await ws.close()
            return during

        assert asyncio.run(open_speak_close()) == 1
        t0 = time.monotonic()
        assert _settled(server, seconds=0.3) == server
        assert _sessions(server) == 0
        assert time.monotonic() - t0 >= 0.3  # and then the settling time
    finally:
        srv.should_exit = True


def test_live_figures_are_measured_beside_video_jobs():
    import numpy as np

    from talkhead.audio.io import load_audio
    from talkhead.bench.serve import SPEECH, videos_beside

    pcm = (np.clip(load_audio(SPEECH / "arctic_a0007.wav"), -1, 1) * 32767).astype("<i2").tobytes()
    srv, server = serve_in_thread(ServeConfig(max_sessions=2, size=128))
    try:
        r = videos_beside(server, [pcm], seconds=2.0)
    finally:
        srv.should_exit = True
    assert r["videos_made"] >= 1 and r["video_s_median"] > 0
    assert r["say_to_first_frame_ms"]["median"] > 0 and r["first_audio_chunk_to_first_frame_ms"]["median"] > 0
    assert r["two_sessions"]["sessions"] == 2 and r["two_sessions"]["new_fps_min"] > 0
