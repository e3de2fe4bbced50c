"""A say of several sentences is spoken as it is synthesised (``LiveSession.say_sentences``): all its audio
arrives, in order, an interrupt stops it, and the Piper voice speaks live, a sentence in pieces."""

from __future__ import annotations

import asyncio
import json
import time

import numpy as np
from test_app import _collect, _open, _video

from talkhead.audio.tts import speak_stream
from talkhead.rig.spec import SPEC

SENTENCES = ("The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background. "
             "It's easy to tell the depth of a well. These days a chicken leg is a rare dish.")


def _speech(msgs) -> tuple[list[dict], np.ndarray]:
    events = [m for _, m in msgs if isinstance(m, dict)]
    audio = [m for _, m in msgs if isinstance(m, tuple) and m[0] == "A"]
    return events, np.frombuffer(b"".join(a[2] for a in audio), "<i2").astype(np.float32) / 32767


def test_a_say_of_several_sentences_brings_all_of_them_in_order(server):
    expected = np.concatenate([s.wav for s in speak_stream(SENTENCES, "us-female")])  # espeak: deterministic

    async def go():
        ws, _ = await _open(server)
        t_say = time.perf_counter()
        await ws.send(json.dumps({"type": "say", "text": SENTENCES}))
        msgs = await _collect(ws, 30.0, until="done")
        events, pcm = _speech(msgs)
        assert [e["type"] for e in events] == ["speaking", "done"]
        speaking = next(t for t, m in msgs if isinstance(m, dict) and m["type"] == "speaking")
        assert speaking - t_say < 5.0  # after its first 5 s of speech (4 s blocks), not after all of it
        assert len(pcm) == int(np.ceil(len(expected) / 640)) * 640  # one 40 ms slice per frame of speech
        got = pcm[:len(expected)]
        assert np.abs(got - np.clip(expected, -1, 1)).max() < 2e-4  # every sentence's audio, in order
        await ws.close()

    asyncio.run(go())


def test_an_interrupt_stops_a_long_say_and_idle_goes_on(server):
    async def go():
        ws, _ = await _open(server)
        await ws.send(json.dumps({"type": "say", "text": " ".join([SENTENCES] * 12)}))  # about 2,000 characters
        await _collect(ws, 10.0, until="speaking")
        await _collect(ws, 0.5)
        await ws.send(json.dumps({"type": "interrupt"}))
        msgs = await _collect(ws, 2.0)
        stop = next(i for i, (_, m) in enumerate(msgs) if isinstance(m, dict) and m["type"] == "interrupted")
        assert not [m for _, m in msgs[stop + 1:] if isinstance(m, tuple) and m[0] == "A"]
        assert len(_video(msgs[stop + 1:])) >= 40
        await ws.close()

    asyncio.run(go())


def test_the_piper_voice_speaks_live(server):
    async def go():
        ws, ready = await _open(server, voice="joe")
        assert ready["type"] == "ready"
        await ws.send(json.dumps({"type": "say", "text": "Hello from Joe. This is a second sentence."}))
        msgs = await _collect(ws, 30.0, until="done")
        events, pcm = _speech(msgs)
        assert [e["type"] for e in events] == ["speaking", "done"]
        assert len(pcm) > 16_000 and np.abs(pcm).max() > 0.1
        await ws.close()
        ws, bad = await _open(server, voice="jim")
        assert bad["type"] == "error" and "jim" in bad["message"]
        await ws.close()

    asyncio.run(go())


def test_a_piper_say_in_pieces_brings_every_piece_in_order_without_a_gap():
    """joe's say, handed to the face in pieces as they are synthesised: every sample of every piece reaches
    the frames' audio, in order, one 40 ms slice per frame, and only the last frame says it is the last."""
    from talkhead.audio.tts import speech_chunks
    from talkhead.face.detect import default_photo
    from talkhead.motion.model import load_model
    from talkhead.render import make_renderer
    from talkhead.serve.session import LiveSession

    session = LiveSession(load_model("student-1-whisper"), make_renderer("warp", default_photo(), 96, "cpu", "photo"),
                          voice="joe")
    handed = []

    def pieces():
        for c in speech_chunks("Hello from Joe. This is a second sentence.", "joe"):
            handed.append(c)
            yield c

    try:
        number, speech, deadline = session.say_sentences(pieces()), [], time.monotonic() + 60
        while not (speech and speech[-1].last) and time.monotonic() < deadline:
            out = session.take()
            if out is None:
                time.sleep(0.005)
            elif out.utterance == number:
                speech.append(out)
    finally:
        session.close()
    assert len(handed) >= 5 and len(handed[0]) < 0.43 * 16_000  # in pieces, the first 0.42 s
    expected = np.concatenate(handed)
    assert len(speech) == int(np.ceil(len(expected) / 640)) and [o.last for o in speech].count(True) == 1
    pcm = np.concatenate([o.audio for o in speech])
    want = (np.clip(np.pad(expected, (0, len(pcm) - len(expected))), -1, 1) * 32767).astype(np.int16)
    assert np.array_equal(pcm, want)  # every piece's samples, in order, no gap and nothing extra
    jaw = np.array([o.motion[SPEC["jawOpen"]] for o in speech])  # the mouth moves while joe speaks
    assert np.ptp(jaw) > 0.1 and np.isfinite(jaw).all()


def test_speech_waiting_tells_the_pacer_a_new_utterance_is_ready():
    """The pacer sends a new utterance's first frame as soon as ``speech_waiting`` says it is ready, instead of
    at the next tick: idle frames never count, nor does an utterance already spoken."""
    from talkhead.audio.tts import synthesize
    from talkhead.face.detect import default_photo
    from talkhead.motion.model import load_model
    from talkhead.render import make_renderer
    from talkhead.serve.session import LiveSession

    session = LiveSession(load_model("student-1-whisper"), make_renderer("warp", default_photo(), 96, "cpu", "photo"))
    try:
        deadline = time.monotonic() + 10
        while session.take() is None and time.monotonic() < deadline:  # idle frames are being drawn
            time.sleep(0.005)
        assert not session.speech_waiting(0)
        number = session.say(synthesize("Hello.", "us-female").wav)
        deadline = time.monotonic() + 30
        while not session.speech_waiting(0) and time.monotonic() < deadline:
            time.sleep(0.005)
        assert session.speech_waiting(number - 1) and not session.speech_waiting(number)
        assert session.take().utterance == number
    finally:
        session.close()


def test_a_burst_of_says_is_synthesised_by_one_feeder_thread_in_order():
    """Each multi-sentence say used to start a thread of its own: five at once were five syntheses at once.
    Now one feeder per session makes them one after another, and each is spoken whole, in order."""
    import threading

    from talkhead.audio.tts import speech_chunks
    from talkhead.face.detect import default_photo
    from talkhead.motion.model import load_model
    from talkhead.render import make_renderer
    from talkhead.serve.session import LiveSession

    session = LiveSession(load_model("student-1-whisper"), make_renderer("warp", default_photo(), 96, "cpu", "photo"))
    try:
        numbers = [session.say_sentences(speech_chunks(f"Say {k}. Two sentences.", "us-female")) for k in range(5)]
        feeders = [t for t in threading.enumerate() if t.name == "live-sentences"]
        assert len(feeders) == 1 and session.waiting() >= 3
        done, deadline = [], time.monotonic() + 90
        while len(done) < 5 and time.monotonic() < deadline:
            out = session.take()
            if out is None:
                time.sleep(0.005)
            elif out.last:
                done.append(out.utterance)
    finally:
        session.close()
    assert done == numbers and not feeders[0].is_alive()  # every say, in order; the feeder ends with the session


def test_says_back_to_back_are_each_shown_whole_to_a_slow_clock():
    """The next say's first frame used to empty the queue of frames drawn ahead, to drop idle frames there; with
    a say queued behind another that also dropped the other's last frames (3 of them, its speech with them)."""
    from talkhead.audio.tts import synthesize
    from talkhead.face.detect import default_photo
    from talkhead.motion.model import load_model
    from talkhead.render import make_renderer
    from talkhead.serve.session import HOP, LiveSession

    wav = synthesize("Hi there.", "us-female").wav
    session = LiveSession(load_model("student-1-whisper"), make_renderer("warp", default_photo(), 96, "cpu", "photo"))
    try:
        numbers = [session.say(wav), session.say(wav)]
        seen: dict[int, list] = {n: [] for n in numbers}
        deadline = time.monotonic() + 90
        while not (seen[numbers[1]] and seen[numbers[1]][-1].last) and time.monotonic() < deadline:
            out = session.take()
            if out is None:
                time.sleep(0.005)
            elif out.utterance is not None:
                seen[out.utterance].append(out)
                time.sleep(0.15 if out.utterance == numbers[0] else 0)  # a clock slower than the drawing
    finally:
        session.close()
    frames = -(-len(wav) // HOP)
    for number in numbers:
        assert len(seen[number]) == frames and [o.last for o in seen[number]].count(True) == 1, number
        assert seen[number][-1].last
        audio = np.concatenate([o.audio for o in seen[number]]).astype(np.float32) / 32767
        assert np.allclose(audio[: len(wav)], wav, atol=1e-4)
