"""``talkhead serve``: the WebSocket API (``/v1/stream``), avatars, offline videos and the browser page.

Protocol (docs/serve.md): JSON text messages both ways; binary server messages are one byte of kind
(``V`` a JPEG frame, ``A`` PCM16 16 kHz audio), a uint32 little-endian frame index, then the payload.
Every input is bounded; a bad message gets an ``error`` and the session goes on.
"""

from __future__ import annotations

import asyncio
import io
import json
import struct
from pathlib import Path

import numpy as np
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response

from talkhead.config import DEFAULT_VOICE
from talkhead.errors import InputError
from talkhead.serve.avatars import Avatars
from talkhead.serve.config import ServeConfig
from talkhead.serve.connection import Connection
from talkhead.serve.guard import Guard
from talkhead.serve.session import warm_up
from talkhead.serve.webrtc import ServerFull, WebRtc

STATIC = Path(__file__).parent / "static"


def _jpeg(image: np.ndarray, quality: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _packet(kind: bytes, index: int, payload: bytes) -> bytes:
    return kind + struct.pack("<I", index & 0xFFFFFFFF) + payload


def create_app(cfg: ServeConfig = ServeConfig(), replica: str | None = None) -> FastAPI:
    """The server's app; ``replica`` (under ``serve --ray``) names this copy in ``/v1/status`` and ``ready``."""
    from talkhead.motion.model import load_model

    if cfg.threads is not None:
        import torch

        torch.set_num_threads(cfg.threads)
    app = FastAPI(title="talkhead", version="1")
    app.add_middleware(Guard, cfg=cfg.guard)
    avatars, live = Avatars(cfg), {"sessions": 0}
    model = _Models(cfg.model, load_model, cfg.live_model)  # loads and runs the default model once, before any session

    @app.get("/")
    def page():
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.post("/v1/avatars")
    async def add_avatar(request: Request):
        data = await _body(request, max(cfg.max_photo, cfg.max_avatar_file))
        try:
            aid = await asyncio.to_thread(avatars.add, data)
        except InputError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return {"avatar": aid}

    videos = _VideoQueue(cfg.video_queue)

    @app.post("/v1/videos")
    async def make_video(request: Request):
        if not videos.enter():
            return JSONResponse({"error": f"{videos.limit} videos are waiting; try again later"}, status_code=429,
                                headers={"Retry-After": str(videos.retry_after())})
        try:
            job = json.loads(await _body(request, cfg.max_message))
            mp4 = await videos.run(_video, job, avatars, model, cfg)
        except (InputError, ValueError, TypeError) as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        finally:
            videos.leave()
        return Response(mp4, media_type="video/mp4")

    rtc = WebRtc(cfg.webrtc, live, cfg.max_sessions, lambda sink: Connection(sink, cfg, avatars, model, replica))

    @app.post("/v1/webrtc")
    async def webrtc_offer(request: Request):
        try:
            return await rtc.answer(json.loads(await _body(request, cfg.max_message)))
        except (InputError, ValueError) as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        except ServerFull as e:
            return JSONResponse({"error": str(e)}, status_code=503)

    @app.get("/v1/status")
    def status():
        out = {"sessions": live["sessions"], "max_sessions": cfg.max_sessions, "webrtc_peers": len(rtc.peers)}
        return out if replica is None else {**out, "replica": replica}

    @app.websocket("/v1/stream")
    async def ws_stream(ws: WebSocket):
        await ws.accept()
        if live["sessions"] >= cfg.max_sessions:
            await ws.send_json({"type": "error", "message": f"server full ({cfg.max_sessions} sessions)"})
            await ws.close(code=1013)
            return
        live["sessions"] += 1
        try:
            await _run_ws(ws, cfg, avatars, model, replica)
        finally:
            live["sessions"] -= 1

    return app


class _Models:
    """Motion models by name, loaded once; the default one loaded and run before the first session. A client may
    name a shipped model only; the server's own ``default`` and ``live`` may be any spec ``load`` takes (a
    checkpoint path, ``MODEL+LIPS``), as `talkhead serve --model/--live-model` name them."""

    def __init__(self, default: str | None, load, live: str | None = None) -> None:
        self.default, self.live, self.load, self.models = default, live, load, {}
        from talkhead.audio.tts import synthesize

        ready = synthesize("Ready.", DEFAULT_VOICE).wav  # the first TTS call is paid here too
        for name in (None, live) if live is not None else (None,):
            warm_up(self(name), ready)

    def __call__(self, name: str | None):
        from talkhead.motion.model import shipped_models

        if name is not None and name not in {self.default, self.live} | {p.stem for p in shipped_models()}:
            raise InputError(f"unknown model {str(name)[:64]!r}; a client may choose a shipped model only")
        key = name or self.default
        if key not in self.models:
            self.models[key] = self.load(key)
        return self.models[key]


class _VideoQueue:
    """Offline jobs on one worker thread of their own, at most ``limit`` waiting beside the one being drawn.
    A request takes its place before its body is read, so a burst cannot all pass the check at once."""

    def __init__(self, limit: int) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.limit, self.pending, self.last_s = limit, 0, 5.0
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="talkhead-videos")

    def enter(self) -> bool:
        """Take a place (False: none is free; the caller answers 429)."""
        if self.pending > self.limit:  # the one being drawn and ``limit`` waiting
            return False
        self.pending += 1
        return True

    def leave(self) -> None:
        self.pending -= 1

    def retry_after(self) -> int:
        """Seconds until a place is likely free: the jobs ahead at the last job's duration."""
        return max(1, round(self.pending * self.last_s))

    async def run(self, fn, *args):
        def timed():
            import time

            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                self.last_s = time.perf_counter() - t0

        return await asyncio.get_running_loop().run_in_executor(self.pool, timed)


async def _body(request: Request, limit: int) -> bytes:
    """The request's body, at most ``limit`` bytes: a larger one is a 413, from its Content-Length before any
    of it is read, or as soon as the bytes read pass the limit."""
    from fastapi import HTTPException

    too_large = HTTPException(413, f"request over {limit >> 20} MB")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise too_large
    return bytes(data)


def _video(job: dict, avatars: Avatars, model, cfg: ServeConfig) -> bytes:
    """An offline job: avatar + text -> mp4 bytes (the same pipeline as ``talkhead generate``)."""
    import tempfile

    from talkhead.audio.tts import check_voice, synthesize
    from talkhead.motion.stream import MotionConfig
    from talkhead.pipeline import stream
    from talkhead.video import write_mp4

    text = job.get("text") if isinstance(job, dict) else None
    if not isinstance(text, str) or not text.strip() or len(text) > cfg.max_text:
        raise InputError(f"give 'text', 1 to {cfg.max_text} characters")
    speech = synthesize(text, check_voice(job.get("voice") or DEFAULT_VOICE))
    renderer = avatars.renderer(aid=job.get("avatar"))
    frames = (f.image for f in stream([speech.wav], model(job.get("model")), renderer, MotionConfig(seed=0)))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "video.mp4"
        write_mp4(path, frames, speech.wav, speech.sample_rate)
        return path.read_bytes()


class _WsSink:
    """The WebSocket transport of a ``Connection``: JSON text events, binary JPEG frames and PCM16 audio."""

    def __init__(self, ws: WebSocket, quality: int) -> None:
        self.ws, self.quality, self.last = ws, quality, None

    async def event(self, message: dict) -> None:
        await self.ws.send_json(message)

    async def frame(self, index: int, image: np.ndarray | None) -> None:
        if image is not None:
            self.last = await asyncio.to_thread(_jpeg, image, self.quality)
        if self.last is not None:
            await self.ws.send_bytes(_packet(b"V", index, self.last))

    async def audio(self, index: int, pcm: np.ndarray) -> None:
        await self.ws.send_bytes(_packet(b"A", index, pcm.tobytes()))

    def flush(self) -> None:
        pass  # nothing is queued here: every packet is sent as it is made

    async def close(self) -> None:
        await self.ws.close()


async def _run_ws(ws: WebSocket, cfg: ServeConfig, avatars: Avatars, model, replica: str | None = None) -> None:
    """Messages from one WebSocket into its ``Connection`` until it disconnects or sends ``end``."""
    conn = Connection(_WsSink(ws, cfg.jpeg_quality), cfg, avatars, model, replica)
    deadline = asyncio.get_running_loop().time() + cfg.start_timeout
    try:
        while not conn.ended:
            wait = None if conn.session is not None else deadline - asyncio.get_running_loop().time()
            try:
                msg = await asyncio.wait_for(ws.receive(), wait)
            except asyncio.TimeoutError:
                await ws.send_json({"type": "error", "message": f"no 'start' within {cfg.start_timeout:g} s"})
                await ws.close(code=1008)
                return
            if msg["type"] == "websocket.disconnect":
                return
            await conn.handle(msg.get("text"), msg.get("bytes"))
    except (WebSocketDisconnect, RuntimeError):
        return
    finally:
        conn.close()


def serve_in_thread(cfg: ServeConfig = ServeConfig(), timeout: float = 60.0):
    """A real server on a free loopback port in a background thread, for benchmarks and tests:
    returns (uvicorn server, "127.0.0.1:PORT"); set ``server.should_exit = True`` to stop it."""
    import socket
    import threading
    import time

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(create_app(cfg), host="127.0.0.1", port=port, log_level="warning",
                                        ws_max_size=cfg.max_message))
    threading.Thread(target=srv.run, daemon=True, name="talkhead-serve").start()
    deadline = time.time() + timeout
    while not srv.started and time.time() < deadline:
        time.sleep(0.05)
    if not srv.started:
        raise RuntimeError("the server did not start")
    return srv, f"127.0.0.1:{port}"
