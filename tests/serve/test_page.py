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



_PROBE = """
window.probe = {};
const ws = new WebSocket("ws://%(server)s/v1/stream");
ws.onopen = () => { window.probe.ws = "open"; ws.close(); };
ws.onerror = () => { window.probe.ws = "refused"; };
// no-cors: a page may send this to any site, no preflight asked; it gets an opaque answer (status 0)
fetch("http://%(server)s/v1/videos", { method: "POST", mode: "no-cors", body: JSON.stringify({ text: "Hi." }) })
  .then((r) => { window.probe.post = r.type === "opaque" ? "opaque" : r.status; });
"""


def test_a_page_from_another_origin_is_refused_and_the_servers_own_origin_is_served(server, tmp_path):
    """Any site the user visits could drive a loopback server: the guard (serve.guard) answers it 403."""
    import functools
    import http.server
    import threading

    from playwright.sync_api import sync_playwright

    probe = _PROBE % {"server": server}
    (tmp_path / "index.html").write_text(f"<!doctype html><script>{probe}</script>")
    site = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path)))
    threading.Thread(target=site.serve_forever, daemon=True).start()
    other, own, seen = f"http://127.0.0.1:{site.server_port}", f"http://{server}", {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            for origin, url in ((other, f"{other}/index.html"), (own, f"{own}/v1/status")):
                page = browser.new_page()
                page.on("response", lambda r, o=origin: seen.setdefault(o, []).append((r.url, r.status)))
                page.goto(url)
                if origin == own:  # the same script, run by a page of the server's own origin
                    page.evaluate(probe)
                page.wait_for_function("window.probe && window.probe.ws && window.probe.post", timeout=30_000)
                seen[origin, "probe"] = page.evaluate("window.probe")
                page.close()
            browser.close()
    finally:
        site.shutdown()
    assert seen[other, "probe"] == {"ws": "refused", "post": "opaque"}  # the page learns nothing
    assert (f"{own}/v1/videos", 403) in seen[other]  # and the server refused it: no video was made
    assert seen[own, "probe"] == {"ws": "open", "post": 200}
