"""The face of a Pipecat voice agent: ``TalkheadVideoService`` sits between the TTS and the output transport.

    pipeline = Pipeline([transport.input(), stt, llm, tts, TalkheadVideoService(avatar="me.avatar"),
                         transport.output()])

It feeds the TTS audio to a live student (``serve.session.LiveSession``, the same path as ``talkhead serve``)
and sends downstream, at 25 fps, an ``OutputImageRawFrame`` per frame, each speech image followed by a
``TTSAudioRawFrame`` of exactly the 40 ms of audio (16 kHz mono) that its face was drawn from. The TTS's
own audio frames are swallowed, not passed on: the audio the transport plays is the audio the face was
drawn from, re-chunked by frame, so it cannot drift from the images or be heard twice. Between utterances
the images are idle motion (blinks, small head drift), so the face never freezes. Every other frame passes
through untouched. With ``server_url`` the frames come from a running ``talkhead serve`` instead
(``integrations._remote``), through the same clock. Install with ``pip install 'talkhead[pipecat]'``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np

try:
    from pipecat.frames.frames import (
        CancelFrame,
        EndFrame,
        Frame,
        InterruptionFrame,
        OutputImageRawFrame,
        StartFrame,
        TTSAudioRawFrame,
        TTSStartedFrame,
        TTSStoppedFrame,
    )
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor, FrameProcessorSetup
except ModuleNotFoundError as e:  # an optional extra: say how to get it
    raise ModuleNotFoundError(f"{e}: talkhead's Pipecat service needs pip install 'talkhead[pipecat]'") from e

from talkhead.audio.tts import Resampler
from talkhead.config import FPS, LIVE_MODEL, LIVE_SIZE, LIVE_STUDENT, SAMPLE_RATE  # SAMPLE_RATE: the face's audio
from talkhead.integrations._local import face_renderer, shared_model
from talkhead.integrations._remote import RemoteSession, stream_url
from talkhead.serve.session import LiveSession, Out

UTTERANCE_KEY = "talkhead_utterance"  # image frames' metadata: the utterance number, None for idle
REPEAT_KEY = "talkhead_repeat"  # image frames' metadata: True for the last image again (none drawn in time)
LEAD_KEY = "talkhead_lead"  # audio frames' metadata: True for the half frame of silence that leads synced speech
_FRAME = SAMPLE_RATE // FPS  # samples of audio per image
_SILENT_S = 1.0  # an open utterance with no TTS audio for this long is closed (a TTS that never stops)
_HELD_STOP_S = 2.0  # a held TTSStoppedFrame goes on after this long on idle frames, whatever happened
_END_GRACE_S = 2.0  # EndFrame waits for the speech given while its images come, till this long without one
_CONNECT_S = 5.0  # a server that does not answer in this long: an ErrorFrame, and the pipeline goes on faceless


def pcm_to_mono(data: bytes, channels: int) -> np.ndarray:
    """Interleaved PCM16 -> mono float32 in [-1, 1]. A trailing partial sample (an odd byte count, or a
    frame cut between channels) is dropped: a TTS chunk boundary is not ours to repair."""
    channels = max(1, int(channels))
    usable = len(data) // (2 * channels) * 2 * channels
    pcm = np.frombuffer(data[:usable], "<i2").astype(np.float32) / 32768.0
    return pcm.reshape(-1, channels).mean(axis=1)


class _AudioIn:
    """TTS audio at any rate and channel count -> mono float32 at 16 kHz, in order, chunk by chunk."""

    def __init__(self) -> None:
        self.rate: int | None = None
        self.resampler: Resampler | None = None

    def push(self, frame: TTSAudioRawFrame) -> np.ndarray:
        out = []
        if frame.sample_rate != self.rate:  # a new rate: the old one's held-back tail first
            out.append(self.flush())
            self.rate, self.resampler = frame.sample_rate, Resampler(frame.sample_rate)
        out.append(self.resampler.push(pcm_to_mono(frame.audio, frame.num_channels)))
        return np.concatenate(out)

    def flush(self) -> np.ndarray:
        """The end of an utterance: the samples the resampler held back for its filter."""
        return self.resampler.flush() if self.resampler is not None else np.zeros(0, np.float32)


class TalkheadVideoService(FrameProcessor):
    """TTS audio in, a talking face out: images at 25 fps, each speech image with its own 40 ms of audio.

    - ``TTSAudioRawFrame`` (any sample rate or channel count): drives the face, and is swallowed; the same
      audio comes out again as 16 kHz mono ``TTSAudioRawFrame``s, one per speech image, right after it.
    - ``TTSStartedFrame`` passes on at once; ``TTSStoppedFrame`` closes the utterance and passes on after
      its last image, so the transport's "bot stopped speaking" comes when the face stops.
    - ``InterruptionFrame``: the queued speech is dropped (at most the 1-2 images being drawn are still
      sent), the face goes back to idle, and the interruption is forwarded.
    - ``EndFrame``: the speech already given is shown first (while its images keep coming), then the clock stops;
      ``CancelFrame`` stops it at once.
    - Everything else passes through untouched.

    Nothing here queues up: the face draws at most 3 frames ahead of a 25 fps clock; a clock that falls
    behind (a slow downstream push, a busy CPU) skips its missed ticks, which only ever drops idle images,
    never speech or its audio. Image metadata: ``"talkhead_utterance"``, the utterance number (None: idle or
    a repeat); ``"talkhead_repeat"``, True where no frame was drawn in time and the last image goes again.

    For a transport, ``video_out_enabled=True, video_out_is_live=True, video_out_framerate=25`` and
    ``video_out_width``/``video_out_height`` of the face (``size``, or the ``.avatar``'s own size).
    """

    def __init__(self, *, avatar: str | Path | None = None, size: int = LIVE_SIZE, model: str = LIVE_MODEL,
                 live_model: str = LIVE_STUDENT, server_url: str | None = None, seed: int = 0,
                 sync_with_audio: bool = False, **kwargs) -> None:
        """``avatar``: a photo or ``.avatar`` path (None: the built-in photo); ``size``: a photo's drawn size
        in pixels; ``model``/``live_model``: shipped model names, checkpoint paths or ``MODEL+LIPS`` (in-process);
        ``server_url``: None renders in-process, ``http://HOST:PORT`` (``?token=T``) takes the frames of a
        running ``talkhead serve`` (its own models and size; ``avatar`` is uploaded to it); ``seed``: idle
        motion's seed; ``sync_with_audio``: set on every image, for a transport with
        ``video_out_is_live=False`` (Pipecat 1.14 never draws synced images when live); speech then starts
        with half a frame of silence, so that with the transport's default 40 ms audio chunks each image is
        shown within 20 ms of its sound (``_lead``)."""
        if server_url is not None:
            stream_url(server_url)  # a malformed URL is refused now, not when the pipeline starts
        if avatar is not None and not Path(avatar).is_file():
            raise ValueError(f"no such photo or .avatar file: {avatar}")
        if not isinstance(size, int) or not 32 <= size <= 1024:
            raise ValueError(f"size is a whole number of pixels from 32 to 1024, not {size!r}")
        super().__init__(**kwargs)
        self._avatar, self._size, self._seed, self._sync = avatar, size, seed, sync_with_audio
        self._model_names = (model, live_model)
        self._session: LiveSession | None = None
        self._pacer: asyncio.Task | None = None
        self._input = _AudioIn()
        self._open: int | None = None  # the utterance being fed
        self._latest = 0  # the last utterance number the session gave
        self._dropped = 0  # utterances up to this one were interrupted: their frames are never sent
        self._done = 0  # the last utterance whose last image was sent
        self._last_in = 0.0  # when TTS audio last came
        self._held: list[tuple[int, float, TTSStoppedFrame]] = []  # (utterance, when, frame)
        self._last_image: np.ndarray | None = None
        self._spoken = 0  # speech images sent
        self._phase = 0  # samples sent since the transport last emptied its audio buffer, modulo a frame
        self._server_url, self._faceless = server_url, ""  # why there is no face (a server that did not answer)

    def _open_session(self) -> LiveSession:
        from talkhead.motion.stream import MotionConfig

        model, live = (shared_model(n) for n in self._model_names)
        return LiveSession(model, face_renderer(self._avatar, self._size), MotionConfig(seed=self._seed),
                           live_model=live)

    async def setup(self, setup: FrameProcessorSetup) -> None:
        """Load the models and the face (seconds) here: Pipecat sets processors up side by side, before
        StartFrame, so the agent pays for the slowest processor rather than for all of them."""
        await super().setup(setup)
        await self._make_face()

    async def _make_face(self) -> None:
        if self._server_url is None:
            self._session = await asyncio.to_thread(self._open_session)
            return
        remote = RemoteSession()
        try:
            await remote.connect(self._server_url, self._avatar, self._seed, _CONNECT_S)
            self._session = remote
        except Exception as e:  # noqa: BLE001  (any failure to reach the server: reported once the pipeline runs)
            await remote.aclose()
            self._faceless = f"talkhead serve at {self._server_url} did not answer ({e!r}): no face, audio passes"

    async def cleanup(self) -> None:
        """Stop the clock and the session's drawing thread (idempotent)."""
        await super().cleanup()
        await self._stop()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        """Route one frame; see the class docstring."""
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):  # either way: a transport's broadcast comes upstream
            self._interrupt()
            await self.push_frame(frame, direction)
        elif direction != FrameDirection.DOWNSTREAM:
            await self.push_frame(frame, direction)
        elif isinstance(frame, StartFrame):
            await self.push_frame(frame, direction)  # StartFrame reaches every processor before our images
            await self._start()
        elif isinstance(frame, TTSAudioRawFrame):
            if not self._feed(frame):  # taken: it comes out again, frame by frame, with its images
                await self.push_frame(frame, direction)  # no face: the agent still speaks
        elif isinstance(frame, TTSStartedFrame):
            self._close_utterance()  # a TTS that never sent TTSStoppedFrame: its speech ends here
            await self.push_frame(frame, direction)
        elif isinstance(frame, TTSStoppedFrame):
            await self._stopped(frame)
        elif isinstance(frame, EndFrame):
            await self._finish()
            await self.push_frame(frame, direction)
        elif isinstance(frame, CancelFrame):
            await self._stop()
            await self.push_frame(frame, direction)
        else:
            await self.push_frame(frame, direction)

    # -- TTS audio in (the processing task) --
    def _feed(self, frame: TTSAudioRawFrame) -> bool:
        """Give the face its audio; False if there is no face to give it to (not started, ended, lost)."""
        if self._session is None or not getattr(self._session, "alive", True):
            return False
        self._last_in = time.monotonic()
        pcm = self._input.push(frame)
        if len(pcm):
            self._open = self._latest = self._session.audio(pcm)
        return True

    def _close_utterance(self) -> int | None:
        """End the utterance being fed; its number, or None if none was open."""
        if self._session is None:
            return None
        tail = self._input.flush()
        if len(tail) and self._open is not None:
            self._session.audio(tail)
        number, self._open = self._open, None
        self._session.audio_end()
        return number

    async def _stopped(self, frame: TTSStoppedFrame) -> None:
        number = self._close_utterance()
        if number is None or number <= max(self._done, self._dropped) or self._pacer is None:
            await self._send_stop(frame)  # no speech of its own still to show
        else:
            self._held.append((number, time.monotonic(), frame))

    def _interrupt(self) -> None:
        if self._session is None:
            return
        self._input = _AudioIn()  # the samples it holds back belong to the dropped speech
        self._open, self._dropped, self._phase = None, self._latest, 0  # the transport drops its buffer too
        self._session.interrupt()
        # Their speech is gone: downstream, the interruption itself ends it (as it does for any TTS).
        self._held.clear()

    # -- the clock (its own task) --
    async def _start(self) -> None:
        if self._session is None and not self._faceless:  # setup() was not called (used outside a pipeline)
            await self._make_face()
        if self._faceless:
            await self.push_error(self._faceless)
        elif self._pacer is None:
            self._pacer = self.create_task(self._pace(), name="talkhead-pace")

    async def _pace(self) -> None:
        """One image every 40 ms: the next one drawn, or the last one again if none is ready."""
        loop = asyncio.get_running_loop()
        due = loop.time()
        while self._session is not None:
            if not await self._report():
                return
            if self._open is not None and time.monotonic() - self._last_in > _SILENT_S:
                self._close_utterance()
            out = self._next_out()
            await self._emit(out)
            due += 1 / FPS
            behind = loop.time() - due
            if behind > 2 / FPS:  # fell behind: skip the missed ticks, never queue images up
                due += int(behind * FPS) / FPS
            if (out is None or out.utterance is None) and await self._speech_before(due):
                due = loop.time()  # new speech goes now, not at the next tick: the clock restarts from it
            else:
                await asyncio.sleep(max(0.0, due - loop.time()))

    async def _speech_before(self, due: float) -> bool:
        """While speech given is not yet shown, wait until ``due`` in 5 ms steps; True as soon as its first
        frame is ready (it would wait half a frame, 20 ms, on average for the next tick)."""
        loop, after = asyncio.get_running_loop(), max(self._dropped, self._done)
        if self._latest <= after:
            return False
        while (left := due - loop.time()) > 0:
            if self._session is not None and self._session.speech_waiting(after):
                return True
            await asyncio.sleep(min(left, 0.005))
        return False

    async def _report(self) -> bool:
        """A remote session's errors go upstream as ErrorFrames; False once its connection is gone (the
        face stops there, and TTS audio passes through from then on)."""
        session = self._session
        while getattr(session, "errors", None):
            await self.push_error(session.errors.pop(0))
        if getattr(session, "alive", True):
            return True
        self._session, self._pacer, self._faceless = None, None, "talkhead serve: connection lost"
        await session.aclose()
        return False

    def _next_out(self) -> Out | None:
        out = self._session.take() if self._session is not None else None
        while out is not None and out.utterance is not None and out.utterance <= self._dropped:
            out = self._session.take()  # drawn before the interrupt: never sent
        return out

    async def _emit(self, out: Out | None) -> None:
        # A remote server's "done" can come after its last frame was taken: it says which utterance ended.
        self._done = max(self._done, getattr(self._session, "finished", 0))
        if out is None:
            if self._last_image is not None:  # nothing drawn in time: the transport still gets 25 fps
                await self.push_frame(self._image_frame(self._last_image, None, repeat=True))
            await self._release_stops(None)
            return
        self._last_image = out.image
        await self.push_frame(self._image_frame(out.image, out.utterance))
        if out.audio is not None:
            await self._lead()
            await self.push_frame(TTSAudioRawFrame(out.audio.tobytes(), SAMPLE_RATE, 1))
            self._phase = (self._phase + len(out.audio)) % _FRAME
            self._spoken += 1
        if out.last:
            self._done = max(self._done, out.utterance)
        await self._release_stops(out.utterance if out.last else None if out.utterance is None
                                  else out.utterance - 1)

    async def _lead(self) -> None:
        """Synced images: half a frame of silence where speech starts on a frame boundary. The output transport
        cuts audio into 40 ms chunks (Pipecat's default) and sets a synced image once the chunks queued before it
        have played; its video clock then shows it 0-40 ms later. Shifting the chunks by half a frame sets each
        image 20 ms before its sound, so it is shown within 20 ms of it either way, not up to 40 ms late."""
        if self._sync and self._phase == 0:
            silence = TTSAudioRawFrame(bytes(_FRAME), SAMPLE_RATE, 1)  # _FRAME bytes: half a frame of PCM16
            silence.metadata[LEAD_KEY] = True
            await self.push_frame(silence)
            self._phase = _FRAME // 2

    async def _send_stop(self, frame: TTSStoppedFrame) -> None:
        """A TTSStoppedFrame downstream: the transport plays out and empties its audio buffer there."""
        self._phase = 0
        await self.push_frame(frame)

    async def _release_stops(self, upto: int | None) -> None:
        """Send the held TTSStoppedFrames of utterances up to ``upto`` (their last image is out), and any
        held longer than ``_HELD_STOP_S`` while idle (an utterance too short to draw a frame)."""
        now, keep = time.monotonic(), []
        for number, since, frame in self._held:
            if (upto is not None and number <= upto) or (upto is None and now - since > _HELD_STOP_S):
                await self._send_stop(frame)
            else:
                keep.append((number, since, frame))
        self._held = keep

    def _image_frame(self, image: np.ndarray, utterance: int | None, repeat: bool = False) -> OutputImageRawFrame:
        h, w = image.shape[:2]
        frame = OutputImageRawFrame(image=np.ascontiguousarray(image).tobytes(), size=(w, h), format="RGB")
        frame.sync_with_audio = self._sync
        frame.metadata[UTTERANCE_KEY], frame.metadata[REPEAT_KEY] = utterance, repeat
        return frame

    # -- the end --
    async def _finish(self) -> None:
        """EndFrame: show (and send) the speech already given, as long as its images keep coming (a busy CPU
        draws slower than real time: a wall-clock bound would cut it short) and no more than a grace after."""
        self._close_utterance()
        if self._session is not None and self._pacer is not None:
            loop = asyncio.get_running_loop()
            seen, since = self._spoken, loop.time()
            while self._done < self._latest and self._dropped < self._latest:
                await asyncio.sleep(0.02)
                if self._spoken != seen:
                    seen, since = self._spoken, loop.time()
                elif loop.time() - since > _END_GRACE_S:
                    break  # an utterance that never ends (too short to draw a frame, a lost server)
        await self._stop()
        for _, _, frame in self._held:
            await self._send_stop(frame)
        self._held.clear()

    async def _stop(self) -> None:
        pacer, self._pacer = self._pacer, None
        if pacer is not None:
            await self.cancel_task(pacer)
        session, self._session = self._session, None
        if isinstance(session, RemoteSession):
            await session.aclose()
        elif session is not None:
            await asyncio.to_thread(session.close)  # joins the drawing thread: not on the event loop
