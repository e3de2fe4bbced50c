"""One live face: a producer thread that draws frames ahead, and the clock that sends them at 25 fps.

The producer runs ``pipeline.stream`` for speech (continuing from the motion just shown, so idle and
speech join without a jump) and seeded idle motion (blinks, small head drift, closed mouth) between
utterances. It keeps only a few frames ahead of the clock, so a new utterance starts within a few
frames, and an interrupt throws away at most those. The server holds no model logic: it moves the
frames this class makes.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from talkhead.config import DEFAULT_VOICE, FPS, HOP
from talkhead.motion.stream import OFFLINE, Hearing, MotionConfig, Ramp
from talkhead.pipeline import stream
from talkhead.rig.spec import SPEC

_log = logging.getLogger(__name__)
_LEAD = 3  # frames drawn ahead of the clock


@dataclass
class Out:
    """A drawn frame: what it shows and, for speech, its 40 ms of audio and which utterance it belongs to."""

    image: np.ndarray
    motion: np.ndarray
    utterance: int | None = None
    audio: np.ndarray | None = None  # int16 [640]
    last: bool = False  # the last frame of its utterance


@dataclass
class _Utterance:
    number: int
    wav: np.ndarray | None = None  # the whole speech (say), or
    chunks: queue.Queue | None = None  # client audio (or a say's sentences) as it arrives, None closing it
    sentences: bool = False  # chunks are a say's speech, synthesised while the face speaks
    audio: list[np.ndarray] = field(default_factory=list)  # what has arrived, for the frames' audio
    handed: int = 0  # samples the synthesis has queued (written by the feeder thread only)
    taken: int = 0  # samples the face has taken from the queue (written by the producer thread only)


def idle_track(n: int, seed: int) -> np.ndarray:
    """Idle motion [n, 58]: blinks and small head drift with the mouth closed, from the rig's own generator."""
    from talkhead.rig.nonverbal import nonverbal_motion

    return nonverbal_motion(np.zeros(n * HOP, np.float32), 16_000, [], n, np.random.default_rng(seed))


# The live student's Whisper encoder runs for every frame: in int8 a live frame takes about 14 ms instead of 21,
# and its lips follow filmed people as closely (docs/serve.md, "Figures").
LIVE_PRECISION = "int8"


def live_hearing(model) -> Hearing:
    """How a live student hears speech: the view it was fine-tuned on, its encoder in ``LIVE_PRECISION``, and as
    many frames of look-ahead as its lip net reads (a window waits for them, so that the net's last frames read
    speech rather than the silence the window is padded with)."""
    v = model.meta["live"]
    ahead = model.lips.net.cfg.ahead if model.lips is not None else 0
    return Hearing(block_s=v["block"] / FPS, context_s=v["left"] / FPS, right_s=v["right"] / FPS,
                   lookahead=max(v["lookahead"], ahead), step=v["step"], window=v["window"], precision=LIVE_PRECISION)


def warm_up(model, wav: np.ndarray) -> None:
    """Run ``model`` once on ``wav`` as sessions will (a live student as client audio is heard: its int8 encoder
    and live windows), so that the first utterance does not wait for the encoder's load and the first window."""
    from talkhead.motion.stream import motion_from_audio

    if "live" in model.meta:
        motion_from_audio(model, wav, MotionConfig(), chunk=HOP, hearing=live_hearing(model))
    else:
        motion_from_audio(model, wav, MotionConfig())


class LiveSession:
    """Thread-safe commands in (``say``, ``audio``, ``interrupt``, ``set_renderer``), frames out (``take``)."""

    def __init__(self, model, renderer, motion: MotionConfig = MotionConfig(), voice: str = DEFAULT_VOICE,
                 block_s: float = 0.2, lookahead: int = 4, sentence_block_s: float = 4.0, live_model=None,
                 ramp: Ramp = Ramp()) -> None:
        # Client audio with ``live_model`` (a live student, ``motion.train.live``): the features, windows and
        # weights it was fine-tuned for, its first frame 2-4 frames after its audio. Without one: 0.2 s
        # feature blocks with 0.2 s of context, frames 4 + 2 frames after their audio (LowLatencyRunner):
        # the first frame 0.6 s after its audio, jawOpen r 0.895 against offline motion.
        self.model, self.renderer, self.motion, self.voice = model, renderer, motion, voice
        self.block_s, self.lookahead, self.live_model = block_s, lookahead, live_model
        # A say spoken as it is synthesised (a Piper voice in pieces, or a long text sentence by sentence):
        # features in 4 s blocks (1 s context) and the offline 80-frame windows, after a ramp of short
        # windows (``motion.stream.Ramp``), so the face starts once 10 frames of speech are synthesised
        # instead of about 5 s (or the whole say). jawOpen r against offline motion of the same audio:
        # 0.974 over nine says of joe, 0.961 over four multi-sentence says of us-female (see ``Ramp``).
        self.sentence_block_s, self.ramp = sentence_block_s, ramp
        self._dropped = 0  # utterances up to this number were interrupted
        self.frames: queue.Queue[Out] = queue.Queue(_LEAD)
        self._todo: queue.Queue[_Utterance] = queue.Queue()
        self._cancel = threading.Event()  # the utterance being drawn is interrupted
        self._stop = threading.Event()
        self._renderer_next = None
        self._shown = idle_track(12, motion.seed)  # the last motion drawn (its tail continues)
        self._idle = idle_track(FPS * 60, motion.seed + 1)
        self._idle_at, self._utterances = 0, 0
        self._feed: _Utterance | None = None
        self._quiet_until = 0.0  # a say is being synthesised: no idle frames till then (see ``expect_speech``)
        # One feeder thread per session synthesises says spoken as they are made (``say_sentences``), one after
        # another in the order they were asked for: a burst of says is not a burst of threads.
        self._feeds: queue.Queue = queue.Queue()
        self._feeder: threading.Thread | None = None
        self._client_in = self._client_out = 0  # client audio samples received, and taken or dropped
        self._thread = threading.Thread(target=self._run, daemon=True, name="live-session")
        self._thread.start()

    # -- commands (any thread) --
    def expect_speech(self, seconds: float = 0.5) -> None:
        """A say is being synthesised: draw no idle frames for up to ``seconds`` (the frames drawn ahead cover
        120 ms), since its speech drops them unseen: the synthesis of its first piece gets the CPU instead."""
        self._quiet_until = time.monotonic() + seconds

    def say(self, wav: np.ndarray) -> int:
        self._utterances += 1
        self._todo.put(_Utterance(self._utterances, wav=np.asarray(wav, np.float32)))
        return self._utterances

    def say_sentences(self, wavs: Iterable[np.ndarray], ahead_s: float = 8.0) -> int:
        """Speech made as it is spoken (``tts.speech_chunks``): a feeder thread pulls ``wavs`` (so the
        synthesis runs there), at most ``ahead_s`` of speech before what the face has taken (a full window
        takes up to about 8 s: its features' 4 s block and context), and stops on an interrupt."""
        self._utterances += 1
        utt = _Utterance(self._utterances, chunks=queue.Queue(), sentences=True)
        if self._feeder is None:
            self._feeder = threading.Thread(target=self._feed_all, daemon=True, name="live-sentences")
            self._feeder.start()
        self._feeds.put((utt, iter(wavs), round(ahead_s * 16_000)))
        self._todo.put(utt)
        return utt.number

    def waiting(self) -> int:
        """Utterances asked for and not yet begun."""
        return self._todo.qsize()

    def client_backlog_s(self) -> float:
        """Seconds of client audio received and not yet taken by the face."""
        return max(0, self._client_in - self._client_out) / 16_000

    def _feed_all(self) -> None:
        """The feeder thread: each say's sentences in turn, until the session closes."""
        _lower_priority()
        while not self._stop.is_set():
            try:
                job = self._feeds.get(timeout=0.1)
            except queue.Empty:
                continue
            self._feed_sentences(*job)

    def _feed_sentences(self, utt: _Utterance, wavs: Iterator[np.ndarray], ahead: int) -> None:
        try:
            for wav in wavs:
                if not self._hand_over(utt, np.asarray(wav, np.float32), ahead):
                    return  # interrupted or closed: the rest of the text is never synthesised
        except Exception as e:  # noqa: BLE001  (a thread has no caller to raise to: the face stops there)
            _log.warning("a sentence could not be spoken: %s", e)
        # The end of the text, or a sentence that failed: the utterance ends where it got to.
        self._hand_over(utt, None, ahead)

    def _hand_over(self, utt: _Utterance, chunk: np.ndarray | None, ahead: int) -> bool:
        """Queue speech (None: the end) once the face is less than ``ahead`` samples behind; False if the
        utterance is gone."""
        while not (self._stop.is_set() or utt.number <= self._dropped):
            if chunk is None or utt.handed - utt.taken < ahead:
                utt.handed += 0 if chunk is None else len(chunk)
                utt.chunks.put(chunk)
                return True
            self._stop.wait(0.02)
        return False

    def audio(self, pcm: np.ndarray) -> int:
        """Client speech, float32 at 16 kHz; the first chunk opens an utterance, ``audio_end`` closes it."""
        if self._feed is None:
            self._utterances += 1
            self._feed = _Utterance(self._utterances, chunks=queue.Queue())
            self._todo.put(self._feed)
        self._client_in += len(pcm)
        self._feed.chunks.put(np.asarray(pcm, np.float32))
        return self._feed.number

    def audio_end(self) -> None:
        if self._feed is not None:
            self._feed.chunks.put(None)
            self._feed = None

    def interrupt(self) -> None:
        """Drop what is queued and stop drawing the current utterance."""
        self._dropped, self._quiet_until = self._utterances, 0.0
        self.audio_end()
        self._client_out = self._client_in  # what was queued is dropped with its utterances
        while not self._todo.empty():
            try:
                self._todo.get_nowait()
            except queue.Empty:
                break
        self._cancel.set()
        self.drain()

    def set_renderer(self, renderer) -> None:
        self._renderer_next = renderer  # taken between frames, so the stream has no gap

    def take(self) -> Out | None:
        try:
            return self.frames.get_nowait()
        except queue.Empty:
            return None

    def speech_waiting(self, after: int) -> bool:
        """Whether the next frame to take is speech of an utterance numbered above ``after``."""
        with self.frames.mutex:
            head = self.frames.queue[0] if self.frames.queue else None
        return head is not None and head.utterance is not None and head.utterance > after

    def drain(self) -> None:
        while self.take() is not None:
            pass

    def _drop_idle(self) -> None:
        """Drop the idle frames drawn ahead, keeping any speech still queued: a say queued behind another
        starts as the last frames of the one before it wait for the clock, and they must still be shown."""
        with self.frames.mutex:
            kept = [out for out in self.frames.queue if out.utterance is not None]
            if len(kept) < len(self.frames.queue):
                self.frames.queue.clear()
                self.frames.queue.extend(kept)
                self.frames.not_full.notify_all()

    def close(self) -> None:
        self._stop.set()
        self._cancel.set()
        self.drain()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=2.0)  # not left inside torch when the process exits
        if self._feeder is not None:  # nor inside onnxruntime: the feeder stops after the piece it is making
            self._feeder.join(timeout=0.5)

    # -- the producer thread --
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                quiet = self._quiet_until > time.monotonic()
                utt = self._todo.get(timeout=0.01) if quiet else self._todo.get_nowait()
            except queue.Empty:
                if not quiet:
                    self._idle_frame()
                continue
            self._quiet_until = 0.0
            self._cancel.clear()
            self._speak(utt)

    def _put(self, out: Out) -> bool:
        while not self._stop.is_set():
            if out.utterance is not None and self._cancel.is_set():
                return False
            if out.utterance is None and not self._todo.empty():
                return False  # speech is waiting, and would drop this idle frame unseen
            try:
                self.frames.put(out, timeout=0.02)
                self._shown = np.concatenate([self._shown[1:], out.motion[None]])
                return True
            except queue.Full:
                continue
        return False

    def _swap_renderer(self) -> None:
        if self._renderer_next is not None:
            self.renderer, self._renderer_next = self._renderer_next, None

    def _idle_frame(self) -> None:
        self._swap_renderer()
        row = self._idle[self._idle_at % len(self._idle)].copy()
        # Head and brows ease from where speech left them back to the idle track over ~0.5 s.
        last = self._shown[-1]
        ease = 0.85
        keep = [SPEC["browInnerUp"], *range(SPEC.pose.start, SPEC.pose.stop)]
        row[keep] = ease * last[keep] + (1 - ease) * row[keep]
        self._idle_at += 1
        image = next(iter(self.renderer.frames(row[None], 1)))
        self._put(Out(image, row))

    def _speak(self, utt: _Utterance) -> None:
        self._swap_renderer()
        chunks = [utt.wav] if utt.wav is not None else self._client_chunks(utt)
        if utt.wav is not None:
            utt.audio.append(utt.wav)
        audio = _Pcm(utt)
        # Speech known whole (say) is encoded and sampled as offline; client audio as it arrives.
        model, hearing = self.model, OFFLINE
        if utt.sentences:
            hearing = Hearing(block_s=self.sentence_block_s, context_s=1.0, ramp=self.ramp)
        elif utt.wav is None and self.live_model is not None:
            model, hearing = self.live_model, live_hearing(self.live_model)
        elif utt.wav is None:
            hearing = Hearing(block_s=self.block_s, context_s=self.block_s, lookahead=self.lookahead)
        # Client audio is drawn a frame at a time: in pairs, its even frames waited a frame of audio for the odd.
        batch = 2 if utt.wav is not None or utt.sentences else 1
        frames = stream(chunks, model, self.renderer, self.motion, batch=batch, hearing=hearing, tail=self._shown)
        # A frame goes at once where its speech is known to go on past it (a say's length, or client audio
        # already heard past it: the window's look-ahead hears that); otherwise it is held until the next exists,
        # so the last one can say so.
        pending, first = None, True
        for f in frames:
            if first:  # speech is ready: the idle frames drawn ahead are not shown, it starts at once
                self._drop_idle()
                first = False
            if pending is not None and not self._put(pending):
                frames.close()
                return
            pending = Out(f.image, f.motion, utt.number, audio.frame(f.index))
            if self._goes_on(utt, f.index):
                if not self._put(pending):
                    frames.close()
                    return
                pending = None
        if pending is not None:
            pending.last = True
            self._put(pending)

    @staticmethod
    def _goes_on(utt: _Utterance, index: int) -> bool:
        """Whether the utterance's speech is known to last past frame ``index``: all of a say, what was synthesised
        of one spoken in sentences, or the client audio taken so far."""
        known = len(utt.wav) if utt.wav is not None else utt.taken
        return known > (index + 1) * HOP

    def _client_chunks(self, utt: _Utterance) -> Iterator[np.ndarray]:
        while not self._cancel.is_set():
            try:
                chunk = utt.chunks.get(timeout=0.05)
            except queue.Empty:
                continue
            if chunk is None:
                return
            utt.taken += len(chunk)
            self._client_out += len(chunk)
            utt.audio.append(chunk)
            yield chunk


def _lower_priority(by: int = 5) -> None:
    """Lower the calling thread's CPU priority (on Linux a thread has its own nice value): the synthesis of
    a say's later pieces then takes the CPU the face's frames leave, instead of delaying its first frame."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    except (AttributeError, OSError):  # not Linux, or not allowed: the thread keeps its priority
        pass


class _Pcm:
    """An utterance's audio as PCM16, frame by frame (640 samples each, the last zero-padded)."""

    def __init__(self, utt: _Utterance) -> None:
        self.utt, self.buf, self.start = utt, np.zeros(0, np.float32), 0

    def frame(self, index: int) -> np.ndarray:
        need = (index + 1) * HOP - self.start
        while len(self.buf) < need and self.utt.audio:
            self.buf = np.concatenate([self.buf, self.utt.audio.pop(0)])
        out = self.buf[index * HOP - self.start: need]
        self.buf, self.start = self.buf[need:], (index + 1) * HOP  # frames come in order
        out = np.pad(out, (0, HOP - len(out)))
        return (np.clip(out, -1, 1) * 32767).astype(np.int16)
