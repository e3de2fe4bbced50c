"""The browser page in a real headless Chromium (Debian's, driven by Playwright): it loads and shows the
live face, a Say shows moving frames with sound, Interrupt stops them, and a video can be made."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# Debian's chromium: .ci/run installs it (apt-get install chromium) before the tests.
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (see .ci/run)")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--autoplay-policy=no-user-gesture-required"]


def test_the_page_talks_and_stops_when_interrupted(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page()
        page.goto(f"http://{server}/?transport=websocket")  # the WebSocket path (WebRTC: test_webrtc.py)
        page.wait_for_function("window.talkhead.framesShown > 25", timeout=20_000)  # idle frames drawn
        page.click("#say")
        page.wait_for_function("window.talkhead.speaking && window.talkhead.speechFrames > 10", timeout=20_000)
        # Its sound arrived and was scheduled (waited for: audio and pictures are decoded on different paths).
        page.wait_for_function("window.talkhead.audioChunks > 10", timeout=5_000)
        drawn = page.evaluate("document.getElementById('face').getContext('2d').getImageData(0, 0, 128, 128)"
                              ".data.reduce((a, b) => a + b, 0)")
        assert drawn > 0  # the canvas holds a face, not black
        page.click("#interrupt")
        page.wait_for_function("window.talkhead.last && window.talkhead.last.type === 'interrupted'", timeout=5_000)
        before = page.evaluate("window.talkhead.speechFrames")
        page.wait_for_timeout(500)
        assert page.evaluate("window.talkhead.speechFrames") == before and not page.evaluate("window.talkhead.speaking")
        page.fill("#vtext", "Made in the browser.")
        page.click("#make")
        page.wait_for_function("window.talkhead.videoReady === true", timeout=60_000)
        browser.close()
