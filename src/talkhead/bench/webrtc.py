"""The live page over WebRTC in headless Chromium, measured as the browser sees it.

A real server (uvicorn in a thread), Debian's Chromium driven by Playwright, the shipped page. Per
``say``: time to the ``speaking`` event and to the first frame the browser received after it and
presented (``requestVideoFrameCallback``); frame rate from ``getStats`` inbound-rtp ``framesDecoded``;
A/V offset from inbound-rtp ``estimatedPlayoutTimestamp`` (video minus audio, sampled together);
interrupt to silence (the inbound-rtp audio energy played per second under a level of 0.01). Then the same with several pages
speaking at once. Run: ``python -m talkhead.bench.webrtc [sessions]``.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from talkhead.util import atomic_write

SENTENCE = "Good evening. Tonight the weather turns cold, with strong winds over the bay."
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]
_STATS = """async () => {
  const out = {};
  for (const s of (await window.talkhead.pc.getStats()).values())
    if (s.type === "inbound-rtp") out[s.kind] = s;
  return out;
}"""
# Say, then sample the stats every 100 ms until 'done': fps, the A/V playout offset, and the speech timing.
_SAY = """async ([text, seconds]) => {
  const st = window.talkhead, stats = __STATS__, samples = [];
  const t0 = performance.now(); st.events.length = 0; st.presented.length = 0;
  document.getElementById("text").value = text; document.getElementById("say").click();
  while (performance.now() - t0 < seconds * 1000 && !st.events.some((e) => e[1] === "done")) {
    const s = await stats(); samples.push([performance.now(), s.video.framesDecoded,
      (s.video.estimatedPlayoutTimestamp || 0) - (s.audio.estimatedPlayoutTimestamp || 0)]);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { t0, events: st.events.slice(), presented: st.presented.slice(), samples };
}"""
_INTERRUPT = """async () => {
  const st = window.talkhead, stats = __STATS__;
  document.getElementById("text").value = "This long sentence is cut off well before its end, because " +
    "the listener has heard quite enough of it for now.";
  st.events.length = 0; document.getElementById("say").click();
  while (!st.events.some((e) => e[1] === "speaking")) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 1000));
  const t0 = performance.now(); document.getElementById("interrupt").click();
  // Silent: the audio energy played since the last sample is under a level of 0.01 (audioLevel itself
  // is smoothed over about 100 ms, so it would lag).
  let silent = null, last = await stats();
  while (performance.now() - t0 < 3000) {
    await new Promise((r) => setTimeout(r, 10));
    const now = await stats(), dt = now.audio.totalSamplesDuration - last.audio.totalSamplesDuration;
    if (dt > 0 && (now.audio.totalAudioEnergy - last.audio.totalAudioEnergy) / dt < 1e-4) {
      silent = performance.now() - t0; break;
    }
    last = now;
  }
  const ev = st.events.find((e) => e[1] === "interrupted");
  return { silent_ms: silent, interrupted_event_ms: ev ? ev[0] - t0 : null };
}"""


def _say_figures(r: dict) -> dict:
    """One say's figures from what the page recorded."""
    speaking = next((t for t, kind in r["events"] if kind == "speaking"), None)
    first = next((now for now, got in r["presented"] if speaking is not None and got >= speaking), None)
    s = np.array(r["samples"], float)
    fps = None
    if len(s) > 10:
        fps = float((s[-1, 1] - s[5, 1]) / ((s[-1, 0] - s[5, 0]) / 1000))  # skip the first 0.5 s
    offsets = np.abs(s[:, 2][s[:, 2] != 0]) if len(s) else np.zeros(0)
    return {"say_to_speaking_event_ms": None if speaking is None else round(speaking - r["t0"], 1),
            "say_to_first_speech_frame_ms": None if first is None else round(first - r["t0"], 1),
            "fps": None if fps is None else round(fps, 2),
            "av_offset_p95_ms": round(float(np.percentile(offsets, 95)), 1) if len(offsets) else None}


def _open(browser, server: str):
    page = browser.new_page()
    page.goto(f"http://{server}/")
    page.wait_for_function("window.talkhead.framesShown > 25", timeout=30_000)
    if page.evaluate("window.talkhead.transport") != "webrtc":
        raise RuntimeError(f"the page fell back to the WebSocket: {page.evaluate('window.talkhead.webrtcError')}")
    return page


def run(out_dir: Path, sessions: int = 3, says: int = 3) -> dict:
    """Measure one session (``says`` sentences and an interrupt), then ``sessions`` pages speaking at once."""
    from playwright.sync_api import sync_playwright

    from talkhead.serve.app import ServeConfig, serve_in_thread

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("needs Debian's chromium (apt-get install chromium)")
    say, interrupt = _SAY.replace("__STATS__", _STATS), _INTERRUPT.replace("__STATS__", _STATS)
    srv, server = serve_in_thread(ServeConfig(max_sessions=max(4, sessions)))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
            page = _open(browser, server)
            single = [_say_figures(page.evaluate(say, [SENTENCE, 15])) for _ in range(says)]
            stops = [page.evaluate(interrupt) for _ in range(2)]
            pages = [page] + [_open(browser, server) for _ in range(sessions - 1)]
            # All speak at once: start each say without waiting, then collect.
            for pg in pages:
                pg.evaluate(f"() => {{ window.benchSay = ({say})([{json.dumps(SENTENCE)}, 15]); }}")
            together = [_say_figures(pg.evaluate("window.benchSay")) for pg in pages]
            for pg in pages:
                pg.goto("about:blank")  # the page's pagehide ends its session now
            browser.close()
        time.sleep(1.0)  # the server's peers close before the process exits
    finally:
        srv.should_exit = True
    result = {"single": single, "interrupt": stops, "sessions_at_once": sessions, "together": together,
              "targets": {"first_speech_frame_ms": 250, "fps": 24, "av_offset_p95_ms": 40, "interrupt_ms": 100}}
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write(out_dir / "webrtc.json", json.dumps(result, indent=1).encode())
    return result


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    print(json.dumps(run(Path("docs/bench/webrtc"), sessions=n), indent=1))
