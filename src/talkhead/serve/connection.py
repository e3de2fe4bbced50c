"""One live session's protocol, whatever carries it: JSON messages in, events, frames and audio out.

The WebSocket (``/v1/stream``) and the WebRTC data channel (``/v1/webrtc``) share this handler: the
same messages (``start``, ``say``, ``interrupt``, ``avatar``, ``audio_end``, ``end``, client PCM16) and
the same events (``ready``, ``speaking``, ``done``, ``interrupted``, ``error``). Only the ``Sink`` differs:
how an event, a frame and a frame's audio reach the client. Frames leave on one 25 fps clock here.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Protocol

import numpy as np

from talkhead.config import DEFAULT_VOICE, FPS
from talkhead.errors import InputError
from talkhead.serve.session import LiveSession

# An utterance's second frame is due this much later than one frame after its first. Client audio's first frame goes
# as soon as it is drawn, and the next is drawn when the next 40 ms of audio have come and been drawn as long: on the
# clock a frame later it is a coin toss whether it is there, and a tick without it shows a frame again (a stall).
START_SLACK_S = 0.01


class Sink(Protocol):
    """How one transport delivers what the session makes."""

    async def event(self, message: dict) -> None:
        """A JSON event (ready, speaking, done, interrupted, error)."""

    async def frame(self, index: int, image: np.ndarray | None) -> None:
        """Frame ``index`` on the clock: a new image, or None (none drawn in time: show the last again)."""

    async def audio(self, index: int, pcm: np.ndarray) -> None:
        """The 40 ms of int16 16 kHz speech that goes with frame ``index`` (sent before that frame)."""

    def flush(self) -> None:
        """An interrupt: drop media queued for the client but not yet sent."""

    async def close(self) -> None:
        """``end``: close the transport."""


class Connection:
    """Commands in (``handle``), paced frames out through a ``Sink``; ``close`` frees the session."""

    def __init__(self, sink: Sink, cfg, avatars, model, replica: str | None = None) -> None:
        self.sink, self.cfg, self.avatars, self.model = sink, cfg, avatars, model
        self.replica = replica  # under serve --ray: which replica holds this session (told in 'ready')
        self.session: LiveSession | None = None
        self.ended = False  # 'end' arrived: the transport is being closed
        self.frame = 0  # the next frame index sent
        self.dropped_upto = 0  # utterances up to this number were interrupted
        self.last_spoken = 0  # the last utterance whose frames were sent
        self.speaking: int | None = None
        self.audio_s = 0.0
        self._pacer: asyncio.Task | None = None

    async def error(self, message: str) -> None:
        await self.sink.event({"type": "error", "message": message})

    async def handle(self, text: str | None = None, data: bytes | None = None) -> None:
        """One client message: JSON text, or binary PCM16 audio. Problems answer with an ``error`` event."""
        if len(data or b"") > self.cfg.max_message or len(text or "") > self.cfg.max_message:
            await self.error(f"message over {self.cfg.max_message >> 20} MB")
            return
        if data is not None:
            await self._client_audio(data)
            return
        try:
            m = json.loads(text)
            kind = m["type"] if isinstance(m, dict) else None
        except (ValueError, KeyError, TypeError):
            await self.error("messages are JSON objects with a 'type'")
            return
        handler = {"start": self.start, "say": self._say, "interrupt": self._interrupt, "end": self._end,
                   "audio_end": self._audio_end, "avatar": self._avatar}.get(kind)
        if handler is None:
            await self.error(f"unknown message type {kind!r}")
            return
        if kind != "start" and self.session is None:
            await self.error("send 'start' first")
            return
        try:
            await handler(m)
        except InputError as e:
            await self.error(str(e))

    def close(self) -> None:
        """Stop the clock and the session's producer (idempotent)."""
        if self._pacer is not None:
            self._pacer.cancel()
            self._pacer = None
        if self.session is not None:
            self.session.close()
            self.session = None

    async def start(self, m: dict) -> None:
        """Open the session (raises InputError for a bad avatar, model or voice), send ``ready``, start the clock."""
        from talkhead.audio.piper_tts import PIPER_VOICES, load_voice
        from talkhead.audio.tts import check_voice
        from talkhead.motion.stream import MotionConfig

        if self.session is not None:
            raise InputError("this session has started already")
        renderer = await asyncio.to_thread(self.avatars.renderer, None, m.get("avatar"))
        model = await asyncio.to_thread(self.model, m.get("model"))
        voice = check_voice(m.get("voice") or DEFAULT_VOICE)
        if voice in PIPER_VOICES:  # a neural voice loads in about 3 s: before 'ready', not in the first 'say'
            await asyncio.to_thread(load_voice, voice)
        seed = m.get("seed") or 0
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**31:
            raise InputError("'seed' is an integer from 0 to 2147483647")  # numpy and torch refuse others, late
        live = None if self.cfg.live_model is None else await asyncio.to_thread(self.model, self.cfg.live_model)
        self.session = LiveSession(model, renderer, MotionConfig(seed=seed), voice, live_model=live)
        w, h = renderer.size
        ready = {"type": "ready", "fps": FPS, "width": w, "height": h, "sample_rate": 16000}
        await self.sink.event(ready if self.replica is None else {**ready, "replica": self.replica})
        self._pacer = asyncio.create_task(self._pace())

    async def _say(self, m: dict) -> None:
        from talkhead.audio.piper_tts import PIPER_VOICES
        from talkhead.audio.tts import speech_chunks, split_sentences, synthesize

        text = m.get("text")
        if not isinstance(text, str) or not text.strip() or len(text) > self.cfg.max_text:
            raise InputError(f"'say' needs 'text', 1 to {self.cfg.max_text} characters")
        if self.session.waiting() >= self.cfg.max_waiting:
            raise InputError(f"{self.cfg.max_waiting} utterances are waiting to be spoken: this say is dropped")
        voice = self.session.voice
        if voice not in PIPER_VOICES and len(split_sentences(text)) == 1:
            # One sentence of espeak-ng, made in milliseconds: spoken whole, as offline.
            speech = await asyncio.to_thread(synthesize, text, voice)
            self.session.say(speech.wav)
            return
        # As it is synthesised (a Piper sentence in pieces, espeak-ng sentence by sentence): the first piece
        # is made here (its errors answer this message), the rest while the face speaks, so a say starts
        # after a fraction of a second of speech rather than after its first sentence or all of them.
        chunks = speech_chunks(text, voice)
        self.session.expect_speech()
        try:
            first = await asyncio.to_thread(next, chunks)
        except BaseException:
            self.session.expect_speech(0.0)
            raise
        self.session.say_sentences(itertools.chain([first], chunks))

    async def _client_audio(self, data: bytes) -> None:
        if self.session is None:
            await self.error("send 'start' before audio")
            return
        if len(data) % 2:
            await self.error("audio is PCM16: an even number of bytes")
            return
        if not data:
            return  # nothing to say: an empty chunk would open an utterance that holds up the ones after it
        self.audio_s += len(data) / 2 / 16000
        if self.audio_s > self.cfg.max_audio_s:
            await self.error(f"an utterance is at most {self.cfg.max_audio_s:.0f} s of audio")
            return
        if self.session.client_backlog_s() > self.cfg.max_audio_ahead_s:  # per session, whatever the utterances
            await self.error(f"client audio is {self.cfg.max_audio_ahead_s:.0f} s ahead of the face: send it no "
                             "faster than it is spoken (this chunk is dropped)")
            return
        self.session.audio(np.frombuffer(data, "<i2").astype(np.float32) / 32768.0)

    async def _audio_end(self, m: dict) -> None:
        self.audio_s = 0.0
        self.session.audio_end()

    async def _interrupt(self, m: dict) -> None:
        self.dropped_upto = self.session._utterances
        self.session.interrupt()
        self.sink.flush()
        self.speaking = None
        await self.sink.event({"type": "interrupted", "frame": self.frame})

    async def _avatar(self, m: dict) -> None:
        renderer = await asyncio.to_thread(self.avatars.renderer, None, m.get("avatar"))
        self.session.set_renderer(renderer)

    async def _end(self, m: dict) -> None:
        self.ended = True
        self.close()
        await self.sink.close()

    async def _pace(self) -> None:
        """One frame every 40 ms: the next drawn one, or the last one again if none is ready."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while self.session is not None:
            out = self.session.take()
            while out is not None and out.utterance is not None and out.utterance <= self.dropped_upto:
                out = self.session.take()  # drawn before the interrupt: never sent
            if out is not None and out.utterance is not None:
                if self.speaking != out.utterance:
                    self.speaking = self.last_spoken = out.utterance
                    due += START_SLACK_S
                    await self.sink.event({"type": "speaking", "utterance": out.utterance, "frame": self.frame})
                await self.sink.audio(self.frame, out.audio)
            await self.sink.frame(self.frame, None if out is None else out.image)
            if out is not None and out.last:
                await self.sink.event({"type": "done", "utterance": out.utterance, "frame": self.frame})
                self.speaking = None
            self.frame += 1
            due += 1 / FPS
            delay = due - loop.time()
            if delay < -2 / FPS:  # fell behind (a slow reader): skip ahead, never queue up
                skipped = int(-delay * FPS)
                self.frame, due = self.frame + skipped, due + skipped / FPS
            pending = self.session is not None and self.session._utterances > max(self.dropped_upto, self.last_spoken)
            if self.speaking is None and pending and await self._speech_before(due):
                due = loop.time()  # new speech goes now, not at the next tick: the clock starts again from it
            else:
                await asyncio.sleep(max(0.0, due - loop.time()))

    async def _speech_before(self, due: float) -> bool:
        """While an utterance asked for has not started, wait until ``due`` in short steps; True as soon as its
        first frame is ready (on average it would wait half a frame, 20 ms, for the next tick)."""
        loop = asyncio.get_running_loop()
        while (left := due - loop.time()) > 0:
            if self.session is not None and self.session.speech_waiting(max(self.dropped_upto, self.last_spoken)):
                return True
            await asyncio.sleep(min(left, 0.005))
        return False
