"""``POST /v1/webrtc``: the live face over WebRTC (aiortc): VP8/H.264 video, Opus audio, a data channel.

The client sends an SDP offer (recvonly video and audio, a data channel it opens) with ``start``'s fields;
the answer comes back in the response (no trickle: the server's candidates are in it). One
``connection.Connection`` per peer drives everything on its 25 fps clock: each tick puts one frame on
the video track (pts in 90 kHz) and two 20 ms slices of 16 kHz audio on the audio track (silence
between utterances), so both tracks are stamped from one frame index. The data channel carries the
same JSON messages and events as ``/v1/stream``.

Bounded: WebRTC sessions count against ``max_sessions`` with the WebSocket ones; a peer that has not
connected ``ice_timeout_s`` after its answer is closed; offers are size-checked and need a video
m-line. By default only loopback host candidates are gathered and no STUN server is contacted.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from talkhead.config import FPS, HOP, option
from talkhead.errors import InputError

_log = logging.getLogger(__name__)
_SLICE = HOP // 2  # 20 ms of 16 kHz audio: Opus's usual packet, two per video frame
# The host addresses ICE gathers from, for the peer connection being set up in this task (None: all).
_HOSTS: contextvars.ContextVar[tuple[str, ...] | None] = contextvars.ContextVar("talkhead_ice_hosts", default=None)


@dataclass(frozen=True)
class WebRtcConfig:
    """WebRTC limits and networking; ``talkhead serve --ice-server`` fills ``ice_servers``."""

    ice_servers: tuple[str, ...] = option((), "a STUN/TURN server for WebRTC beyond this machine (repeatable; none "
                                              "by default, so nothing outside is contacted)", flag="--ice-server",
                                          append=True, metavar="URL")
    ice_username: str | None = option(None, "username for --ice-server turn: URLs")
    ice_credential: str | None = option(None, "credential for --ice-server turn: URLs")
    ice_hosts: tuple[str, ...] | None = ("127.0.0.1",)  # host candidates; None: every interface
    ice_timeout_s: float = 15.0  # a peer not connected by then is closed and its session freed
    max_sdp: int = 64 << 10
    max_queued_messages: int = 256  # data channel messages waiting to be handled


class ServerFull(Exception):
    """Every session slot is taken."""


def _install_host_filter() -> None:
    """aioice gathers every non-loopback interface and has no option to choose: wrap its address lookup so a
    peer connection set up under ``_HOSTS`` gathers those addresses only (others in the process are unchanged)."""
    import aioice.ice

    original = aioice.ice.get_host_addresses
    if getattr(original, "talkhead", False):
        return

    def host_addresses(use_ipv4: bool, use_ipv6: bool) -> list[str]:
        chosen = _HOSTS.get()
        return list(chosen) if chosen is not None else original(use_ipv4, use_ipv6)

    host_addresses.talkhead = True
    aioice.ice.get_host_addresses = host_addresses


@contextlib.contextmanager
def ice_hosts(hosts: tuple[str, ...] | None):
    """Within this block, peer connections of this task gather host candidates from ``hosts`` only (None: all
    interfaces). aioice never gathers loopback by itself, so a client on a machine with no other interface
    (or one that should stay on loopback, as the tests) needs this too."""
    _install_host_filter()
    token = _HOSTS.set(hosts)
    try:
        yield
    finally:
        _HOSTS.reset(token)


class _Latest:
    """A small FIFO that drops its oldest item when full: a slow reader gets fresh media, never a backlog."""

    def __init__(self, size: int) -> None:
        self.items, self.ready = collections.deque(maxlen=size), asyncio.Event()

    def put(self, item) -> None:
        self.items.append(item)
        self.ready.set()

    async def get(self):
        while not self.items:
            self.ready.clear()
            await self.ready.wait()
        return self.items.popleft()


def _tracks():
    """The video and audio track classes (aiortc imported on first use: the WebSocket server needs none of it)."""
    import av
    from aiortc import AudioStreamTrack, VideoStreamTrack
    from aiortc.mediastreams import MediaStreamError

    class FaceVideo(VideoStreamTrack):
        """The face, frame by frame as the clock puts them; pts = frame index in 90 kHz."""

        def __init__(self) -> None:
            super().__init__()
            self.queue = _Latest(2)

        async def recv(self):
            item = await self.queue.get()
            if item is None:
                raise MediaStreamError
            index, image = item
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts, frame.time_base = index * (90_000 // FPS), Fraction(1, 90_000)
            return frame

    class FaceAudio(AudioStreamTrack):
        """The speech (silence between utterances) in 20 ms slices of 16 kHz mono; aiortc resamples for Opus.

        Slices come two at a time, with each video frame; each leaves at its own time, 20 ms after the one
        before (or at once when the clock fell behind): packets in pairs every 40 ms read to the browser as
        20 ms of jitter, and its jitter buffer then holds the sound back behind the picture."""

        def __init__(self) -> None:
            super().__init__()
            self.queue, self.due = _Latest(4), 0.0

        async def recv(self):
            item = await self.queue.get()
            if item is None:
                raise MediaStreamError
            now = asyncio.get_running_loop().time()
            if self.due > now:
                await asyncio.sleep(self.due - now)
            self.due = max(now, self.due) + _SLICE / 16_000
            pts, pcm = item
            frame = av.AudioFrame.from_ndarray(pcm[None, :], format="s16", layout="mono")
            frame.sample_rate, frame.pts, frame.time_base = 16_000, pts, Fraction(1, 16_000)
            return frame

    return FaceVideo, FaceAudio


class _RtcSink:
    """The WebRTC transport of a ``Connection``: events on the data channel, media on the two tracks.

    Speech is never sent as exact digital silence (an all-zero 20 ms slice gets one LSB), so the RTP audio
    level 0 (what aiortc puts in each packet for an all-zero slice) marks the server's own silence: the page
    mutes the speech that had already arrived when it interrupts, until that level 0 plays."""

    def __init__(self, peer: _Peer) -> None:
        self.peer, self.last, self.audio_for = peer, None, -1
        self.pending: collections.deque[str] = collections.deque(maxlen=64)  # events before the channel opens
        self.silence = np.zeros(_SLICE, np.int16)

    async def event(self, message: dict) -> None:
        text = json.dumps(message)
        channel = self.peer.channel
        if channel is not None and channel.readyState == "open":
            channel.send(text)
        else:
            self.pending.append(text)

    def channel_open(self) -> None:
        while self.pending:
            self.peer.channel.send(self.pending.popleft())

    async def audio(self, index: int, pcm: np.ndarray) -> None:
        self.audio_for = index
        for k in range(2):
            part = pcm[k * _SLICE:(k + 1) * _SLICE]
            if not part.any():  # speech is never level 0 (see the class docstring)
                part = part.copy()
                part[0] = 1
            self.peer.audio.queue.put((index * HOP + k * _SLICE, part))

    async def frame(self, index: int, image: np.ndarray | None) -> None:
        if image is not None:
            h, w = image.shape[:2]
            self.last = np.ascontiguousarray(image[: h - h % 2, : w - w % 2])  # 4:2:0 video needs even sides
        if self.last is not None:
            self.peer.video.queue.put((index, self.last))
        if self.audio_for != index:  # idle: the audio track goes on with silence, on the same clock
            for k in range(2):
                self.peer.audio.queue.put((index * HOP + k * _SLICE, self.silence))

    def flush(self) -> None:
        # Speech queued before the interrupt is never played, nor its frames shown (up to 2, 80 ms, wait for
        # the encoder): the next frame the browser gets is the pacer's next one.
        self.peer.audio.queue.items.clear()
        self.peer.video.queue.items.clear()

    async def close(self) -> None:
        asyncio.ensure_future(self.peer.close())  # not awaited: 'end' is handled inside the peer's own task


class WebRtc:
    """The server's WebRTC peers: ``answer`` opens one, each closes itself when done; ``peers`` counts them."""

    def __init__(self, cfg: WebRtcConfig, live: dict, max_sessions: int, connect: Callable) -> None:
        _install_host_filter()
        self.cfg, self.live, self.max_sessions, self.connect = cfg, live, max_sessions, connect
        self.peers: set[_Peer] = set()

    async def answer(self, body) -> dict:
        """An offer (and start's fields) in, the answer out; InputError for a bad offer, ServerFull when full."""
        from aiortc import RTCSessionDescription

        sdp = _check_offer(body, self.cfg.max_sdp)
        if self.live["sessions"] >= self.max_sessions:
            raise ServerFull(f"server full ({self.max_sessions} sessions)")
        self.live["sessions"] += 1
        peer = _Peer(self)
        self.peers.add(peer)
        try:
            return await peer.open(RTCSessionDescription(sdp=sdp, type="offer"), body)
        except BaseException:
            await peer.close()
            raise


def _check_offer(body, limit: int) -> str:
    if not isinstance(body, dict) or body.get("type") != "offer" or not isinstance(body.get("sdp"), str):
        raise InputError('give {"type": "offer", "sdp": "..."} and start\'s fields')
    sdp = body["sdp"]
    if len(sdp) > limit:
        raise InputError(f"SDP over {limit >> 10} KB")
    if not sdp.startswith("v=0") or not re.search(r"^m=video ", sdp, re.M):
        raise InputError("the offer needs an SDP with a video m-line (a recvonly video transceiver)")
    return sdp


class _Peer:
    """One RTCPeerConnection, its tracks, its data channel and its ``Connection``."""

    def __init__(self, owner: WebRtc) -> None:
        from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection

        cfg = owner.cfg
        servers = [RTCIceServer(urls=u, username=cfg.ice_username, credential=cfg.ice_credential)
                   for u in cfg.ice_servers]
        self.owner, self.closed, self.connected = owner, False, False
        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=servers))  # [] : no default STUN server
        video, audio = _tracks()
        self.video, self.audio, self.channel = video(), audio(), None
        self.sink = _RtcSink(self)
        self.conn = owner.connect(self.sink)
        self.inbox: asyncio.Queue = asyncio.Queue(cfg.max_queued_messages)
        self.tasks = [asyncio.ensure_future(self._consume())]
        self.pc.on("datachannel", self._on_channel)
        self.pc.on("connectionstatechange", self._on_state)

    async def open(self, offer, start: dict) -> dict:
        with ice_hosts(self.owner.cfg.ice_hosts):
            try:
                await self.pc.setRemoteDescription(offer)
            except Exception as e:  # noqa: BLE001  (aiortc's SDP parser raises many kinds)
                raise InputError(f"not a usable SDP offer: {str(e)[:120] or type(e).__name__}") from None
            kinds = {t.kind for t in self.pc.getTransceivers()}
            if "video" not in kinds:
                raise InputError("the offer needs a video m-line (a recvonly video transceiver)")
            self.pc.addTrack(self.video)
            if "audio" in kinds:
                self.pc.addTrack(self.audio)
            await self.conn.start(start)
            await self.pc.setLocalDescription(await self.pc.createAnswer())
        self.tasks.append(asyncio.ensure_future(self._deadline()))
        return {"sdp": self.pc.localDescription.sdp, "type": self.pc.localDescription.type}

    def _on_channel(self, channel) -> None:
        if self.channel is not None:  # one control channel per session
            channel.close()
            return
        self.channel = channel
        channel.on("message", self._on_message)
        channel.on("close", lambda: asyncio.ensure_future(self.close()))
        self.sink.channel_open()

    def _on_message(self, message) -> None:
        try:
            self.inbox.put_nowait(message)
        except asyncio.QueueFull:
            self.channel.send(json.dumps({"type": "error", "message": "too many messages waiting; this one is dropped"}))

    async def _consume(self) -> None:
        """Messages in order, one at a time, as the WebSocket reads them (a 'say' is queued before an 'interrupt')."""
        while True:
            message = await self.inbox.get()
            try:
                if isinstance(message, str):
                    await self.conn.handle(text=message)
                else:
                    await self.conn.handle(data=bytes(message))
            except Exception:  # noqa: BLE001  (one message's failure must not end the session)
                _log.exception("a data channel message failed")

    def _on_state(self) -> None:
        state = self.pc.connectionState
        self.connected |= state == "connected"
        if state in ("failed", "closed"):
            asyncio.ensure_future(self.close())

    async def _deadline(self) -> None:
        await asyncio.sleep(self.owner.cfg.ice_timeout_s)
        if not self.connected:
            _log.info("a WebRTC peer did not connect in %.0f s: closed", self.owner.cfg.ice_timeout_s)
            await self.close()

    async def close(self) -> None:
        """Free everything once: the session, the tracks, the peer connection and its session slot."""
        if self.closed:
            return
        self.closed = True
        self.conn.close()
        for track in (self.video, self.audio):
            track.queue.put(None)
            track.stop()
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()
        await self.pc.close()
        self.owner.peers.discard(self)
        self.owner.live["sessions"] -= 1
