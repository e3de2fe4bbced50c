"""``talkhead bench serve``'s pieces against a real server: a measurement starts once the last one's sessions
are gone."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request

import numpy as np

from talkhead.audio.io import load_audio
from talkhead.bench.serve import SPEECH, _audio_latency, _session, _settled, _until_done, _until_speech
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


def test_client_audio_stalls_are_counted_as_a_client_sees_them():
    """A recording sent at its own pace, in 20 ms chunks, stalls on few ticks; the same with its sender silent for
    0.6 s in the middle stalls on about as many ticks as the silence lasts (the face has nothing to draw)."""
    wav = load_audio(SPEECH / "arctic_a0009.wav")
    pcm = (np.clip(wav, -1, 1) * 32767).astype("<i2").tobytes()
    srv, server = serve_in_thread(ServeConfig(max_sessions=2, size=128))
    try:
        smooth: list[int] = []
        assert asyncio.run(_audio_latency(server, [pcm], 20, smooth))[0] > 0

        async def with_a_gap() -> int:
            ws = await _session(server)
            t0, half = time.perf_counter(), len(pcm) // 2 // 640 * 640

            async def send() -> None:
                for i in range(0, len(pcm), 640):
                    await ws.send(pcm[i:i + 640])
                    await asyncio.sleep(0.04 + (0.6 if i + 640 == half else 0.0))
                await ws.send(json.dumps({"type": "audio_end"}))

            sender = asyncio.create_task(send())
            await _until_speech(ws, t0)
            stalled = await _until_done(ws)
            await sender
            await ws.close()
            return stalled

        gapped = asyncio.run(with_a_gap())
    finally:
        srv.should_exit = True
    frames = int(np.ceil(len(wav) / 640))
    assert len(smooth) == 1 and smooth[0] < frames // 4
    assert gapped >= smooth[0] + 10
