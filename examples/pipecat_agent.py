"""A voice agent with talkhead's face, on one machine, with no keys: Pipecat + Piper + talkhead, in a browser.

    pip install 'talkhead[pipecat]'
    python examples/pipecat_agent.py                  # prints http://127.0.0.1:7860/ : open it, press Start
    python examples/pipecat_agent.py --avatar me.avatar --port 8080

The page (below, ours) connects over WebRTC to Pipecat's SmallWebRTCTransport (aiortc on this side), plays
the agent's sound and shows its face. Each browser gets a real Pipecat pipeline:

    transport.input() -> user context -> LLM -> Piper TTS -> TalkheadVideoService -> transport.output()
                                                                                   -> assistant context

The "LLM" is a scripted newsreader: each run it reads the next story, or repeats what was typed on the page
(a user message). It takes and gives the frames an LLM service does, so any Pipecat LLM service replaces it in
one line (see ``llm =`` below). For voice input, add an STT service after ``transport.input()`` and set
``audio_in_enabled=True`` with a VAD. Piper speaks with talkhead's own voice (``joe``: installed with
talkhead, nothing downloaded), streamed a fraction of a sentence at a time. ``--host 0.0.0.0`` serves the
page beyond this machine; browsers allow WebRTC's media only on localhost or HTTPS.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import socket
import sys
from pathlib import Path

import numpy as np

if importlib.util.find_spec("pipecat") is None:
    sys.exit("error: this example needs Pipecat: pip install 'talkhead[pipecat]'")
from loguru import logger  # noqa: E402  (Pipecat's logger)

logger.remove()  # before Pipecat is imported: it logs its banner, then every link and frame, at INFO and DEBUG
logger.add(sys.stderr, level="WARNING")

from fastapi import FastAPI, HTTPException  # noqa: E402  (the Pipecat imports below come after the logger is set)
from fastapi.responses import HTMLResponse
from pipecat.frames.frames import (
    InterruptionWorkerFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMMessagesAppendFrame,
    LLMRunFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TTSService
from pipecat.transports.base_transport import TransportParams
from pipecat.transports.smallwebrtc.request_handler import SmallWebRTCRequest, SmallWebRTCRequestHandler
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport
from pipecat.workers.runner import WorkerRunner

from talkhead.integrations.pipecat import SAMPLE_RATE, TalkheadVideoService

STORIES = [
    "Good evening. Here is the news, read by a face that was never filmed.",
    "Tonight the weather turns cold, with strong winds over the bay and rain by morning.",
    "In sport, the home side won the final by two goals, their first title in twelve years.",
    "And finally, a library returned a book borrowed in nineteen fifty, with a note that said sorry.",
]


class PiperTTS(TTSService):
    """talkhead's Piper voice as a Pipecat TTS service: each sentence's audio in pieces as it is made."""

    def __init__(self, voice: str = "joe", **kwargs) -> None:
        from talkhead.audio.tts import check_voice

        self._voice = check_voice(voice)
        super().__init__(push_start_frame=True, push_stop_frames=True, sample_rate=SAMPLE_RATE,
                         settings=TTSSettings(model="piper", voice=self._voice, language="en"), **kwargs)

    async def run_tts(self, text: str, context_id: str):
        from talkhead.audio.tts import speech_chunks

        pieces = speech_chunks(text, self._voice)
        while (wav := await asyncio.to_thread(next, pieces, None)) is not None:  # synthesis off the event loop
            pcm = (np.clip(wav, -1, 1) * 32767).astype("<i2").tobytes()
            yield TTSAudioRawFrame(pcm, SAMPLE_RATE, 1, context_id=context_id)


class NewsReader(FrameProcessor):
    """A stand-in LLM: answers each ``LLMContextFrame`` as an LLM service does (response start, text, end),
    with what the user just said (the context's last message is theirs) or else the next story."""

    def __init__(self) -> None:
        super().__init__()
        self._story = 0

    async def process_frame(self, frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if not isinstance(frame, LLMContextFrame):
            await self.push_frame(frame, direction)
            return
        last = (frame.context.get_messages() or [{}])[-1]
        if last.get("role") == "user" and last.get("content"):
            text = f"You said: {last['content']}"
        else:
            text, self._story = STORIES[self._story % len(STORIES)], self._story + 1
        await self.push_frame(LLMFullResponseStartFrame())
        await self.push_frame(LLMTextFrame(text))
        await self.push_frame(LLMFullResponseEndFrame())


async def run_agent(connection, avatar: str | None, size: int, frame: tuple[int, int]) -> None:
    """One browser's agent, until it leaves: ``size`` a photo's drawn size, ``frame`` the images' (w, h)."""
    transport = SmallWebRTCTransport(connection, TransportParams(
        audio_out_enabled=True, video_out_enabled=True, video_out_is_live=False, video_out_framerate=25,
        video_out_width=frame[0], video_out_height=frame[1]))
    context = LLMContext([{"role": "system", "content": "You are a newsreader. Answer in one or two sentences."}])
    aggregators = LLMContextAggregatorPair(context)
    llm = NewsReader()  # or any Pipecat LLM service, e.g. OpenAILLMService(api_key=..., model="gpt-4o-mini")
    # Each image goes out through the transport's audio queue, shown as its own audio starts: in sync within a
    # frame (bench pipecat: A/V offset p95 ~40 ms, where the live video clock holds images 60-180 ms behind).
    face = TalkheadVideoService(avatar=avatar, size=size, sync_with_audio=True)
    pipeline = Pipeline([transport.input(), aggregators.user(), llm, PiperTTS(), face, transport.output(),
                         aggregators.assistant()])
    # Our page speaks its own messages, not RTVI; the agent lives as long as its page (no idle timeout).
    worker = PipelineWorker(pipeline, params=PipelineParams(audio_out_sample_rate=SAMPLE_RATE), enable_rtvi=False,
                            idle_timeout_secs=None)

    connected = asyncio.Event()

    @transport.event_handler("on_client_connected")
    async def on_connected(transport, client) -> None:
        connected.set()
        await worker.queue_frame(LLMRunFrame())  # the first story

    @transport.event_handler("on_app_message")
    async def message(transport, m, sender) -> None:  # the page's buttons, over the data channel
        kind = m.get("type") if isinstance(m, dict) else None
        if kind == "interrupt":
            await worker.queue_frame(InterruptionWorkerFrame())
        elif kind == "next":
            await worker.queue_frame(LLMRunFrame())
        elif kind == "say" and str(m.get("text", "")).strip():
            user = {"role": "user", "content": str(m["text"])[:500]}
            await worker.queue_frame(LLMMessagesAppendFrame([user], run_llm=True))

    @transport.event_handler("on_client_disconnected")
    async def left(transport, client) -> None:
        await worker.cancel()

    async def unless_connected(seconds: float = 30.0) -> None:  # a peer that never connects frees its agent
        try:
            await asyncio.wait_for(connected.wait(), seconds)
        except asyncio.TimeoutError:
            await worker.cancel()

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), unless_connected())


PAGE = """<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>talkhead · Pipecat agent</title>
<style>body{font:15px system-ui,sans-serif;max-width:540px;margin:2em auto;padding:0 1em}
video{width:100%;max-width:400px;background:#222;border-radius:8px;display:block}input{width:60%}</style>
<h2>A Pipecat voice agent with talkhead's face</h2>
<video id="face" autoplay playsinline></video>
<p><button id="start">Start</button> <button id="next">Next story</button> <button id="stop">Interrupt</button></p>
<p><input id="text" value="Hello from the browser."> <button id="say">Say it</button></p>
<p id="status">press Start</p>
<script>
const $ = (id) => document.getElementById(id), agent = window.agent = {};
const send = (m) => agent.dc && agent.dc.readyState === "open" && agent.dc.send(JSON.stringify(m));
async function start() {
  $("start").disabled = true; $("status").textContent = "connecting";
  const pc = agent.pc = new RTCPeerConnection(), stream = new MediaStream();
  pc.addTransceiver("audio", { direction: "recvonly" });  // SmallWebRTC's order: audio first, then video
  pc.addTransceiver("video", { direction: "recvonly" });
  agent.dc = pc.createDataChannel("chat");
  pc.ontrack = (e) => { stream.addTrack(e.track); $("face").srcObject = stream; };
  pc.onconnectionstatechange = () => { $("status").textContent = pc.connectionState; };
  await pc.setLocalDescription(await pc.createOffer());
  await new Promise((ok) => {  // no trickle: the offer goes with its candidates
    pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && ok();
    setTimeout(ok, 2000);
  });
  const r = await fetch("/api/offer", { method: "POST", headers: { "Content-Type": "application/json" },
                                        body: JSON.stringify(pc.localDescription) });
  if (!r.ok) { $("status").textContent = "the agent refused: " + r.status; return; }
  await pc.setRemoteDescription(await r.json());
}
$("start").onclick = start;
$("next").onclick = () => send({ type: "next" });
$("stop").onclick = () => send({ type: "interrupt" });
$("say").onclick = () => send({ type: "say", text: $("text").value });
</script>
"""


def make_app(avatar: str | None, size: int, ice: tuple[str, ...] | None) -> FastAPI:
    """The page at ``/``, and ``POST /api/offer``: a browser's SDP offer in, the answer out, its agent started."""
    from talkhead.serve.webrtc import ice_hosts

    app, handler, agents, frame = FastAPI(), SmallWebRTCRequestHandler(), set(), face_size(avatar, size)

    @app.get("/")
    async def page() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.post("/api/offer")
    async def offer(request: dict) -> dict:
        async def start(connection) -> None:
            task = asyncio.create_task(run_agent(connection, avatar, size, frame))
            agents.add(task)  # held: a task nobody references can be collected mid-run
            task.add_done_callback(agents.discard)

        if request.get("type") != "offer" or "m=video" not in str(request.get("sdp")):
            raise HTTPException(400, "not a WebRTC offer: an SDP offer with audio and video wanted")
        try:
            with ice_hosts(ice):  # aioice skips loopback by itself: gather where the page is served from
                return await handler.handle_web_request(SmallWebRTCRequest.from_dict(request), start)
        except (TypeError, ValueError) as e:  # not an offer, or an SDP aiortc cannot read
            raise HTTPException(400, f"not a WebRTC offer: {e}") from None

    return app


def face_size(avatar: str | None, size: int) -> tuple[int, int]:
    """The images' size: a ``.avatar``'s own, else ``size`` square (what TalkheadVideoService draws)."""
    if avatar is not None and Path(avatar).suffix == ".avatar":
        from talkhead.avatar.file import load_avatar

        h, w = load_avatar(avatar).base.shape[1:3]  # its own video's frames, the face redrawn in them
        return w, h
    return size, size


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--avatar", default=None, help="a photo or .avatar file (default: the built-in photo)")
    p.add_argument("--size", type=int, default=256, help="a photo's drawn size in pixels (default 256)")
    args = p.parse_args(argv)
    ok = 32 <= args.size <= 1024 and 0 < args.port < 65536
    bad = (f"no such photo or .avatar file: {args.avatar}" if args.avatar and not Path(args.avatar).is_file()
           else None if ok else "--size is 32..1024 pixels and --port 1..65535")
    if bad:  # one line and exit code 2, as talkhead's own commands answer bad input
        print(f"error: {bad}", file=sys.stderr)
        sys.exit(2)
    import uvicorn

    from talkhead.audio.piper_tts import load_voice

    load_voice("joe")  # about 3 s: here, not in the first browser's first sentence
    ice = None if args.host in ("0.0.0.0", "::") else (socket.gethostbyname(args.host),)
    app = make_app(args.avatar, args.size, ice)
    print(f"open http://{args.host}:{args.port}/ and press Start", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
