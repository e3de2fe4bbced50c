"""The live server's limits over real sockets: client audio far ahead of the face and says piling up, a crafted
avatar upload, and the largest inputs its limits allow, within 400 MB of peak memory."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
import pytest
from test_app import _collect, _open, _post, _video


def test_client_audio_far_ahead_of_the_face_and_says_piling_up_are_refused_and_the_session_goes_on(server):
    """Per session, not per utterance: 60 s of client audio not yet spoken, and 8 says not yet begun."""
    async def go():
        ws, _ = await _open(server)
        second = np.zeros(16_000, "<i2").tobytes()
        for _ in range(70):  # 70 s sent at once, far faster than spoken
            await ws.send(second)
        msgs = await _collect(ws, 3.0)
        errors = [m["message"] for _, m in msgs if isinstance(m, dict) and m["type"] == "error"]
        assert errors and all("ahead of the face" in e for e in errors) and len(errors) <= 11
        await ws.send(json.dumps({"type": "interrupt"}))  # drops what was queued: audio is taken again
        await ws.send(second)
        for k in range(12):
            await ws.send(json.dumps({"type": "say", "text": f"Sentence number {k} is here."}))
        msgs = await _collect(ws, 3.0)
        errors = [m["message"] for _, m in msgs if isinstance(m, dict) and m["type"] == "error"]
        assert any("utterances are waiting" in e for e in errors) and not any("ahead" in e for e in errors)
        assert len(_video(msgs)) > 40  # frames went on throughout
        await ws.close()

    asyncio.run(go())


def test_a_crafted_avatar_upload_is_a_400_at_once_that_names_no_server_path(server, tiny_avatar):
    from safetensors import safe_open
    from safetensors.torch import save

    with safe_open(str(tiny_avatar), framework="pt") as f:
        tensors, meta = {k: f.get_tensor(k) for k in f.keys()}, {k: json.loads(v) for k, v in f.metadata().items()}
    meta["engine"]["latent"]["widths"] = [1 << 20] * 3  # a network of terabytes, described in 30 bytes
    t = time.perf_counter()
    status, body = _post(server, "/v1/avatars", save(tensors, {k: json.dumps(v) for k, v in meta.items()}))
    assert status == 400 and time.perf_counter() - t < 2.0  # before: 52 s and 1.6 GB for such a file
    error = json.loads(body)["error"]
    assert "the avatar file" in error and "weights are not" in error and "/tmp" not in error


def _declared_only(server: str, path: str, length: int) -> bytes:
    """The status line answering a POST that declares ``length`` bytes and sends none of them."""
    import socket

    host, port = server.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: {server}\r\nContent-Length: {length}\r\n\r\n".encode())
        return s.recv(64)


def _rss_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024


def test_hostile_uploads_leave_the_server_serving_within_400_mb(server, tiny_avatar):
    """The server runs in this process: its peak resident memory (VmHWM, reset first) while it refuses or
    takes the largest inputs its limits allow grows by less than 400 MB, and it serves a session after."""
    import io
    import os

    from PIL import Image

    if not os.path.exists("/proc/self/clear_refs"):
        pytest.skip("needs Linux's /proc to reset the peak")
    big = io.BytesIO()
    Image.new("RGB", (8000, 8000), (120, 110, 100)).save(big, "PNG")  # 192 MB of pixels in a small file
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak starts again from now
    base = _rss_mb("VmRSS:")
    assert _post(server, "/v1/avatars", big.getvalue())[0] == 400  # no face in it: refused, after decoding
    assert _declared_only(server, "/v1/avatars", 70 << 20).startswith(b"HTTP/1.1 413")  # refused unread
    assert _post(server, "/v1/videos", b"{" * 100_000)[0] == 400
    assert _post(server, "/v1/webrtc", json.dumps({"type": "offer", "sdp": "v=0\r\n" * 10_000}).encode())[0] == 400
    grew = _rss_mb("VmHWM:") - base
    print(f"server peak grew by {grew:.0f} MB")  # 847 MB before photos were made smaller as they are decoded
    assert grew < 400, f"peak grew by {grew:.0f} MB"

    async def go():
        ws, ready = await _open(server)
        assert ready["type"] == "ready"
        await ws.close()

    asyncio.run(go())
