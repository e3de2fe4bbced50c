"""``talkhead bench pipecat``: ``TalkheadVideoService`` in real Pipecat pipelines, measured as an agent runs it.

Each agent is a ``PipelineWorker``: a tap noting when TTS audio reaches the face, the service, and a real
``BaseOutputTransport`` (Pipecat's audio chunking and queue, its video clock) whose device plays sound in real
time (a write returns once played, as SmallWebRTC's does) and shows an image when written. The TTS is real speech
(tests/assets/speech) as a streaming TTS sends it: 24 kHz PCM16 in 20 ms frames on the clock. Measured: the first
speech image at the transport after the first TTS audio frame, in-process and from a ``talkhead serve`` in this
process (``server_url``), beside ``/v1/stream``'s own clients (``bench.serve``: 20 ms chunks -> first frame); the
A/V offset (each speech image's 40 ms of audio starting to play minus the image shown) with the transport's live
video clock and with images sent through its audio queue (``sync_with_audio``); speech images after an
``InterruptionFrame`` 0.3 s into 3 s of speech; agents speaking at once in this process: new images per second.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from talkhead.config import LIVE_SIZE, option
from talkhead.util import atomic_write

TTS_RATE = 24_000  # Pipecat's usual TTS output rate


@dataclass(frozen=True)
class PipecatBenchConfig:
    utterances: int = option(5, "for the first image and A/V offset, each --seconds long")
    seconds: float = option(3.0, "each utterance's audio")
    interrupts: int = 3  # 3 s of audio each, cut 0.3 s after its first image
    agents: tuple[int, ...] = option((1, 2, 3), "agents at once", nargs="+")
    agent_seconds: float = option(10.0, "how long each agent speaks at each level")
    size: int = option(LIVE_SIZE, "the face's size in pixels")
    threads: int = 1  # torch's, as talkhead serve: the agents (each drawing in a thread) are the parallelism


@dataclass
class _Log:
    """What one agent's tap and transport saw, on ``time.monotonic()``."""

    audio_in: list[float] = field(default_factory=list)  # the first TTS audio frame of each utterance
    first_image: dict[int, float] = field(default_factory=dict)  # utterance -> its first image at the transport
    shown: dict[int, float] = field(default_factory=dict)  # image id -> first shown
    speech: list[int] = field(default_factory=list)  # speech image ids in order
    sound_at: dict[int, int] = field(default_factory=dict)  # speech image id -> its sound's first sample in the stream
    chunks: list[tuple[int, float]] = field(default_factory=list)  # (first sample, when it played) of each write
    received: int = 0  # samples of the audio stream the transport was given (with its flushes' padding)
    new_images: list[float] = field(default_factory=list)  # arrival of each image drawn (not a repeat)
    last_speech: float = 0.0
    stopped: int = 0  # TTSStoppedFrames at the transport
    cut: bool = False  # the transport has seen an InterruptionFrame
    stale: int = 0  # speech images after it
    waiting: int | None = None  # the speech image whose sound is the next speech audio

    def note(self, frame, now: float, chunk: int) -> None:
        """A frame reaching the output transport, whose audio buffer plays ``chunk`` samples at a time."""
        from pipecat.frames.frames import InterruptionFrame, OutputAudioRawFrame, OutputImageRawFrame, TTSStoppedFrame

        from talkhead.integrations.pipecat import LEAD_KEY, REPEAT_KEY, UTTERANCE_KEY

        if isinstance(frame, OutputImageRawFrame):
            self.new_images += [] if frame.metadata.get(REPEAT_KEY) else [now]
            if (utterance := frame.metadata.get(UTTERANCE_KEY)) is not None:
                self.first_image.setdefault(utterance, now)
                self.speech.append(frame.id)
                self.last_speech, self.stale, self.waiting = now, self.stale + self.cut, frame.id
        if isinstance(frame, OutputAudioRawFrame):  # where each image's own sound is in the stream
            if self.waiting is not None and not frame.metadata.get(LEAD_KEY):
                self.sound_at[self.waiting], self.waiting = self.received, None
            self.received += len(frame.audio) // 2
        if isinstance(frame, TTSStoppedFrame):  # the transport pads its buffer to a whole chunk and plays it
            self.received = -(-self.received // chunk) * chunk
            self.stopped += 1
        self.cut |= isinstance(frame, InterruptionFrame)


def _tap(log: _Log):
    """A processor noting when the first TTS audio frame of each utterance passes (on to the face)."""
    from pipecat.frames.frames import TTSAudioRawFrame, TTSStartedFrame
    from pipecat.processors.frame_processor import FrameProcessor

    class Tap(FrameProcessor):
        waiting = False

        async def process_frame(self, frame, direction) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, TTSStartedFrame) or (self.waiting and isinstance(frame, TTSAudioRawFrame)):
                self.waiting = isinstance(frame, TTSStartedFrame)
                log.audio_in += [] if self.waiting else [time.monotonic()]
            await self.push_frame(frame, direction)

    return Tap()


def _playout(log: _Log, size: int, live: bool):
    """Pipecat's output transport over a device that plays sound in real time; ``live``: its live video clock,
    else each image goes through the audio queue (the service's ``sync_with_audio``)."""
    from pipecat.transports.base_output import BaseOutputTransport
    from pipecat.transports.base_transport import TransportParams

    class Playout(BaseOutputTransport):
        free = 0.0  # when the device has played all it was given
        written = 0  # samples written to the device

        async def start(self, frame) -> None:
            await super().start(frame)
            await self.set_transport_ready(frame)

        async def process_frame(self, frame, direction) -> None:
            log.note(frame, time.monotonic(), self.audio_chunk_size // 2)
            await super().process_frame(frame, direction)

        async def write_audio_frame(self, frame) -> bool:
            # 40 ms chunks (audio_out_10ms_chunks=4 at 16 kHz, Pipecat's default).
            now = time.monotonic()
            log.chunks.append((self.written, max(now, self.free)))
            self.written += len(frame.audio) // 2
            self.free = log.chunks[-1][1] + len(frame.audio) / 2 / frame.sample_rate
            await asyncio.sleep(self.free - now)  # returns once played, as a sound card (or SmallWebRTC) does
            return True

        async def write_video_frame(self, frame) -> bool:
            log.shown.setdefault(frame.id, time.monotonic())  # not live, an image is drawn again till the next
            return True

    # A remote server draws at its own size (here the same): the transport would resize any other.
    return Playout(TransportParams(audio_out_enabled=True, audio_out_sample_rate=16_000, video_out_enabled=True,
                                   video_out_is_live=live, video_out_framerate=25, video_out_width=size,
                                   video_out_height=size))


def tts_pcm(seconds: float, rate: int = TTS_RATE) -> bytes:
    """``seconds`` of real speech (the test recordings end to end, looped; else synthesised) as PCM16 at ``rate``."""
    from scipy.signal import resample_poly

    from talkhead.audio.io import load_audio
    from talkhead.audio.tts import synthesize
    from talkhead.bench.serve import SENTENCE, SPEECH

    wav = np.concatenate([load_audio(p) for p in sorted(SPEECH.glob("*.wav"))] or [synthesize(SENTENCE).wav])
    wav = np.tile(wav, int(np.ceil(seconds * 16_000 / len(wav))))[: round(seconds * 16_000)]
    wav = resample_poly(wav, rate // 8000, 2) if rate != 16_000 else wav
    return (np.clip(wav, -1, 1) * 32767).astype("<i2").tobytes()


async def _speak(worker, pcm: bytes) -> None:
    """One utterance as a streaming TTS sends it: started, 20 ms frames on the clock, stopped."""
    from pipecat.frames.frames import TTSAudioRawFrame, TTSStartedFrame, TTSStoppedFrame

    await worker.queue_frame(TTSStartedFrame())
    step, due = TTS_RATE // 50 * 2, time.monotonic()
    for i in range(0, len(pcm), step):
        await worker.queue_frame(TTSAudioRawFrame(pcm[i:i + step], TTS_RATE, 1))
        due += 0.02
        await asyncio.sleep(max(0.0, due - time.monotonic()))
    await worker.queue_frame(TTSStoppedFrame())


async def _until(test, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not test() and time.monotonic() < end:
        await asyncio.sleep(0.02)


async def _agent(script, size: int, barrier: asyncio.Barrier | None = None, live: bool = True, **service) -> _Log:
    """One agent's pipeline, run until ``script(worker, log)`` is done, then ended; with ``barrier``, the script
    starts once every agent sharing it has started (so that they all speak at once)."""
    from pipecat.frames.frames import EndFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    from talkhead.integrations.pipecat import TalkheadVideoService

    log, started = _Log(), asyncio.Event()
    face = TalkheadVideoService(size=size, sync_with_audio=not live, **service)
    worker = PipelineWorker(Pipeline([_tap(log), face, _playout(log, size, live)]), enable_rtvi=False,
                            params=PipelineParams(audio_out_sample_rate=16_000), idle_timeout_secs=None)
    worker.add_event_handler("on_pipeline_started", lambda *_: started.set())  # a plain function: called at once

    async def drive() -> None:
        await asyncio.wait_for(started.wait(), 300)  # the models and the face load in setup
        if barrier is not None:
            await barrier.wait()
        await asyncio.sleep(1.0)  # idle first, as an agent waiting for its user
        await script(worker, log)
        await worker.queue_frame(EndFrame())

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    await asyncio.gather(runner.run(), drive())
    return log


def _utterances(pcm: bytes, n: int):
    async def script(worker, log: _Log) -> None:
        for k in range(n):
            await _speak(worker, pcm)
            await _until(lambda: log.stopped > k, 30)
            await asyncio.sleep(0.5)
    return script


def _interrupt(pcm: bytes, after_s: float = 0.3):
    async def script(worker, log: _Log) -> None:
        from pipecat.frames.frames import InterruptionFrame

        speaking = asyncio.create_task(_speak(worker, pcm))
        await _until(lambda: log.first_image, 20)
        await asyncio.sleep(after_s)
        speaking.cancel()  # the TTS stops at an interruption (which reaches it before the face)
        await worker.queue_frame(InterruptionFrame())
        await asyncio.sleep(1.0)
    return script


def first_image_s(log: _Log) -> list[float]:
    return [log.first_image[k + 1] - t for k, t in enumerate(log.audio_in) if k + 1 in log.first_image]


def sound_played(log: _Log) -> dict[int, float]:
    """Speech image id -> when its own sound started to play (found in the chunk the device played it in)."""
    starts = [c[0] for c in log.chunks]
    out = {}
    for image, at in log.sound_at.items():
        k = bisect.bisect_right(starts, at) - 1
        if k >= 0:
            out[image] = log.chunks[k][1] + (at - starts[k]) / 16_000
    return out


def av_offsets_ms(log: _Log) -> dict:
    """Each speech image's audio starting to play minus the image shown (positive: the sound is late)."""
    played = sound_played(log)
    v = np.array([(played[i] - log.shown[i]) * 1000 for i in log.speech if i in log.shown and i in played]
                 or [np.nan])
    return {"p50": round(float(np.percentile(abs(v), 50)), 1), "p95": round(float(np.percentile(abs(v), 95)), 1),
            "max": round(float(abs(v).max()), 1), "signed_mean": round(float(v.mean()), 1),
            "n": int(np.isfinite(v).sum())}


def _rate(log: _Log) -> tuple[float, float]:
    """New images per second and their interval p95 (ms) while the agent was speaking."""
    start = min(log.first_image.values(), default=0.0)
    seen = np.array([t for t in log.new_images if start <= t <= log.last_speech])
    gaps = np.diff(seen) * 1000 if len(seen) > 2 else np.array([np.inf])
    return len(seen) / max(log.last_speech - start, 1e-3), float(np.percentile(gaps, 95))


def _levels(cfg: PipecatBenchConfig, pcm: bytes) -> list[dict]:
    rows = []
    for n in cfg.agents:
        async def together() -> list[_Log]:
            script, barrier = _utterances(pcm, 1), asyncio.Barrier(n)
            return await asyncio.gather(*(_agent(script, cfg.size, barrier, seed=i) for i in range(n)))

        rates = [_rate(log) for log in asyncio.run(together())]
        rows.append({"agents": n, "new_fps_min": round(min(r[0] for r in rates), 2),
                     "interval_ms_p95_max": round(max(r[1] for r in rates), 2)})
    return rows


def run_pipecat_bench(out: str | Path, cfg: PipecatBenchConfig = PipecatBenchConfig()) -> dict:
    """Write pipecat.json and pipecat.png under ``out``."""
    import torch

    from talkhead.bench.serve import _audio_latency, _ms, _settled
    from talkhead.serve.app import ServeConfig, serve_in_thread

    Path(out).mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(cfg.threads)
    load, pcm = [round(v, 2) for v in os.getloadavg()], tts_pcm(cfg.seconds)
    local = asyncio.run(_agent(_utterances(pcm, cfg.utterances), cfg.size))
    synced = asyncio.run(_agent(_utterances(pcm, cfg.utterances), cfg.size, live=False))
    cuts = [asyncio.run(_agent(_interrupt(tts_pcm(3.0)), cfg.size)).stale for _ in range(cfg.interrupts)]
    levels = _levels(cfg, tts_pcm(cfg.agent_seconds))
    srv, server = serve_in_thread(ServeConfig(size=cfg.size, max_sessions=2))
    try:
        remote = asyncio.run(_agent(_utterances(pcm, cfg.utterances), cfg.size, server_url=f"http://{server}"))
        pcm16 = [tts_pcm(cfg.seconds, 16_000)] * cfg.utterances  # the same speech, at /v1/stream's rate
        stream = asyncio.run(_audio_latency(_settled(server, 0.5), pcm16, chunk_ms=20))
    finally:
        srv.should_exit = True
    held = [r["agents"] for r in levels if r["new_fps_min"] >= 24.0 and r["interval_ms_p95_max"] <= 60.0]
    result = {"config": asdict(cfg), "cpu_count": os.cpu_count(), "load_before": load,
              "first_image_ms": {"in_process": _ms(first_image_s(local)), "remote": _ms(first_image_s(remote)),
                                 "v1_stream": _ms(stream)},
              "av_offset_ms": {"live": av_offsets_ms(local), "synced": av_offsets_ms(synced)},
              "stale_images_after_interrupt": {"max": max(cuts), "runs": cuts},
              "agents": levels, "agents_at_25fps": max(held, default=0),
              "load_after": [round(v, 2) for v in os.getloadavg()]}
    atomic_write(Path(out) / "pipecat.json", json.dumps(result, indent=1).encode())
    _plot(result, Path(out) / "pipecat.png")
    return result


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, (a, b) = new_figure((9, 3.4), ncols=2)
    first, av = result["first_image_ms"], result["av_offset_ms"]
    a.bar(["Pipecat\nin-process", "Pipecat\nremote", "/v1/stream\nclient audio"],
          [first[k]["median"] for k in ("in_process", "remote", "v1_stream")], color=["#4c72b0"] * 2 + ["#dd8452"])
    a.axhline(200, color="k", ls="--", lw=1)
    a.set_ylabel("ms (median)")
    a.set_title(f"first image after the first TTS audio frame\nA/V offset p95: {av['live']['p95']} ms live, "
                f"{av['synced']['p95']} ms synced; stale images {result['stale_images_after_interrupt']['max']}",
                fontsize=8)
    rows = result["agents"]
    b.plot([r["agents"] for r in rows], [r["new_fps_min"] for r in rows], "o-", label="slowest agent, new images/s")
    b.axhline(25, color="k", ls="--", lw=1)
    b.set(xlabel="agents speaking at once in one process", ylabel="images/s", ylim=(0, 27),
          xticks=[r["agents"] for r in rows])
    b.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
