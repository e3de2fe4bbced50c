"""WebRTC (POST /v1/webrtc) against a real server, with a real aiortc client on loopback: video and Opus
audio arrive, the data channel speaks the /v1/stream protocol, interrupts stop the speech, bad offers get
400, a peer that never connects is freed, and closing frees the session and the peer connection."""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

pytest.importorskip("aiortc")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # Debian's, as test_page.py
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]


def _post(server: str, body: bytes):
    req = urllib.request.Request(f"http://{server}/v1/webrtc", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _status(server: str) -> dict:
    with urllib.request.urlopen(f"http://{server}/v1/status", timeout=10) as r:
        return json.loads(r.read())


def _freed_now(server: str, timeout: float = 8.0) -> dict:
    """The server's status once no session and no peer is left (or at the timeout)."""
    deadline = time.perf_counter() + timeout
    while True:
        s = _status(server)
        if (s["sessions"], s["webrtc_peers"]) == (0, 0) or time.perf_counter() > deadline:
            return s
        time.sleep(0.2)


async def _freed(server: str, timeout: float = 8.0) -> dict:
    return await asyncio.to_thread(_freed_now, server, timeout)


class _Client:
    """An aiortc peer: recvonly video and audio, a data channel; media and events recorded as they arrive."""

    async def open(self, server: str, answer: bool = True, **start) -> int:
        from aiortc import RTCConfiguration, RTCPeerConnection, RTCSessionDescription

        from talkhead.serve.webrtc import ice_hosts

        self.pc = RTCPeerConnection(RTCConfiguration(iceServers=[]))
        self.pc.addTransceiver("video", direction="recvonly")
        self.pc.addTransceiver("audio", direction="recvonly")
        self.channel = self.pc.createDataChannel("talkhead")
        self.events: asyncio.Queue = asyncio.Queue()
        self.channel.on("message", lambda m: self.events.put_nowait(json.loads(m)))
        self.video, self.audio, self.tasks = [], [], []
        self.pc.on("track", lambda track: self.tasks.append(asyncio.ensure_future(self._pull(track))))
        with ice_hosts(("127.0.0.1",)):
            await self.pc.setLocalDescription(await self.pc.createOffer())
        offer = {"sdp": self.pc.localDescription.sdp, "type": "offer", **start}
        status, body = await asyncio.to_thread(_post, server, json.dumps(offer).encode())
        self.answer = body
        if status == 200 and answer:
            await self.pc.setRemoteDescription(RTCSessionDescription(**body))
        return status

    async def _pull(self, track) -> None:
        out = self.video if track.kind == "video" else self.audio
        while True:
            frame = await track.recv()
            fmt = "rgb24" if track.kind == "video" else None
            out.append((time.perf_counter(), frame.to_ndarray(format=fmt) if fmt else frame.to_ndarray()))

    async def event(self, kind: str, timeout: float = 15.0) -> dict:
        while True:
            m = await asyncio.wait_for(self.events.get(), timeout)
            if m["type"] == kind:
                return m

    async def close(self) -> None:
        for t in self.tasks:
            t.cancel()
        await self.pc.close()


def _rms(chunks) -> float:
    pcm = np.concatenate([c.ravel() for _, c in chunks]).astype(np.float32) if chunks else np.zeros(1)
    return float(np.sqrt(np.mean(pcm ** 2)))


def _motion(frames) -> float:
    """The mean change between consecutive decoded frames (0 for a still picture)."""
    imgs = [f.astype(np.float32) for _, f in frames]
    return float(np.mean([np.abs(a - b).mean() for a, b in zip(imgs, imgs[1:])])) if len(imgs) > 1 else 0.0


def test_webrtc_speaks_on_the_data_channel_with_video_and_audio_and_stops_on_interrupt(server):
    async def go():
        c = _Client()
        assert await c.open(server) == 200
        candidates = [ln for ln in c.answer["sdp"].splitlines() if ln.startswith("a=candidate")]
        assert candidates and all(" 127.0.0.1 " in ln and " host" in ln for ln in candidates)  # loopback only
        ready = await c.event("ready")
        assert (ready["fps"], ready["width"], ready["height"]) == (25, 128, 128)
        await asyncio.sleep(1.5)
        assert len(c.video) >= 15 and c.video[-1][1].shape == (128, 128, 3)  # decoded VP8 frames
        idle_audio, idle_video = list(c.audio), list(c.video[-20:])
        assert len(idle_audio) >= 30 and _rms(idle_audio) < 50  # Opus silence between utterances
        c.channel.send("this is not JSON")
        assert "JSON" in (await c.event("error"))["message"]  # and the session goes on:
        n_video, n_audio = len(c.video), len(c.audio)
        c.channel.send(json.dumps({"type": "say", "text": "Papa bought a big map of the moon."}))
        await c.event("speaking")
        await c.event("done")
        await asyncio.sleep(0.3)  # the last packets are on their way
        speech_video, speech_audio = c.video[n_video:], c.audio[n_audio:]
        assert _rms(speech_audio) > 20 * max(_rms(idle_audio), 1.0)  # speech came as Opus audio
        assert _motion(speech_video) > 2 * _motion(idle_video)  # the mouth moves while speaking

        c.channel.send(json.dumps({"type": "say", "text": "This is a long sentence that will be cut off "
                                   "well before its end, because the listener has heard enough of it."}))
        await c.event("speaking")
        await asyncio.sleep(0.5)
        c.channel.send(json.dumps({"type": "interrupt"}))
        t_int = time.perf_counter()
        await c.event("interrupted")
        await asyncio.sleep(1.0)
        late = [a for a in c.audio if a[0] > t_int + 0.25]  # after the interrupt and the jitter buffer
        assert len(late) > 20 and _rms(late) < 50  # silent: nothing of that speech plays on
        assert c.events.empty() or all(m["type"] != "done" for m in c.events._queue)
        s = await asyncio.to_thread(_status, server)
        assert s["webrtc_peers"] == 1 and s["sessions"] == 1
        await c.close()
        assert await _freed(server) == {"sessions": 0, "max_sessions": 2, "webrtc_peers": 0}

    asyncio.run(go())


def test_bad_offers_get_a_one_line_400_and_leave_nothing_open(server):
    async def go():
        for body in [b"not json", b"[]", json.dumps({"type": "offer", "sdp": "v=0\r\ngarbage"}).encode(),
                     json.dumps({"type": "answer", "sdp": "v=0"}).encode(),
                     json.dumps({"type": "offer", "sdp": "x" * 100_000}).encode()]:
            status, err = await asyncio.to_thread(_post, server, body)
            assert status == 400 and "\n" not in err["error"] and err["error"], (body[:40], err)
        from aiortc import RTCPeerConnection

        pc = RTCPeerConnection()  # an audio-only offer: no face to send
        pc.addTransceiver("audio", direction="recvonly")
        await pc.setLocalDescription(await pc.createOffer())
        offer = json.dumps({"sdp": pc.localDescription.sdp, "type": "offer"}).encode()
        status, err = await asyncio.to_thread(_post, server, offer)
        assert status == 400 and "video" in err["error"]
        await pc.close()
        c = _Client()  # a valid offer with a bad avatar: 400, and its peer is freed at once
        assert await c.open(server, avatar="../../etc/passwd") == 400
        await c.close()
        assert await _freed(server, 2.0) == {"sessions": 0, "max_sessions": 2, "webrtc_peers": 0}

    asyncio.run(go())


def test_webrtc_sessions_count_against_the_limit_and_a_peer_that_never_connects_is_freed(server):
    import websockets

    async def go():
        a, b = _Client(), _Client()
        assert await a.open(server) == 200
        assert await b.open(server, answer=False) == 200  # never completes ICE
        assert (await asyncio.to_thread(_status, server))["sessions"] == 2
        c = _Client()
        assert await c.open(server) == 503  # full, WebRTC and WebSocket alike
        await c.close()
        async with websockets.connect(f"ws://{server}/v1/stream") as ws:
            assert "full" in json.loads(await ws.recv())["message"]
        await asyncio.sleep(3.5)  # the fixture's ice_timeout_s is 3 s
        s = await asyncio.to_thread(_status, server)
        assert (s["sessions"], s["webrtc_peers"]) == (1, 1)  # b is freed, a goes on
        await a.close()
        await b.close()
        assert (await _freed(server))["sessions"] == 0

    asyncio.run(go())


_ENERGY = """async () => {
    const stats = await window.talkhead.pc.getStats();
    return [...stats.values()].filter((s) => s.type === "inbound-rtp" && s.kind === "audio")[0].totalAudioEnergy;
}"""


def test_the_page_plays_over_webrtc_in_chromium(server):
    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium (see .ci/run)")
    from playwright.sync_api import sync_playwright

    from talkhead.bench.webrtc import _INTERRUPT, _STATS, _interrupt_figures

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page()
        page.goto(f"http://{server}/")
        page.wait_for_function("window.talkhead.framesShown > 25", timeout=20_000)
        assert page.evaluate("[window.talkhead.transport, window.talkhead.webrtcError]") == ["webrtc", None]
        page.click("#say")
        page.wait_for_function("window.talkhead.speaking && window.talkhead.speechFrames > 10", timeout=20_000)
        quality = page.evaluate("document.getElementById('video').getVideoPlaybackQuality().totalVideoFrames")
        assert quality > 35  # decoded by the browser's own VP8 decoder
        energy = page.evaluate(_ENERGY)
        assert energy > 0.01  # speech played from the Opus track
        page.wait_for_function("window.talkhead.last.type === 'done'", timeout=20_000)
        # A long say interrupted 1 s into its speech (the benchmark's own measure): the page mutes the speech
        # that had already arrived, so the played audio is silent at once, not a jitter buffer later.
        cut = _interrupt_figures(page.evaluate(_INTERRUPT.replace("__STATS__", _STATS)))
        assert cut["interrupted_event_ms"] is not None and cut["audio_silent_ms"] <= 100, cut
        before, shown = page.evaluate("[window.talkhead.speechFrames, window.talkhead.framesShown]")
        page.wait_for_timeout(500)
        assert page.evaluate("window.talkhead.speechFrames") == before and not page.evaluate("window.talkhead.speaking")
        assert page.evaluate("window.talkhead.framesShown") >= shown + 8  # idle frames go on
        # ... and the sound comes back for the next say.
        page.wait_for_function("!window.talkhead.cut", timeout=5_000)
        energy_at = page.evaluate(_ENERGY)
        page.click("#say")
        page.wait_for_function("window.talkhead.last.type === 'done'", timeout=20_000)
        page.wait_for_timeout(300)
        assert page.evaluate(_ENERGY) - energy_at > 0.01
        page.goto("about:blank")  # leaving the page ends its session
        t0 = time.perf_counter()
        assert _freed_now(server, 10.0)["sessions"] == 0
        print(f"freed {time.perf_counter() - t0:.2f} s after leaving the page")
        browser.close()
