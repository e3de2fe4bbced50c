"""The live page over WebRTC in headless Chromium, measured as the browser sees it.

A real server (uvicorn in a thread, or one given), Debian's Chromium driven by Playwright, the shipped
page. Per ``say``: time to the ``speaking`` event and to the first frame the browser received after it and
presented (``requestVideoFrameCallback``); frame rate from ``getStats`` inbound-rtp ``framesDecoded``;
A/V offset from inbound-rtp ``estimatedPlayoutTimestamp`` (video minus audio, sampled together); the mean
jitter buffer delay of each track. Per interrupt: the ``interrupted`` event; the audio the page plays going
silent (read from the received track in 10 ms chunks); the speech frames stopping. Then several pages
speaking at once. ``talkhead bench serve`` keeps a ``summary``. Run: ``python -m talkhead.bench.webrtc [sessions]``."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from talkhead.util import atomic_write

SENTENCE = "Good evening. Tonight the weather turns cold, with strong winds over the bay."
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]
_STATS = """async () => {
  const out = {};
  for (const s of (await window.talkhead.pc.getStats()).values())
    if (s.type === "inbound-rtp") out[s.kind] = s; else if (s.type === "media-playout") out.playout = s;
  return out;
}"""
# Say, then sample the stats every 100 ms until 'done': fps, the A/V playout offset, and the speech timing.
_SAY = """async ([text, seconds]) => {
  const st = window.talkhead, stats = __STATS__, samples = [];
  const t0 = performance.now(); st.events.length = 0; st.presented.length = 0;
  document.getElementById("text").value = text; document.getElementById("say").click();
  while (performance.now() - t0 < seconds * 1000 && !st.events.some((e) => e[1] === "done")) {
    const s = await stats(); samples.push([performance.now(), s.video.framesDecoded,
      s.video.estimatedPlayoutTimestamp && s.audio.estimatedPlayoutTimestamp ?
        s.video.estimatedPlayoutTimestamp - s.audio.estimatedPlayoutTimestamp : 0,  // 0: not known yet
      s.audio.jitterBufferDelay, s.audio.jitterBufferEmittedCount,
      s.video.jitterBufferDelay, s.video.jitterBufferEmittedCount]);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { t0, events: st.events.slice(), presented: st.presented.slice(), samples };
}"""
# Interrupt a long sentence 1 s into its speech. The audio is read where the page hands it to the speaker
# (MediaStreamTrackProcessor on the received track: 10 ms chunks, stamped when handed over, muting included).
# inbound-rtp totalAudioEnergy is sampled too, for comparison: Chromium derives it from a level meter that holds
# a peak for ~110 ms and then divides it by 4 every ~110 ms, so it reads "silent" ~0.45 s after the sound stops.
_INTERRUPT = """async () => {
  const st = window.talkhead, stats = __STATS__, chunks = [], energy = [];
  const track = st.pc.getReceivers().find((r) => r.track.kind === "audio").track;
  const reader = new MediaStreamTrackProcessor({ track }).readable.getReader();
  let reading = true;
  (async () => { while (reading) { const { value } = await reader.read(); if (!value) break;
    const buf = new Float32Array(value.numberOfFrames); value.copyTo(buf, { planeIndex: 0, format: "f32-planar" });
    let peak = 0; for (const x of buf) peak = Math.max(peak, Math.abs(x));
    chunks.push([value.timestamp / 1000, peak]); value.close(); } })();
  document.getElementById("text").value = "This long sentence is cut off well before its end, because " +
    "the listener has heard quite enough of it for now.";
  st.events.length = 0; st.presented.length = 0; document.getElementById("say").click();
  while (!st.events.some((e) => e[1] === "speaking")) await new Promise((r) => setTimeout(r, 10));
  const before = await stats();
  await new Promise((r) => setTimeout(r, 1000));
  const at = await stats(), t0 = performance.now(); document.getElementById("interrupt").click();
  while (performance.now() - t0 < 1500) {
    const s = await stats(); energy.push([performance.now(), s.audio.totalAudioEnergy, s.audio.totalSamplesDuration]);
    await new Promise((r) => setTimeout(r, 10));
  }
  reading = false;
  const ev = st.events.find((e) => e[1] === "interrupted");
  const jb = (a, b) => 1000 * (b.jitterBufferDelay - a.jitterBufferDelay) /
    Math.max(1, b.jitterBufferEmittedCount - a.jitterBufferEmittedCount);
  return { t0, chunks, energy, event: ev ? ev[0] : null, presented: st.presented.slice(),
           audio_jb_ms: jb(before.audio, at.audio), video_jb_ms: jb(before.video, at.video),
           device_ms: at.playout ? 1000 * at.playout.totalPlayoutDelay / Math.max(1, at.playout.totalSamplesCount)
                                 : null };
}"""
LOUD = 0.01  # a 10 ms chunk whose peak is under 1% of full scale is silent


def _say_figures(r: dict) -> dict:
    """One say's figures from what the page recorded."""
    speaking = next((t for t, kind in r["events"] if kind == "speaking"), None)
    first = next((now for now, got in r["presented"] if speaking is not None and got >= speaking), None)
    s = np.array(r["samples"], float)
    fps = None
    if len(s) > 10:
        fps = float((s[-1, 1] - s[5, 1]) / ((s[-1, 0] - s[5, 0]) / 1000))  # skip the first 0.5 s
    offsets = np.abs(s[:, 2][s[:, 2] != 0]) if len(s) else np.zeros(0)
    jb = [None, None]
    if len(s) > 1:  # the mean time a packet waited in the jitter buffer during this say
        jb = [round(1000 * (s[-1, c] - s[0, c]) / max(1.0, s[-1, c + 1] - s[0, c + 1]), 1) for c in (3, 5)]
    return {"say_to_speaking_event_ms": None if speaking is None else round(speaking - r["t0"], 1),
            "say_to_first_speech_frame_ms": None if first is None else round(first - r["t0"], 1),
            "fps": None if fps is None else round(fps, 2),
            "av_offset_p95_ms": round(float(np.percentile(offsets, 95)), 1) if len(offsets) else None,
            "audio_jitter_buffer_ms": jb[0], "video_jitter_buffer_ms": jb[1]}


def _interrupt_figures(r: dict) -> dict:
    """One interrupt's figures (ms after the click) from what the page recorded."""
    t0 = r["t0"]
    chunks = np.array(r["chunks"], float).reshape(-1, 2)
    after = chunks[chunks[:, 0] > t0]
    loud = np.nonzero(after[:, 1] >= LOUD)[0]
    # Silent from the chunk after the last loud one (none loud: silent at once).
    silent = 0.0 if len(loud) == 0 else (after[loud[-1] + 1, 0] - t0 if loud[-1] + 1 < len(after) else None)
    e = np.array(r["energy"], float).reshape(-1, 3)
    d_e, d_t = np.diff(e[:, 1]), np.diff(e[:, 2])
    quiet = np.nonzero((d_t > 0) & (d_e < 1e-4 * np.where(d_t > 0, d_t, 1)))[0]
    # Speech frames stop: the second frame received after the 'interrupted' event is presented (the first may
    # be a speech frame that was being encoded when the interrupt came).
    later = [now for now, got in r["presented"] if r["event"] is not None and got > r["event"]]
    return {"interrupted_event_ms": None if r["event"] is None else round(r["event"] - t0, 1),
            "audio_silent_ms": None if silent is None else round(silent, 1),
            "speech_frames_stop_ms": round(later[1] - t0, 1) if len(later) > 1 else None,
            "stats_energy_silent_ms": round(e[quiet[0] + 1, 0] - t0, 1) if len(quiet) else None,
            "audio_jitter_buffer_ms": round(r["audio_jb_ms"], 1), "video_jitter_buffer_ms": round(r["video_jb_ms"], 1),
            "device_delay_ms": None if r["device_ms"] is None else round(r["device_ms"], 1)}


def _open(browser, server: str, cfg: WebRtcBenchConfig):
    page = browser.new_page()
    page.goto(f"http://{server}/")
    page.wait_for_function("window.talkhead.framesShown > 25", timeout=30_000)
    if page.evaluate("window.talkhead.transport") != "webrtc":
        raise RuntimeError(f"the page fell back to the WebSocket: {page.evaluate('window.talkhead.webrtcError')}")
    page.evaluate("""([target, cut]) => {
      window.talkhead.cutOnInterrupt = cut;
      if (target !== null) for (const r of window.talkhead.pc.getReceivers()) r.jitterBufferTarget = target;
    }""", [cfg.jitter_target_ms, cfg.cut_on_interrupt])
    return page


@dataclass(frozen=True)
class WebRtcBenchConfig:
    """What the WebRTC benchmark runs; the last two are for comparing the page's settings."""

    sessions: int = 3  # pages speaking at once
    says: int = 3
    interrupts: int = 3
    jitter_target_ms: float | None = None  # RTCRtpReceiver.jitterBufferTarget on both tracks; None: Chromium's own
    cut_on_interrupt: bool = True  # the page mutes audio that arrived before an interrupt (False: plays it out)


TARGETS = {"first_speech_frame_ms": 250, "fps": 24, "av_offset_p95_ms": 40, "interrupt_ms": 100}


def unavailable() -> str | None:
    """Why the benchmark cannot run here (no Chromium, no Playwright), or None."""
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        return "needs Debian's chromium (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "needs playwright (pip install playwright)"
    return None


def measure(cfg: WebRtcBenchConfig = WebRtcBenchConfig(), server: str | None = None) -> dict:
    """Measure one session (``says`` sentences, ``interrupts`` interrupts), then ``sessions`` pages speaking at
    once, against ``server`` (host:port) or a server of its own."""
    from playwright.sync_api import sync_playwright

    from talkhead.serve.app import ServeConfig, serve_in_thread

    if (why := unavailable()) is not None:
        raise RuntimeError(why)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    say, interrupt = _SAY.replace("__STATS__", _STATS), _INTERRUPT.replace("__STATS__", _STATS)
    srv = None
    if server is None:
        srv, server = serve_in_thread(ServeConfig(max_sessions=max(4, cfg.sessions), threads=1))  # as `talkhead serve`
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
            page = _open(browser, server, cfg)
            single = [_say_figures(page.evaluate(say, [SENTENCE, 15])) for _ in range(cfg.says)]
            stops = [_interrupt_figures(page.evaluate(interrupt)) for _ in range(cfg.interrupts)]
            pages = [page] + [_open(browser, server, cfg) for _ in range(cfg.sessions - 1)]
            # All speak at once: start each say without waiting, then collect.
            for pg in pages:
                pg.evaluate(f"() => {{ window.benchSay = ({say})([{json.dumps(SENTENCE)}, 15]); }}")
            together = [_say_figures(pg.evaluate("window.benchSay")) for pg in pages]
            for pg in pages:
                pg.goto("about:blank")  # the page's pagehide ends its session now
            browser.close()
        time.sleep(1.0)  # the server's peers close before the process exits
    finally:
        if srv is not None:
            srv.should_exit = True
    return {"config": asdict(cfg), "single": single, "interrupt": stops, "sessions_at_once": cfg.sessions,
            "together": together, "targets": TARGETS}


def summary(result: dict) -> dict:
    """The rows ``talkhead bench serve`` keeps: medians and worst cases of a ``measure`` result."""
    def pick(rows: list[dict], key: str) -> list[float]:
        return [r[key] for r in rows if r.get(key) is not None]

    def stat(values: list[float]) -> dict | None:
        return None if not values else {"median": round(float(np.median(values)), 1),
                                        "max": round(float(np.max(values)), 1), "runs": len(values)}

    one, stops, many = result["single"], result["interrupt"], result["together"]
    return {"say_to_first_decoded_frame_ms": stat(pick(one, "say_to_first_speech_frame_ms")),
            "fps_min": min(pick(one, "fps"), default=None), "av_offset_p95_ms": stat(pick(one, "av_offset_p95_ms")),
            "interrupt_to_silence_ms": stat(pick(stops, "audio_silent_ms")),
            "interrupt_to_idle_frames_ms": stat(pick(stops, "speech_frames_stop_ms")),
            "sessions_at_once": result["sessions_at_once"], "together_fps_min": min(pick(many, "fps"), default=None),
            "together_first_frame_ms": stat(pick(many, "say_to_first_speech_frame_ms")),
            "together_av_offset_p95_ms": stat(pick(many, "av_offset_p95_ms")), "targets": result["targets"]}


def run(out_dir: Path, cfg: WebRtcBenchConfig = WebRtcBenchConfig()) -> dict:
    """``measure``, written to ``out_dir``/webrtc.json."""
    result = measure(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / "webrtc.json", json.dumps(result, indent=1).encode())
    return result


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(json.dumps(run(Path("docs/bench/webrtc"), WebRtcBenchConfig(sessions=n)), indent=1))
