"""The frames of a running ``talkhead serve`` (``/v1/stream``) behind the calls ``TalkheadVideoService`` makes
of an in-process ``LiveSession``: the server draws and paces the face, this keeps what it has sent until the
service's clock takes it."""

from __future__ import annotations

import asyncio
import collections
import io
import json
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

from talkhead.serve.session import Out

_KEEP = 8  # frames kept for the service's clock (0.32 s): past it idle frames go first, speech never


def stream_url(server_url: str) -> tuple[str, str, str | None]:
    """``http(s)://`` or ``ws(s)://HOST:PORT[?token=T]`` -> (WebSocket URL, HTTP base URL, token)."""
    u = urllib.parse.urlsplit(server_url)
    if u.scheme not in ("http", "https", "ws", "wss") or not u.netloc:
        raise ValueError(f"server_url is http(s):// or ws(s)://HOST:PORT, not {server_url!r}")
    secure = u.scheme in ("https", "wss")
    token = urllib.parse.parse_qs(u.query).get("token", [None])[0]
    ws = urllib.parse.urlunsplit(("wss" if secure else "ws", u.netloc, "/v1/stream", u.query, ""))
    return ws, f"{'https' if secure else 'http'}://{u.netloc}", token


def _upload(base: str, token: str | None, path: Path, timeout: float) -> str:
    """POST a photo or ``.avatar`` to ``/v1/avatars``; the id the server gives it."""
    req = urllib.request.Request(f"{base}/v1/avatars", data=path.read_bytes(), method="POST")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=timeout) as r:  # noqa: S310  (the URL is the caller's server)
        return json.loads(r.read())["avatar"]


def _rgb(jpeg: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)


class RemoteSession:
    """``audio``, ``audio_end``, ``interrupt``, ``take``, ``speech_waiting``, ``client_backlog_s`` as
    ``LiveSession`` has them, over one WebSocket. ``finished``: the last utterance the server said is done;
    ``errors``: the server's error messages not yet reported; ``alive``: False once the socket is gone."""

    def __init__(self) -> None:
        self.ws = None
        self.frames: collections.deque[Out] = collections.deque()
        self.errors: list[str] = []
        self.alive, self.finished = False, 0
        self._out: asyncio.Queue = asyncio.Queue()  # to the server, in order (speech is never dropped)
        self._n, self._open, self._dropped = 0, False, 0
        self._sent = self._heard = 0  # samples of speech sent, and come back with frames
        self._tasks: list[asyncio.Task] = []

    async def connect(self, server_url: str, avatar: str | Path | None, seed: int, timeout: float) -> None:
        """Open the session (raises ConnectionError, OSError or TimeoutError if the server does not answer)."""
        import websockets

        url, base, token = stream_url(server_url)
        aid = None if avatar is None else await asyncio.to_thread(_upload, base, token, Path(avatar), timeout)
        self.ws = await asyncio.wait_for(websockets.connect(url, max_size=2 ** 22), timeout)
        await self.ws.send(json.dumps({"type": "start", "avatar": aid, "seed": seed}))
        ready = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        if ready.get("type") != "ready":
            await self.ws.close()
            raise ConnectionError(f"talkhead serve refused the session: {ready.get('message', ready)}")
        self.alive = True
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._write())]

    # -- LiveSession's calls (the event loop's thread) --
    def audio(self, pcm: np.ndarray) -> int:
        if not self._open:
            self._n, self._open = self._n + 1, True
        self._sent += len(pcm)
        self._out.put_nowait((np.clip(pcm, -1, 1) * 32767).astype("<i2").tobytes())
        return self._n

    def audio_end(self) -> None:
        if self._open:
            self._open = False
            self._out.put_nowait(json.dumps({"type": "audio_end"}))

    def interrupt(self) -> None:
        self._open, self._dropped, self._heard = False, self._n, self._sent
        self._out.put_nowait(json.dumps({"type": "interrupt"}))
        self.frames = collections.deque(f for f in self.frames if f.utterance is None)

    def take(self) -> Out | None:
        return self.frames.popleft() if self.frames else None

    def speech_waiting(self, after: int) -> bool:
        return bool(self.frames) and self.frames[0].utterance is not None and self.frames[0].utterance > after

    def client_backlog_s(self) -> float:
        return max(0, self._sent - self._heard) / 16_000

    async def aclose(self) -> None:
        self.alive = False
        for t in self._tasks:
            t.cancel()
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.send(json.dumps({"type": "end"})), 1.0)
                await asyncio.wait_for(self.ws.close(), 1.0)
            except Exception:  # noqa: BLE001  (closing a socket that is gone already: nothing to do)
                pass

    # -- the socket --
    async def _write(self) -> None:
        try:
            while True:
                await self.ws.send(await self._out.get())
        except Exception as e:  # noqa: BLE001  (the reader sees the same closed socket and reports it)
            self.alive = False
            self.errors.append(f"talkhead serve: sending failed: {e}")

    async def _read(self) -> None:
        speaking, audio = None, None
        try:
            async for msg in self.ws:
                if isinstance(msg, str):
                    speaking = self._event(json.loads(msg), speaking)
                elif msg[:1] == b"A":
                    audio = np.frombuffer(msg[5:], "<i2").copy()
                elif msg[:1] == b"V" and (speaking is None or audio is not None):
                    self._put(Out(_rgb(msg[5:]), None, speaking, audio if speaking is not None else None))
                    audio = None
                # A speech frame without its audio is the server's last image again (nothing drawn in time):
                # the service's own clock repeats the last image where it needs to.
        except Exception as e:  # noqa: BLE001  (a dropped connection: reported, the pipeline goes on)
            self.errors.append(f"talkhead serve: connection lost: {e}")
        self.alive = False

    def _event(self, m: dict, speaking: int | None) -> int | None:
        kind = m.get("type")
        if kind == "speaking":
            return m.get("utterance")
        if kind == "done":
            self.finished = max(self.finished, int(m.get("utterance", 0)))
            if self.frames and self.frames[-1].utterance == self.finished:
                self.frames[-1].last = True
            return None
        if kind == "error":
            self.errors.append(f"talkhead serve: {m.get('message')}")
        return None if kind == "interrupted" else speaking

    def _put(self, out: Out) -> None:
        if out.utterance is not None:
            if out.utterance <= self._dropped:
                return  # sent before the server had our interrupt
            self._heard += len(out.audio) if out.audio is not None else 0
        elif len(self.frames) >= _KEEP:
            return  # the clock is behind: an idle frame goes, never speech
        while len(self.frames) >= _KEEP and any(f.utterance is None for f in self.frames):
            self.frames.remove(next(f for f in self.frames if f.utterance is None))
        self.frames.append(out)
