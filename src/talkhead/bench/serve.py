"""``talkhead bench serve``: the live server over loopback, measured as a client sees it.

A real server (uvicorn, in this process's thread) and real WebSocket clients: time from ``say`` to its
first frame; from the first chunk of client audio (a real recording, sent at its own pace) to its first
frame; frame intervals over a long session with speech every few seconds; the A/V offset (arrival of a
frame's audio against its picture); interrupt to the last speech packet; and how many sessions that all
speak at once keep 25 fps; the same latencies and 2 sessions while ``POST /v1/videos`` jobs run beside them.
Then the shipped page over WebRTC in headless Chromium (``bench.webrtc``):
``say`` to the first decoded speech frame, frame rate, A/V offset, interrupt to silence, 3 sessions at once
(skipped, with the reason in the JSON, where Chromium or Playwright is missing).
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import time
import urllib.request
from dataclasses import asdict
from pathlib import Path

import numpy as np

from talkhead.config import LIVE_MODEL, LIVE_SIZE
from talkhead.util import atomic_write

SENTENCE = "Good evening. Tonight the weather turns cold, with strong winds over the bay."


SPEECH = Path(__file__).resolve().parents[3] / "tests" / "assets" / "speech"
LONG_TEXT = " ".join([SENTENCE] * 64)[:5000]  # a 5,000-character say
SETTLE_S = 2.0  # before each concurrency level and the WebRTC rows: the last one's sessions gone


async def _session(server: str, voice: str | None = None):
    import websockets

    ws = await websockets.connect(f"ws://{server}/v1/stream", max_size=1 << 22)
    await ws.send(json.dumps({"type": "start", **({"voice": voice} if voice else {})}))
    await ws.recv()
    return ws


async def _recv(ws, timeout: float = 10.0):
    m = await asyncio.wait_for(ws.recv(), timeout)
    return json.loads(m) if isinstance(m, str) else (chr(m[0]), struct.unpack("<I", m[1:5])[0], hash(m[5:]))


async def _until_speech(ws, t0: float) -> float:
    while True:
        m = await _recv(ws)
        if isinstance(m, dict) and m["type"] == "speaking":
            return time.perf_counter() - t0


async def _until_done(ws) -> int:
    """Read to the utterance's end; the number of its ticks that repeated a frame (no new speech frame in time)."""
    heard, stalls = set(), 0
    while not (isinstance(m := await _recv(ws), dict) and m["type"] == "done"):
        if isinstance(m, tuple) and m[0] == "A":
            heard.add(m[1])
        elif isinstance(m, tuple) and m[0] == "V":
            stalls += m[1] not in heard
    return stalls


async def _say_latency(server: str, repeats: int, voice: str | None = None, text: str = "Hello there.") -> list[float]:
    ws, out = await _session(server, voice), []
    for _ in range(repeats):
        await asyncio.sleep(0.5)
        t0 = time.perf_counter()
        await ws.send(json.dumps({"type": "say", "text": text}))
        out.append(await _until_speech(ws, t0))
        if len(text) > 200:  # a long say is cut short once it has started: its first frame is the measure
            await ws.send(json.dumps({"type": "interrupt"}))
            while not (isinstance(m := await _recv(ws), dict) and m["type"] in ("interrupted", "done")):
                pass
        else:
            await _until_done(ws)
    await ws.close()
    return out


async def _audio_latency(server: str, recordings: list[bytes], chunk_ms: int = 100,
                         stalls: list[int] | None = None) -> list[float]:
    """Each recording (PCM16) sent as a microphone makes it, in ``chunk_ms`` pieces at their own pace (a voice
    agent's TTS arrives in 20 ms frames): first chunk -> the first frame of its speech. ``stalls`` gets, per
    recording, how many ticks of its speech repeated a frame because the next was not drawn in time."""
    ws, out, size = await _session(server), [], chunk_ms * 32
    for pcm in recordings:
        await asyncio.sleep(0.3)
        t0 = time.perf_counter()

        async def send() -> None:
            t_next = time.perf_counter()
            for i in range(0, len(pcm), size):
                await ws.send(pcm[i:i + size])
                t_next += chunk_ms / 1000  # paced on the clock: 20 ms sleeps alone would drift late
                await asyncio.sleep(max(0.0, t_next - time.perf_counter()))
            await ws.send(json.dumps({"type": "audio_end"}))

        sender = asyncio.create_task(send())
        out.append(await _until_speech(ws, t0))
        (stalls if stalls is not None else []).append(await _until_done(ws))
        await sender
    await ws.close()
    return out


async def _long_session(server: str, seconds: float) -> dict:
    """Frame arrival intervals and A/V offsets over ``seconds``, a sentence said every 6 s."""
    ws = await _session(server)
    arrivals, audio_at, video_at, repeats, last = [], {}, {}, 0, None
    t0 = next_say = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        if time.perf_counter() >= next_say:
            await ws.send(json.dumps({"type": "say", "text": SENTENCE}))
            next_say += 6.0
        m = await _recv(ws)
        now = time.perf_counter()
        if isinstance(m, tuple):
            (video_at if m[0] == "V" else audio_at)[m[1]] = now
            if m[0] == "V":
                arrivals.append(now)
                repeats += m[2] == last
                last = m[2]
    await ws.close()
    gaps = np.diff(arrivals) * 1000
    offsets = [abs(audio_at[i] - video_at[i]) * 1000 for i in audio_at if i in video_at]
    return {"frames": len(arrivals), "fps": round(len(arrivals) / seconds, 2), "repeated_frames": repeats,
            **{f"interval_ms_p{q}": round(float(np.percentile(gaps, q)), 2) for q in (50, 95)},
            "interval_ms_max": round(float(gaps.max()), 2),
            "av_offset_ms_p95": round(float(np.percentile(offsets, 95)), 2) if offsets else None}


async def _interrupt_latency(server: str, repeats: int) -> list[float]:
    ws, out = await _session(server), []
    for _ in range(repeats):
        await ws.send(json.dumps({"type": "say", "text": SENTENCE}))
        await _until_speech(ws, 0.0)
        await asyncio.sleep(0.6)
        t0 = time.perf_counter()
        await ws.send(json.dumps({"type": "interrupt"}))
        last, end = t0, time.perf_counter() + 1.0
        while time.perf_counter() < end:
            try:
                m = await _recv(ws, max(0.01, end - time.perf_counter()))
            except asyncio.TimeoutError:
                break
            if isinstance(m, tuple) and m[0] == "A":  # audio comes only with speech frames
                last = time.perf_counter()
        out.append(last - t0)
    await ws.close()
    return out


async def _stream_audio(ws, pcm: bytes, seconds: float, chunk_ms: int = 20) -> None:
    """``pcm`` (looped) to ``ws`` for ``seconds`` in ``chunk_ms`` pieces on the clock, as a voice agent's TTS."""
    size, t0 = chunk_ms * 32, time.perf_counter()
    t_next, i = t0, 0
    while time.perf_counter() - t0 < seconds:
        await ws.send(pcm[i:i + size])
        i = (i + size) % (len(pcm) - size)
        t_next += chunk_ms / 1000
        await asyncio.sleep(max(0.0, t_next - time.perf_counter()))


def _settled(server: str, seconds: float = SETTLE_S, timeout: float = 30.0) -> str:
    """``server`` once the sessions of the last measurement are gone and ``seconds`` more have passed, so that
    a measurement does not start in the tail of an overloaded one (client audio at 4 sessions queues work)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with urllib.request.urlopen(f"http://{server}/v1/status", timeout=5) as r:
            if json.load(r)["sessions"] == 0:
                break
        time.sleep(0.2)
    time.sleep(seconds)
    return server


async def _concurrent(server: str, n: int, seconds: float, pcm: bytes | None = None) -> dict:
    """``n`` sessions that all speak all the time (a ``say`` every 4 s, or with ``pcm`` client audio streamed
    without a pause): each one's rate of new frames and interval p95.

    A frame the server had not drawn in time is sent again unchanged; only changed frames count."""
    async def one() -> tuple[float, float]:
        ws = await _session(server)
        arrivals, t0, said, last = [], time.perf_counter(), 0.0, None
        sender = None if pcm is None else asyncio.create_task(_stream_audio(ws, pcm, seconds))
        while time.perf_counter() - t0 < seconds:
            if sender is None and time.perf_counter() - said > 4.0:
                await ws.send(json.dumps({"type": "say", "text": SENTENCE}))
                said = time.perf_counter()
            m = await _recv(ws)
            if isinstance(m, tuple) and m[0] == "V" and m[2] != last:
                arrivals.append(time.perf_counter())
                last = m[2]
        if sender is not None:
            await sender
        await ws.close()
        return len(arrivals) / seconds, float(np.percentile(np.diff(arrivals) * 1000, 95))

    res = await asyncio.gather(*(one() for _ in range(n)))
    return {"sessions": n, "new_fps_min": round(min(r[0] for r in res), 2),
            "interval_ms_p95_max": round(max(r[1] for r in res), 2)}


def videos_beside(server: str, pcms: list[bytes], seconds: float = 10.0) -> dict:
    """The live figures again while ``POST /v1/videos`` jobs run back to back beside them (one poster: the server
    draws one job at a time): ``say`` and client audio to their first frames, and 2 sessions speaking at once."""
    import threading
    import urllib.request

    stop, took = threading.Event(), []

    def post() -> None:
        body = json.dumps({"text": SENTENCE}).encode()
        while not stop.is_set():
            t = time.perf_counter()
            req = urllib.request.Request(f"http://{server}/v1/videos", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=300) as r:
                r.read()
            took.append(time.perf_counter() - t)

    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    try:
        time.sleep(1.0)  # the first job is drawing
        say = asyncio.run(_say_latency(server, 5))
        audio = asyncio.run(_audio_latency(server, pcms))
        two = asyncio.run(_concurrent(server, 2, seconds))
    finally:
        stop.set()
        poster.join()
    return {"say_to_first_frame_ms": _ms(say), "first_audio_chunk_to_first_frame_ms": _ms(audio),
            "two_sessions": two, "videos_made": len(took), "video_s_median": round(float(np.median(took)), 2)}


def client_audio_lips(model_name: str, live_name: str | None) -> dict:
    """How the live client-audio path's lips compare with offline motion of the same recordings (jawOpen r),
    on the real recordings in tests/assets/speech, fed in 40 ms pieces after idle motion; and how many frames
    of audio its first frame waits for."""
    from talkhead.audio.io import load_audio
    from talkhead.metrics import pearson
    from talkhead.motion.model import load_model
    from talkhead.motion.stream import Hearing, MotionConfig, MotionStream, motion_from_audio
    from talkhead.rig.spec import SPEC
    from talkhead.serve.session import idle_track, live_hearing

    model = load_model(model_name)
    live = model if live_name is None else load_model(live_name)
    hearing = Hearing(block_s=0.2, context_s=0.2, lookahead=4) if live_name is None else live_hearing(live)
    rs, waits = [], []
    for wav_path in sorted(SPEECH.glob("*.wav")):
        wav = load_audio(wav_path)
        stream, rows, first = MotionStream(live, hearing=hearing, tail=idle_track(12, 0)), [], None
        for i in range(0, len(wav), 640):
            rows += list(stream.push(wav[i:i + 640]))
            if first is None and sum(len(r) for r in rows):
                first = i // 640 + 1
        motion = np.concatenate([*rows, *stream.flush()])
        offline = motion_from_audio(model, wav, MotionConfig(seed=0))
        rs.append(pearson(motion[:, SPEC["jawOpen"]], offline[:, SPEC["jawOpen"]]))
        waits.append(first)
    view = {k: v for k, v in asdict(hearing).items() if v is not None}  # what it heard, as the JSON has said it
    return {"live_model": live_name, "view": view, "recordings": len(rs),
            "jaw_r_vs_offline_mean": round(float(np.mean(rs)), 3), "jaw_r_vs_offline_min": round(float(np.min(rs)), 3),
            "first_frame_waits_for_audio_ms": max(waits) * 40}


def run_serve_bench(out: str | Path, seconds: float = 60.0, max_sessions: int = 4, model: str | None = None,
                    size: int = LIVE_SIZE) -> dict:
    """Write serve.json and serve.png under ``out``."""
    from talkhead.audio.io import load_audio

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from talkhead.serve.app import ServeConfig, serve_in_thread

    load = [round(v, 2) for v in os.getloadavg()]  # the machine's other work, for the capacity table

    cfg = ServeConfig(max_sessions=max_sessions, model=model or LIVE_MODEL, size=size, threads=1)  # as `talkhead serve`
    srv, server = serve_in_thread(cfg)
    pcms = [(np.clip(load_audio(p), -1, 1) * 32767).astype("<i2").tobytes() for p in sorted(SPEECH.glob("*.wav"))]
    try:
        say = asyncio.run(_say_latency(server, 5))
        piper = _piper_say(server)
        stalls: dict[int, list[int]] = {100: [], 20: []}
        audio = asyncio.run(_audio_latency(server, pcms, 100, stalls[100]))
        audio_20 = asyncio.run(_audio_latency(server, pcms, 20, stalls[20]))
        interrupt = asyncio.run(_interrupt_latency(server, 5))
        long = asyncio.run(_long_session(server, seconds))
        concurrent = [asyncio.run(_concurrent(_settled(server), n, 10.0)) for n in range(1, max_sessions + 1)]
        speech = b"".join(pcms)  # the six recordings, end to end, for sessions driven by client audio
        concurrent_audio = [asyncio.run(_concurrent(_settled(server), n, 10.0, speech))
                            for n in range(1, max_sessions + 1)]
        webrtc = webrtc_rows(_settled(server), sessions=min(3, max_sessions))
        beside = videos_beside(_settled(server), pcms)
    finally:
        srv.should_exit = True
    def held(rows: list[dict]) -> int:
        return max((c["sessions"] for c in rows if c["new_fps_min"] >= 24.0 and c["interval_ms_p95_max"] <= 60.0),
                   default=0)

    result = {"model": model or LIVE_MODEL, "size": size, "say_to_first_frame_ms": _ms(say),
              "first_audio_chunk_to_first_frame_ms": _ms(audio),
              "first_audio_chunk_to_first_frame_ms_20ms_chunks": _ms(audio_20),
              "client_audio_stalled_ticks": {"100ms_chunks": stalls[100], "20ms_chunks": stalls[20]},
              "interrupt_to_last_speech_ms": _ms(interrupt),
              "say_joe_to_first_frame_ms": piper,
              "client_audio_lips": client_audio_lips(cfg.model, cfg.live_model),
              "long_session": {"seconds": seconds, **long}, "concurrent": concurrent,
              "sessions_at_25fps": held(concurrent), "concurrent_client_audio": concurrent_audio,
              "client_audio_sessions_at_25fps": held(concurrent_audio), "webrtc": webrtc, "videos_beside": beside,
              "cpu_count": os.cpu_count(),
              "load_before": load, "load_after": [round(v, 2) for v in os.getloadavg()]}
    atomic_write(out / "serve.json", json.dumps(result, indent=1).encode())
    _plot(result, out / "serve.png")
    return result


def summary(r: dict) -> list[str]:
    """``run_serve_bench``'s result in three lines: WebSocket, WebRTC, beside ``/v1/videos`` jobs."""
    w, v, med = r["webrtc"], r["videos_beside"], lambda row: (row or {}).get("median")
    rtc = (f"WebRTC rows skipped: {w['skipped']}" if "skipped" in w else
           f"WebRTC in Chromium: say -> first decoded frame {med(w['say_to_first_decoded_frame_ms'])} ms; "
           f"{w['fps_min']} fps; A/V offset p95 {med(w['av_offset_p95_ms'])} ms; interrupt -> silence "
           f"{med(w['interrupt_to_silence_ms'])} ms; {w['sessions_at_once']} sessions at {w['together_fps_min']} fps")
    return [f"say -> first frame {r['say_to_first_frame_ms']['median']} ms; client audio -> first frame "
            f"{r['first_audio_chunk_to_first_frame_ms']['median']} ms (20 ms chunks: "
            f"{r['first_audio_chunk_to_first_frame_ms_20ms_chunks']['median']} ms); interrupt -> last speech "
            f"{r['interrupt_to_last_speech_ms']['max']} ms (worst); frame interval p95 "
            f"{r['long_session']['interval_ms_p95']} ms; {r['sessions_at_25fps']} sessions at 25 fps "
            f"({r['client_audio_sessions_at_25fps']} on client audio)", rtc,
            f"beside /v1/videos jobs ({v['videos_made']} made, {v['video_s_median']} s each): say -> first frame "
            f"{v['say_to_first_frame_ms']['median']} ms, client audio -> first frame "
            f"{v['first_audio_chunk_to_first_frame_ms']['median']} ms, 2 sessions at "
            f"{v['two_sessions']['new_fps_min']} fps (interval p95 {v['two_sessions']['interval_ms_p95_max']} ms)"]


def webrtc_rows(server: str, cfg=None, sessions: int = 3) -> dict:
    """The page over WebRTC in headless Chromium against ``server`` (``bench.webrtc``, its config ``cfg``, by
    default ``sessions`` at once), summarised; where Chromium or Playwright is missing or the run fails,
    ``{"skipped": why}``."""
    from talkhead.bench import webrtc

    why = webrtc.unavailable()
    if why is not None:
        return {"skipped": why}
    try:
        return webrtc.summary(webrtc.measure(cfg or webrtc.WebRtcBenchConfig(sessions=sessions), server=server))
    except Exception as e:  # noqa: BLE001  (a browser failure must not lose the rows measured before it)
        return {"skipped": f"the browser run failed: {str(e).splitlines()[0][:200]}"}


def _piper_say(server: str) -> dict | None:
    """``say`` with the Piper voice, 20 and 5,000 characters; None where piper-tts is not installed."""
    from talkhead.audio.piper_tts import installed

    if not installed("joe"):
        return None
    return {"chars_20": _ms(asyncio.run(_say_latency(server, 3, "joe", "Hello there, friend."))),
            "chars_5000": _ms(asyncio.run(_say_latency(server, 3, "joe", LONG_TEXT)))}


def _ms(values: list[float]) -> dict:
    v = np.array(values) * 1000
    return {"median": round(float(np.median(v)), 1), "p95": round(float(np.percentile(v, 95)), 1),
            "max": round(float(v.max()), 1), "runs": len(v)}


def _plot(result: dict, path: Path) -> None:
    from talkhead.bench.plots import new_figure, save_figure

    fig, (a, b) = new_figure((9, 3.2), ncols=2)
    names = ["say", "client\naudio", "interrupt"]
    keys = ["say_to_first_frame_ms", "first_audio_chunk_to_first_frame_ms", "interrupt_to_last_speech_ms"]
    values = [result[k]["median"] for k in keys]
    rtc = result.get("webrtc") or {}
    for name, key in (("say\n(WebRTC)", "say_to_first_decoded_frame_ms"),
                      ("interrupt\n(WebRTC)", "interrupt_to_silence_ms")):
        if rtc.get(key):  # as Chromium decodes and plays it
            names.append(name)
            values.append(rtc[key]["median"])
    a.bar(names, values, color=["#4c72b0"] * 3 + ["#dd8452"] * (len(names) - 3))
    a.set_ylabel("ms (median)")
    a.set_title("latency", fontsize=9)
    c = result["concurrent"]
    b.plot([r["sessions"] for r in c], [r["new_fps_min"] for r in c], "o-", label="say: slowest session, new frames/s")
    if ca := result.get("concurrent_client_audio"):
        b.plot([r["sessions"] for r in ca], [r["new_fps_min"] for r in ca], "s-", label="client audio (20 ms chunks)")
    b.axhline(25, color="k", ls="--", lw=1)
    b.set_xlabel("sessions speaking at once")
    b.set_ylabel("frames/s")
    b.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
