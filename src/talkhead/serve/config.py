"""A server's limits and defaults (``ServeConfig``): light to import, so ``talkhead serve``'s flags, generated
from its fields, cost nothing to build."""

from __future__ import annotations

from dataclasses import dataclass

from talkhead.config import LIVE_MODEL, LIVE_SIZE, LIVE_STUDENT, option
from talkhead.serve.guard import GuardConfig
from talkhead.serve.webrtc import WebRtcConfig


@dataclass(frozen=True)
class ServeConfig:
    """Limits and defaults of a server."""

    max_sessions: int = option(4, "live sessions at once; more get an error")
    start_timeout: float = 10.0  # a socket that has not sent 'start' by then is closed: it holds a session's slot
    model: str | None = option(LIVE_MODEL, "motion model (default: the fastest shipped; its lip sync matches the "
                                           "teacher's)")
    # Client audio's motion (a voice agent's TTS streaming in): the live student, first frame 4 frames after its
    # audio (talkhead.motion.train.live). None: the session's model over 0.2 s blocks, 15 frames after its audio.
    live_model: str | None = option(LIVE_STUDENT, "motion model for client audio (a live student: "
                                    "talkhead distill live; MODEL+LIPS wears another lip net, e.g. "
                                    "student-1-whisper-live+lips-whisper-live: 40 ms sooner, lips further from "
                                    "filmed people's); "
                                    "'none': the session's model over 0.2 s blocks (first frame 0.6 s after its "
                                    "audio)", metavar="MODEL")
    size: int = option(LIVE_SIZE, "frame size in pixels (square)")
    jpeg_quality: int = 80
    max_message: int = 1 << 20
    max_text: int = 5000
    max_photo: int = 20 << 20
    max_avatar_file: int = 64 << 20  # an .avatar (talkhead avatar train) is about 10-50 MB
    max_side: int = 8000
    max_audio_s: float = 600.0  # client audio in one utterance
    max_audio_ahead_s: float = 60.0  # client audio received and not yet spoken by the face, per session
    max_waiting: int = 8  # utterances asked for and not yet begun, per session (each say's speech is held)
    max_avatars: int = 64
    max_avatar_memory: int = 2 << 30  # bytes of registered faces kept in memory (an avatar's base frames: ~0.1-0.9 GB)
    avatar_store: str | None = option(None, "keep uploaded avatars in DIR by content id, shared by every replica "
                                            "and kept across restarts (default: memory only; with --ray, the cache "
                                            "folder's avatars/); with --ray, 'ray:' keeps them in Ray's object store "
                                            "instead (a cluster without shared storage)", metavar="DIR|ray:")
    max_stored_avatars: int = 1024  # avatars kept in the store, least recently used removed first
    max_stored_bytes: int = 4 << 30  # bytes kept in the store in all, the same way
    # POST /v1/videos: one job drawn at a time on a worker of its own (not the threads the live sessions use), and
    # at most this many waiting; past that a 429 with Retry-After.
    video_queue: int = 4
    webrtc: WebRtcConfig = WebRtcConfig()
    guard: GuardConfig = GuardConfig()  # Host, Origin and token checks on every request (serve.guard)
    # torch's CPU threads in this process (None: as they are). The sessions are the parallelism: each draws in
    # its own thread, and with 2 intra-op threads each they oversubscribe the cores (2 cores, 4 sessions
    # speaking: 21.0 against 23.6 new frames/s; one session's say 70 against 57 ms). `talkhead serve` sets 1.
    threads: int | None = None
