"""TalkheadVideoService in Pipecat's own test harness (``pipecat.tests.utils.run_test``): real models, real
speech, a real pipeline (source -> service -> sink) with Pipecat's queues, tasks and StartFrame/EndFrame."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pipecat")  # an optional extra: the base install's tests do not need it

from pipecat.frames.frames import (  # noqa: E402
    Frame,
    InterruptionFrame,
    OutputImageRawFrame,
    TextFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.observers.base_observer import BaseObserver, FramePushed  # noqa: E402
from pipecat.tests.utils import SleepFrame, run_test  # noqa: E402

from talkhead.audio.io import load_audio  # noqa: E402
from talkhead.integrations.pipecat import LEAD_KEY, REPEAT_KEY, UTTERANCE_KEY, TalkheadVideoService  # noqa: E402

SPEECH = Path(__file__).parents[1] / "assets" / "speech" / "arctic_a0007.wav"
SIZE = 96  # small: each test's drawing stays well inside a busy 2-core machine's time
START_S = 120.0  # the first pipeline of the session loads the models (several seconds on a busy machine)


def _tts_frames(wav16k: np.ndarray, rate: int = 24_000, chunk_s: float = 0.02, channels: int = 1) -> list[Frame]:
    """Speech as a TTS service sends it: PCM16 at ``rate`` in ``chunk_s`` pieces, between Started/Stopped."""
    from scipy.signal import resample_poly

    g = np.gcd(rate, 16_000)
    wav = resample_poly(wav16k, rate // g, 16_000 // g)
    pcm = np.repeat((np.clip(wav, -1, 1) * 32767).astype("<i2")[:, None], channels, axis=1).reshape(-1)
    step = round(rate * chunk_s) * channels
    chunks = [TTSAudioRawFrame(pcm[i:i + step].tobytes(), rate, channels) for i in range(0, len(pcm), step)]
    return [TTSStartedFrame(), *chunks, TTSStoppedFrame()]


def _speech_s(seconds: float) -> np.ndarray:
    wav = load_audio(SPEECH)
    assert len(wav) >= seconds * 16_000
    return wav[: round(seconds * 16_000)]


def _run(service: TalkheadVideoService, frames, **kw) -> list[Frame]:
    down, _ = asyncio.run(run_test(service, frames_to_send=frames, start_timeout=START_S, **kw))
    return list(down)


def _images(frames) -> list[OutputImageRawFrame]:
    return [f for f in frames if isinstance(f, OutputImageRawFrame)]


def _speech_images(frames) -> list[OutputImageRawFrame]:
    return [f for f in _images(frames) if f.metadata.get(UTTERANCE_KEY) is not None]


def _audio(frames) -> list[TTSAudioRawFrame]:
    return [f for f in frames if isinstance(f, TTSAudioRawFrame)]


def test_one_second_of_24k_tts_audio_gives_25_speech_images_and_the_same_audio_back():
    wav = _speech_s(1.0)
    t0 = time.perf_counter()
    down = _run(TalkheadVideoService(size=SIZE), _tts_frames(wav))  # EndFrame right after: the speech is shown first
    took = time.perf_counter() - t0
    speech, audio = _speech_images(down), _audio(down)
    assert abs(len(speech) - 25) <= 1, len(speech)
    assert all(a.sample_rate == 16_000 and a.num_channels == 1 and a.num_frames == 640 for a in audio)
    out = np.concatenate([np.frombuffer(a.audio, "<i2") for a in audio]).astype(np.float32) / 32767
    assert abs(len(out) - len(wav)) <= 640, (len(out), len(wav))  # the same audio, within one frame
    n = min(len(out), len(wav))
    assert np.corrcoef(out[:n], wav[:n])[0, 1] > 0.99  # 24 kHz and back: the same speech, in place
    # Each speech image is followed by its own 40 ms of audio, and nothing else in between.
    for image in speech:
        nxt = down[down.index(image) + 1]
        assert isinstance(nxt, TTSAudioRawFrame), nxt
    assert len(audio) == len(speech)  # the TTS's own 24 kHz frames were swallowed, not doubled
    # TTSStoppedFrame goes on after the last speech image, so "bot stopped speaking" comes with the face.
    stops = [i for i, f in enumerate(down) if isinstance(f, TTSStoppedFrame)]
    assert len(stops) == 1 and stops[0] > down.index(speech[-1])
    assert all(i.size == (SIZE, SIZE) and i.format == "RGB" and len(i.image) == SIZE * SIZE * 3 for i in speech)
    print(f"accounting: {len(speech)} speech images, {len(out)} samples, {took:.1f} s")


class _FirstSpeech(BaseObserver):
    """When the service pushed its first speech image (the harness's clock is this process's)."""

    def __init__(self, service: TalkheadVideoService) -> None:
        super().__init__()
        self.service, self.at = service, None

    async def on_push_frame(self, data: FramePushed) -> None:
        f = data.frame
        if (self.at is None and data.source is self.service and isinstance(f, OutputImageRawFrame)
                and f.metadata.get(UTTERANCE_KEY) is not None):
            self.at = time.monotonic()


def _interrupt_after_speech(watch: _FirstSpeech, wav: np.ndarray, after_s: float, then_s: float):
    """The harness iterates this as it sends: 3 s of speech, then an interruption ``after_s`` after the first
    speech image was pushed, then ``then_s`` of nothing."""
    yield from _tts_frames(wav)
    for _ in range(1000):  # up to 20 s for the first speech image
        if watch.at is not None:
            break
        yield SleepFrame(sleep=0.02)
    assert watch.at is not None, "the face never started speaking"
    yield SleepFrame(sleep=max(0.0, watch.at + after_s - time.monotonic()))
    yield InterruptionFrame()
    yield SleepFrame(sleep=then_s)


def test_an_interruption_stops_speech_within_two_images_and_the_face_goes_idle():
    wav = _speech_s(3.0)
    service = TalkheadVideoService(size=SIZE)
    watch = _FirstSpeech(service)
    down = _run(service, _interrupt_after_speech(watch, wav, 0.3, 1.0), observers=[watch])
    cut = next(i for i, f in enumerate(down) if isinstance(f, InterruptionFrame))
    before, after = down[:cut], down[cut + 1:]
    assert 3 <= len(_speech_images(before)) < 70  # it was speaking, and far from done
    stale = _speech_images(after)
    assert len(stale) <= 2 and len(_audio(after)) == len(stale), (len(stale), len(_audio(after)))
    idle = _images(after)[len(stale):]
    assert not _speech_images(idle)
    drawn = [i for i in idle if not i.metadata[REPEAT_KEY]]  # idle motion drawn anew, not the last image again
    assert len(drawn) >= 15, (len(drawn), len(idle))  # the face went back to idle at once, not after the speech
    assert not [f for f in after if isinstance(f, TTSStoppedFrame)]  # the interruption ends the dropped speech


def test_synced_speech_leads_by_half_a_frame_so_40ms_chunks_end_mid_image():
    wav = _speech_s(0.6)
    down = _run(TalkheadVideoService(size=SIZE, sync_with_audio=True),
                [*_tts_frames(wav), SleepFrame(sleep=0.5), *_tts_frames(wav)])
    assert all(i.sync_with_audio for i in _images(down))
    leads = [f for f in _audio(down) if f.metadata.get(LEAD_KEY)]
    assert len(leads) == 2 and all(f.audio == bytes(640) for f in leads)  # 320 samples of silence an utterance
    speech = [f for f in _audio(down) if not f.metadata.get(LEAD_KEY)]
    assert all(a.num_frames == 640 for a in speech) and abs(sum(a.num_frames for a in speech) - 2 * len(wav)) <= 1280
    # What a transport cutting 40 ms chunks from the last TTSStoppedFrame on has been given before each speech
    # image: half a frame past a chunk's end, so the image is set 20 ms before its own sound starts.
    given, before, images = 0, [], {id(i) for i in _speech_images(down)}
    for f in down:
        if isinstance(f, TTSStoppedFrame):
            given = 0
        elif isinstance(f, TTSAudioRawFrame):
            given += f.num_frames
        elif id(f) in images:
            before.append(given % 640)
    assert len(before) >= 28 and before.count(0) == 2 and set(before) == {0, 320}, before


def test_idle_images_flow_with_no_audio():
    down = _run(TalkheadVideoService(size=SIZE), [SleepFrame(sleep=1.0)])
    images = _images(down)
    assert len(images) >= 20, len(images)
    assert not _audio(down) and not _speech_images(down)
    assert len({i.image for i in images}) > 1  # blinks and head drift: the face is not a still


def test_other_frames_pass_through_untouched_in_both_directions():
    text, started = TextFrame("hello there"), TTSStartedFrame()
    down = _run(TalkheadVideoService(size=SIZE), [text, started, SleepFrame(sleep=0.2)])
    others = [f for f in down if not isinstance(f, OutputImageRawFrame)]
    assert others[:2] == [text, started] and others[0] is text and others[1] is started
    assert text.text == "hello there"
    up_text = TextFrame("upstream")
    _, up = asyncio.run(run_test(TalkheadVideoService(size=SIZE), frames_to_send=[up_text],
                                 frames_to_send_direction=_upstream(), start_timeout=START_S))
    assert [f for f in up if isinstance(f, TextFrame)] == [up_text] and up[0] is up_text


def _upstream():
    from pipecat.processors.frame_processor import FrameDirection

    return FrameDirection.UPSTREAM


@pytest.mark.parametrize("rate,channels", [(48_000, 2), (8_000, 1)])
def test_tts_audio_at_any_rate_with_empty_and_odd_chunks_is_all_spoken(rate, channels):
    wav = _speech_s(1.0)
    frames = _tts_frames(wav, rate=rate, chunk_s=0.02, channels=channels)
    frames.insert(5, TTSAudioRawFrame(b"", rate, channels))  # a zero-length frame
    frames.insert(9, TTSAudioRawFrame(b"\x01\x00\x02", rate, channels))  # an odd byte count: a partial sample
    down = _run(TalkheadVideoService(size=SIZE), frames)
    samples = sum(a.num_frames for a in _audio(down))
    assert abs(samples - len(wav)) <= 640 and abs(len(_speech_images(down)) - 25) <= 1


def test_a_bad_server_url_or_a_missing_avatar_is_refused_at_once():
    with pytest.raises(ValueError, match="server_url"):
        TalkheadVideoService(server_url="ftp://127.0.0.1:8000")
    with pytest.raises(ValueError, match="no such"):
        TalkheadVideoService(avatar="/nonexistent/me.avatar")


def test_the_remote_backend_gives_the_same_accounting_from_a_real_talkhead_serve(server):
    wav = _speech_s(1.0)
    down = _run(TalkheadVideoService(server_url=f"http://{server}"), _tts_frames(wav))
    speech, audio = _speech_images(down), _audio(down)
    assert abs(len(speech) - 25) <= 1, len(speech)
    assert all(a.sample_rate == 16_000 and a.num_frames == 640 for a in audio) and len(audio) == len(speech)
    out = np.concatenate([np.frombuffer(a.audio, "<i2") for a in audio]).astype(np.float32) / 32767
    assert abs(len(out) - len(wav)) <= 640
    n = min(len(out), len(wav))
    assert np.corrcoef(out[:n], wav[:n])[0, 1] > 0.99
    assert speech[0].size == (128, 128) and speech[0].format == "RGB"  # the server's size (tests/conftest.py)
    stops = [i for i, f in enumerate(down) if isinstance(f, TTSStoppedFrame)]
    assert len(stops) == 1 and stops[0] > down.index(speech[-1])


def test_a_server_that_does_not_answer_is_an_error_frame_and_the_agent_still_speaks():
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    frames = _tts_frames(_speech_s(0.2))
    t0 = time.perf_counter()
    down, up = asyncio.run(run_test(TalkheadVideoService(server_url=f"http://127.0.0.1:{port}"),
                                    frames_to_send=frames, start_timeout=START_S))
    assert time.perf_counter() - t0 < 10.0
    assert [f for f in up if type(f).__name__ == "ErrorFrame" and str(port) in f.error]
    assert not _images(down)
    assert [f for f in down if isinstance(f, TTSAudioRawFrame)] == frames[1:-1]  # the TTS audio, untouched


def test_a_tts_that_never_stops_is_spoken_whole_and_the_face_goes_back_to_idle():
    wav = _speech_s(1.0)
    frames = _tts_frames(wav)[:-1]  # no TTSStoppedFrame: the utterance is closed after 1 s without audio
    down = _run(TalkheadVideoService(size=SIZE), [*frames, SleepFrame(sleep=3.0)])
    images = _images(down)
    speech = _speech_images(down)
    assert abs(len(speech) - 25) <= 1
    after = [i for i in images[images.index(speech[-1]) + 1:] if not i.metadata[REPEAT_KEY]]
    assert len(after) >= 10  # idle motion drawn again, not the last speech image held


def test_the_remote_backend_uploads_the_photo_and_stops_on_an_interruption(server, tmp_path):
    from PIL import Image

    from talkhead.face.detect import default_photo

    photo = tmp_path / "me.png"
    Image.fromarray(default_photo()).save(photo)
    service = TalkheadVideoService(server_url=f"http://{server}", avatar=photo)
    watch = _FirstSpeech(service)
    down = _run(service, _interrupt_after_speech(watch, _speech_s(3.0), 0.3, 1.0), observers=[watch])
    cut = next(i for i, f in enumerate(down) if isinstance(f, InterruptionFrame))
    assert 3 <= len(_speech_images(down[:cut])) < 70
    stale = _speech_images(down[cut + 1:])
    assert len(stale) <= 2, len(stale)
    drawn = [i for i in _images(down[cut + 1:])[len(stale):] if not i.metadata[REPEAT_KEY]]
    assert len(drawn) >= 15 and not _speech_images(drawn)


def test_frames_after_the_pipeline_ended_pass_and_start_nothing():
    service = TalkheadVideoService(size=SIZE)
    _run(service, _tts_frames(_speech_s(0.2)))
    assert service._session is None and service._pacer is None  # EndFrame stopped the face and its clock

    async def late() -> None:  # a TTS still sending after the end: no error, no new face, no clock
        from pipecat.processors.frame_processor import FrameDirection

        for frame in _tts_frames(_speech_s(0.1)):
            await service.process_frame(frame, FrameDirection.DOWNSTREAM)

    asyncio.run(late())
    assert service._session is None and service._pacer is None
