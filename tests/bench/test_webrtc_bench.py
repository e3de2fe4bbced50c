"""The WebRTC rows of ``talkhead bench serve`` (bench.webrtc in headless Chromium), small: one say, one
interrupt, two pages at once, against a real server."""

from __future__ import annotations

import json

import pytest

from talkhead.bench import webrtc


@pytest.mark.skipif(webrtc.unavailable() is not None, reason=str(webrtc.unavailable()))
def test_webrtc_rows_measure_the_page_and_the_interrupt_silences_it():
    from talkhead.bench.serve import webrtc_rows
    from talkhead.serve.app import ServeConfig, serve_in_thread

    srv, server = serve_in_thread(ServeConfig(max_sessions=2, size=128))
    try:
        rows = webrtc_rows(server, webrtc.WebRtcBenchConfig(sessions=2, says=1, interrupts=1))
    finally:
        srv.should_exit = True
    assert "skipped" not in rows, rows
    json.dumps(rows)  # goes into serve.json as it is
    assert rows["sessions_at_once"] == 2 and rows["targets"]["interrupt_ms"] == 100
    assert 0 < rows["say_to_first_decoded_frame_ms"]["median"] < 5000
    assert rows["fps_min"] > 15 and rows["together_fps_min"] > 10  # frames decoded by Chromium's VP8 decoder
    assert rows["av_offset_p95_ms"]["median"] is not None
    # The page mutes what had arrived before the interrupt: the played audio is silent at once.
    assert rows["interrupt_to_silence_ms"]["max"] <= 100
    assert rows["interrupt_to_idle_frames_ms"]["max"] < 2000
