"""examples/pipecat_agent.py as a user runs it: its server in a process of its own on a loopback port, its page
in a real headless Chromium (Debian's, as tests/serve/test_page.py) over Pipecat's SmallWebRTC: the face's
frames arrive and play, the scripted newsreader's speech is heard, a typed line is said back, and Interrupt
silences it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pipecat")  # an optional extra: the base install's tests do not need it
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")  # .ci/run installs it
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (see .ci/run)")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipecat_agent.py"
START_S = 120  # the agent's first connection loads the models (seconds on a busy 2-core machine)
# What Chromium has heard: the audio track's energy, summed over every sample it played (silence adds nothing).
ENERGY = """async () => {
  const stats = await window.agent.pc.getStats();
  return [...stats.values()].find((s) => s.type === "inbound-rtp" && s.kind === "audio").totalAudioEnergy || 0;
}"""
VIDEO = "[document.getElementById('face').videoWidth, document.getElementById('face').currentTime]"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def agent_url():
    """The example's server, started as ``python examples/pipecat_agent.py --port N`` (96 px: light on the CPU)."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(EXAMPLE), "--port", str(port), "--size", "96"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # printed once the voice is loaded, just before the server starts
        assert f"http://127.0.0.1:{port}/" in line, line
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _heard_more(page, since: float, by: float, timeout_s: float) -> float:
    """Wait until Chromium's heard energy exceeds ``since`` by ``by``; the energy then."""
    end = time.monotonic() + timeout_s
    while (energy := page.evaluate(ENERGY)) < since + by:
        assert time.monotonic() < end, f"no sound: energy {energy:.4f}, waited for {since + by:.4f}"
        page.wait_for_timeout(200)
    return energy


def test_the_agent_page_shows_the_face_and_speaks_over_smallwebrtc(agent_url):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page()
        page.goto(agent_url)
        page.click("#start")
        page.wait_for_function("document.getElementById('face').videoWidth > 0", timeout=START_S * 1000)
        width, t0 = page.evaluate(VIDEO)
        page.wait_for_timeout(1000)
        assert width == 96 and page.evaluate(VIDEO)[1] > t0 + 0.5  # frames of the face keep coming and play
        # The newsreader's first story, spoken by Piper and sent on by the face with its images.
        energy = _heard_more(page, 0.0, 0.02, 60)
        page.wait_for_timeout(6000)  # the story (about 4 s) is over
        energy = page.evaluate(ENERGY)
        page.fill("#text", "Pipecat and talkhead, in a browser.")
        page.click("#say")  # over the data channel: a user message, which the newsreader says back
        energy = _heard_more(page, energy, 0.02, 60)
        page.wait_for_timeout(5000)
        page.click("#next")
        before = _heard_more(page, page.evaluate(ENERGY), 0.01, 60)
        page.click("#stop")
        page.wait_for_timeout(1000)  # what was already in flight (jitter buffer, 1-2 images) plays out
        stopped = page.evaluate(ENERGY)
        page.wait_for_timeout(1500)
        assert page.evaluate(ENERGY) - stopped < 0.002, (before, stopped)  # the story was cut, not finished
        assert page.evaluate(VIDEO)[1] > t0 + 5  # and the face goes on (idle)
        browser.close()


def test_an_offer_that_is_not_sdp_is_answered_400(agent_url):
    import json
    import urllib.error
    import urllib.request

    for body in ({"sdp": "not sdp", "type": "offer"}, {"nonsense": 1}):
        req = urllib.request.Request(agent_url + "api/offer", data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 400 and "not a WebRTC offer" in json.loads(e.value.read())["detail"]


def test_a_missing_avatar_is_one_line_and_exit_code_2():
    r = subprocess.run([sys.executable, str(EXAMPLE), "--avatar", "/nonexistent/me.avatar"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == "error: no such photo or .avatar file: /nonexistent/me.avatar"
