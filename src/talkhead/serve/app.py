"""``talkhead serve``: the WebSocket API (``/v1/stream``), avatars, offline videos and the browser page.

Protocol (docs/serve.md): JSON text messages both ways; binary server messages are one byte of kind
(``V`` a JPEG frame, ``A`` PCM16 16 kHz audio), a uint32 little-endian frame index, then the payload.
Every input is bounded; a bad message gets an ``error`` and the session goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import struct
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import FileResponse, JSONResponse, Response

from talkhead.errors import InputError
from talkhead.serve.session import FPS, LiveSession

STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class ServeConfig:
    """Limits and defaults of a server."""

    max_sessions: int = 4
    model: str | None = "student-1-whisper"  # the fastest shipped model; its lip sync matches the teacher's
    size: int = 256
    jpeg_quality: int = 80
    max_message: int = 1 << 20
    max_text: int = 5000
    max_photo: int = 20 << 20
    max_side: int = 8000
    max_audio_s: float = 600.0
    max_avatars: int = 64


def _jpeg(image: np.ndarray, quality: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(image).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def _packet(kind: bytes, index: int, payload: bytes) -> bytes:
    return kind + struct.pack("<I", index & 0xFFFFFFFF) + payload


class Avatars:
    """Registered photos by content id (never a path); bounded, oldest dropped first."""

    def __init__(self, cfg: ServeConfig) -> None:
        self.cfg, self.photos = cfg, OrderedDict()

    def add(self, data: bytes) -> str:
        from PIL import Image, UnidentifiedImageError

        if len(data) > self.cfg.max_photo:
            raise InputError(f"photo over {self.cfg.max_photo >> 20} MB")
        try:
            with Image.open(io.BytesIO(data)) as im:
                if max(im.size) > self.cfg.max_side:
                    raise InputError(f"photo over {self.cfg.max_side} px a side")
                photo = np.asarray(im.convert("RGB"))
        except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as e:
            raise InputError(f"not a readable image: {e}") from None
        aid = hashlib.sha256(photo.tobytes() + str(photo.shape).encode()).hexdigest()[:16]
        self.renderer(photo, aid)  # registers the face now (an error here is the upload's)
        self.photos[aid] = photo
        while len(self.photos) > self.cfg.max_avatars:
            self.photos.popitem(last=False)
        return aid

    def renderer(self, photo: np.ndarray | None = None, aid: str | None = None):
        from talkhead.render import make_renderer
        from talkhead.render.face import default_photo

        if photo is None:
            if aid is not None and aid not in self.photos:
                raise InputError(f"unknown avatar {aid!r}")
            photo = self.photos[aid] if aid is not None else default_photo()
        return make_renderer("warp", photo, self.cfg.size, photo_name=aid or "astronaut")


def create_app(cfg: ServeConfig = ServeConfig()) -> FastAPI:
    from talkhead.pipeline import load_model

    app = FastAPI(title="talkhead", version="1")
    avatars, live = Avatars(cfg), {"sessions": 0}
    model = _Models(cfg.model, load_model)  # loads and runs the default model once, before any session

    @app.get("/")
    def page():
        return FileResponse(STATIC / "index.html", media_type="text/html")

    @app.post("/v1/avatars")
    async def add_avatar(request: Request):
        data = await _body(request, cfg.max_photo)
        try:
            aid = await asyncio.to_thread(avatars.add, data)
        except InputError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return {"avatar": aid}

    @app.post("/v1/videos")
    async def make_video(request: Request):
        try:
            job = json.loads(await _body(request, cfg.max_message))
            mp4 = await asyncio.to_thread(_video, job, avatars, model, cfg)
        except (InputError, ValueError, TypeError) as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        return Response(mp4, media_type="video/mp4")

    @app.websocket("/v1/stream")
    async def ws_stream(ws: WebSocket):
        await ws.accept()
        if live["sessions"] >= cfg.max_sessions:
            await ws.send_json({"type": "error", "message": f"server full ({cfg.max_sessions} sessions)"})
            await ws.close(code=1013)
            return
        live["sessions"] += 1
        try:
            await _Connection(ws, cfg, avatars, model).run()
        finally:
            live["sessions"] -= 1

    return app


class _Models:
    """Motion models by name, loaded once; the default one loaded and run before the first session."""

    def __init__(self, default: str | None, load) -> None:
        self.default, self.load, self.models = default, load, {}
        _warm_up(self(None))

    def __call__(self, name: str | None):
        from talkhead.motion.model import shipped_models

        if name is not None and name not in {p.stem for p in shipped_models()}:
            raise InputError(f"unknown model {str(name)[:64]!r}; a client may choose a shipped model only")
        key = name or self.default
        if key not in self.models:
            self.models[key] = self.load(key)
        return self.models[key]


def _warm_up(model) -> None:
    """The first TTS call, Whisper encoder load and motion window each cost 0.1-0.4 s: pay them at start-up."""
    from talkhead.audio.tts import synthesize
    from talkhead.pipeline import MotionConfig, motion_from_audio

    motion_from_audio(model, synthesize("Ready.", "us-female").wav, MotionConfig())


async def _body(request: Request, limit: int) -> bytes:
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise InputError(f"request over {limit >> 20} MB")
    return data


def _video(job: dict, avatars: Avatars, model, cfg: ServeConfig) -> bytes:
    """An offline job: avatar + text -> mp4 bytes (the same pipeline as ``talkhead generate``)."""
    import tempfile

    from talkhead.audio.tts import synthesize
    from talkhead.pipeline import MotionConfig, stream
    from talkhead.video import write_mp4

    text = job.get("text") if isinstance(job, dict) else None
    if not isinstance(text, str) or not text.strip() or len(text) > cfg.max_text:
        raise InputError(f"give 'text', 1 to {cfg.max_text} characters")
    speech = synthesize(text, job.get("voice") or "us-female")
    renderer = avatars.renderer(aid=job.get("avatar"))
    frames = (f.image for f in stream([speech.wav], model(job.get("model")), renderer, MotionConfig(seed=0)))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "video.mp4"
        write_mp4(path, frames, speech.wav, speech.sample_rate)
        return path.read_bytes()


class _Connection:
    """One WebSocket: messages in, frames out at 25 fps on the clock."""

    def __init__(self, ws: WebSocket, cfg: ServeConfig, avatars: Avatars, model) -> None:
        self.ws, self.cfg, self.avatars, self.model = ws, cfg, avatars, model
        self.session: LiveSession | None = None
        self.frame = 0  # the next frame index sent
        self.dropped_upto = 0  # utterances up to this number were interrupted
        self.speaking: int | None = None
        self.audio_s = 0.0

    async def run(self) -> None:
        pacer = None
        try:
            while True:
                msg = await self.ws.receive()
                if msg["type"] == "websocket.disconnect":
                    return
                started = await self._handle(msg)
                if started and pacer is None:
                    pacer = asyncio.create_task(self._pace())
                if self.session is None and pacer is not None:  # "end"
                    return
        except (WebSocketDisconnect, RuntimeError):
            return
        finally:
            if pacer is not None:
                pacer.cancel()
            if self.session is not None:
                self.session.close()

    async def _error(self, message: str) -> None:
        await self.ws.send_json({"type": "error", "message": message})

    async def _handle(self, msg: dict) -> bool:
        data, text = msg.get("bytes"), msg.get("text")
        if len(data or b"") > self.cfg.max_message or len(text or "") > self.cfg.max_message:
            await self._error(f"message over {self.cfg.max_message >> 20} MB")
            return False
        if data is not None:
            await self._client_audio(data)
            return False
        try:
            m = json.loads(text)
            kind = m["type"] if isinstance(m, dict) else None
        except (ValueError, KeyError, TypeError):
            await self._error("messages are JSON objects with a 'type'")
            return False
        handler = {"start": self._start, "say": self._say, "interrupt": self._interrupt, "end": self._end,
                   "audio_end": self._audio_end, "avatar": self._avatar}.get(kind)
        if handler is None:
            await self._error(f"unknown message type {kind!r}")
            return False
        if kind != "start" and self.session is None:
            await self._error("send 'start' first")
            return False
        try:
            return bool(await handler(m))
        except InputError as e:
            await self._error(str(e))
            return False

    async def _start(self, m: dict) -> bool:
        from talkhead.pipeline import MotionConfig

        if self.session is not None:
            raise InputError("this session has started already")
        renderer = await asyncio.to_thread(self.avatars.renderer, None, _avatar_id(m.get("avatar")))
        model = await asyncio.to_thread(self.model, m.get("model"))
        voice = m.get("voice") or "us-female"
        from talkhead.audio.tts import VOICES

        if voice not in VOICES:
            raise InputError(f"unknown voice {voice!r}")
        self.session = LiveSession(model, renderer, MotionConfig(seed=int(m.get("seed") or 0)), voice)
        w, h = renderer.size
        await self.ws.send_json({"type": "ready", "fps": FPS, "width": w, "height": h, "sample_rate": 16000})
        return True

    async def _say(self, m: dict) -> None:
        from talkhead.audio.tts import synthesize

        text = m.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > self.cfg.max_text:
            raise InputError(f"'say' needs 'text', 1 to {self.cfg.max_text} characters")
        speech = await asyncio.to_thread(synthesize, text, self.session.voice)
        self.session.say(speech.wav)

    async def _client_audio(self, data: bytes) -> None:
        if self.session is None:
            await self._error("send 'start' before audio")
            return
        if len(data) % 2:
            await self._error("audio is PCM16: an even number of bytes")
            return
        self.audio_s += len(data) / 2 / 16000
        if self.audio_s > self.cfg.max_audio_s:
            await self._error(f"an utterance is at most {self.cfg.max_audio_s:.0f} s of audio")
            return
        self.session.audio(np.frombuffer(data, "<i2").astype(np.float32) / 32768.0)

    async def _audio_end(self, m: dict) -> None:
        self.audio_s = 0.0
        self.session.audio_end()

    async def _interrupt(self, m: dict) -> None:
        self.dropped_upto = self.session._utterances
        self.session.interrupt()
        self.speaking = None
        await self.ws.send_json({"type": "interrupted", "frame": self.frame})

    async def _avatar(self, m: dict) -> None:
        renderer = await asyncio.to_thread(self.avatars.renderer, None, _avatar_id(m.get("avatar")))
        self.session.set_renderer(renderer)

    async def _end(self, m: dict) -> None:
        self.session.close()
        self.session = None
        await self.ws.close()

    async def _pace(self) -> None:
        """Send one frame every 40 ms: the next drawn one, or the last one again if none is ready."""
        loop = asyncio.get_running_loop()
        due, last = loop.time(), None
        while self.session is not None:
            out = self.session.take()
            while out is not None and out.utterance is not None and out.utterance <= self.dropped_upto:
                out = self.session.take()  # drawn before the interrupt: never sent
            if out is not None:
                last = await asyncio.to_thread(_jpeg, out.image, self.cfg.jpeg_quality)
                await self._speech_events(out)
            if last is not None:
                await self.ws.send_bytes(_packet(b"V", self.frame, last))
            if out is not None and out.last:
                await self.ws.send_json({"type": "done", "utterance": out.utterance, "frame": self.frame})
                self.speaking = None
            self.frame += 1
            due += 1 / FPS
            delay = due - loop.time()
            if delay < -2 / FPS:  # fell behind (a slow reader): skip ahead, never queue up
                skipped = int(-delay * FPS)
                self.frame, due = self.frame + skipped, due + skipped / FPS
            await asyncio.sleep(max(0.0, due - loop.time()))

    async def _speech_events(self, out) -> None:
        if out.utterance is None:
            return
        if self.speaking != out.utterance:
            self.speaking = out.utterance
            await self.ws.send_json({"type": "speaking", "utterance": out.utterance, "frame": self.frame})
        await self.ws.send_bytes(_packet(b"A", self.frame, out.audio.tobytes()))


def _avatar_id(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) != 16 or any(c not in "0123456789abcdef" for c in value):
        raise InputError("an avatar id is the 16 hex digits POST /v1/avatars returned")
    return value



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
