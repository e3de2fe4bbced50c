"""Who may use a server (serve.guard): Host, Origin and token, as a pure rule and on real servers over real
sockets; the cross-origin page in a real browser is in test_page.py."""

from __future__ import annotations

import asyncio
import http.client
import json

import pytest
import websockets

from talkhead.cli import main
from talkhead.serve.guard import GuardConfig, refusal

TOKEN = "a-test-token-of-some-length"


def _scope(path="/v1/videos", kind="http", scheme="http", query=b"", **headers):
    pairs = [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    return {"type": kind, "path": path, "scheme": scheme, "query_string": query, "headers": pairs}


@pytest.mark.parametrize("cfg, scope, status", [
    (GuardConfig(), _scope(host="127.0.0.1:8000"), None),
    (GuardConfig(), _scope(host="localhost:8000", origin="http://localhost:8000"), None),  # the page's own
    (GuardConfig(), _scope(host="[::1]:8000"), None),
    (GuardConfig(), _scope(), None),  # no Host (HTTP/1.0): not a browser's request
    (GuardConfig(), _scope(host="rebound.example:8000"), 403),  # DNS rebinding: a name that resolves here
    (GuardConfig(allow_hosts=("talk.lan",)), _scope(host="TALK.lan:8000"), None),
    (GuardConfig(host="0.0.0.0", token=TOKEN), _scope(host="any.name", authorization=f"Bearer {TOKEN}"), None),
    (GuardConfig(), _scope(host="127.0.0.1:8000", origin="http://evil.example"), 403),
    (GuardConfig(), _scope(host="127.0.0.1:8000", origin="http://127.0.0.1:9000"), 403),  # another port
    (GuardConfig(), _scope(host="127.0.0.1:8000", origin="null"), 403),  # a sandboxed frame or a file
    (GuardConfig(), _scope(kind="websocket", scheme="ws", host="127.0.0.1:8000", origin="http://127.0.0.1:8000"), None),
    (GuardConfig(), _scope(kind="websocket", scheme="wss", host="h:1", origin="http://h:1"), 403),  # not its scheme
    (GuardConfig(allow_origins=("http://app.example/",)), _scope(host="127.0.0.1", origin="http://APP.example"), None),
    (GuardConfig(allow_origins=("*",)), _scope(host="127.0.0.1", origin="http://evil.example"), None),
    (GuardConfig(token=TOKEN), _scope(host="127.0.0.1"), 401),
    (GuardConfig(token=TOKEN), _scope(host="127.0.0.1", authorization="Bearer wrong-token-of-some-length"), 401),
    (GuardConfig(token=TOKEN), _scope(host="127.0.0.1", authorization=f"bearer {TOKEN}"), None),
    (GuardConfig(token=TOKEN), _scope(kind="websocket", query=f"token={TOKEN}".encode(), host="127.0.0.1"), None),
    (GuardConfig(token=TOKEN), _scope(path="/", host="127.0.0.1"), None),  # the page holds no secret
])
def test_the_rule_serves_its_own_pages_and_names_and_refuses_the_rest(cfg, scope, status):
    why = refusal(scope, cfg)
    assert (why and why[0]) == status
    assert why is None or "\n" not in why[1]


def _post(address: str, path: str, body: bytes, **headers) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(address, timeout=30)
    conn.request("POST", path, body, {k.replace("_", "-"): v for k, v in headers.items()})
    r = conn.getresponse()
    return r.status, json.loads(r.read() or b"{}") if r.getheader("content-type") == "application/json" else {}


def _ws_status(address: str, query: str = "", **kw) -> int:
    """101 when the WebSocket opens (and says ready after start), else the HTTP status that refused it."""
    async def go():
        try:
            async with websockets.connect(f"ws://{address}/v1/stream{query}", open_timeout=10, **kw) as ws:
                await ws.send(json.dumps({"type": "start"}))
                assert json.loads(await ws.recv())["type"] == "ready"
                return 101
        except websockets.exceptions.InvalidStatus as e:
            return e.response.status_code
    return asyncio.run(go())


def test_pages_of_other_origins_and_other_host_names_are_refused_and_clients_without_origin_served(server):
    job = json.dumps({"text": "Hello."}).encode()
    status, err = _post(server, "/v1/videos", job, content_type="text/plain", origin="http://evil.example")
    assert status == 403 and "evil.example" in err["error"] and "may not use this server" in err["error"]
    status, err = _post(server, "/v1/avatars", b"x" * 100, host="rebound.example")
    assert status == 403 and "not this server's" in err["error"]
    assert _post(server, "/v1/webrtc", b"{}", origin="http://evil.example")[0] == 403
    assert _ws_status(server, origin="http://evil.example") == 403
    assert _ws_status(server, origin=f"http://{server}") == 101  # the page's own origin
    assert _ws_status(server) == 101  # an SDK sends no Origin


@pytest.fixture(scope="module")
def token_server():
    from talkhead.serve.app import ServeConfig, serve_in_thread

    srv, address = serve_in_thread(ServeConfig(max_sessions=1, size=64, live_model=None,
                                               guard=GuardConfig(token=TOKEN)))
    yield address
    srv.should_exit = True


def test_a_server_with_a_token_serves_only_requests_that_carry_it(token_server):
    assert _post(token_server, "/v1/videos", b"{}")[0] == 401
    assert _post(token_server, "/v1/videos", b"{}", authorization="Bearer not-the-token-at-all")[0] == 401
    assert _post(token_server, "/v1/videos", b"{}", authorization=f"Bearer {TOKEN}")[0] == 400  # let in: no text
    assert _ws_status(token_server) == 401
    assert _ws_status(token_server, f"?token={TOKEN}") == 101  # a browser's WebSocket cannot set headers
    assert _ws_status(token_server, additional_headers={"Authorization": f"Bearer {TOKEN}"}) == 101
    conn = http.client.HTTPConnection(token_server, timeout=10)
    conn.request("GET", "/")
    assert conn.getresponse().status == 200  # the page is served; it passes on its own ?token=


@pytest.mark.parametrize("argv, why", [
    (["--host", "0.0.0.0"], "needs a token"),
    (["--host", "192.168.1.5", "--token", "short"], "16 to 256 characters"),
    (["--allow-origin", "evil.example"], "takes http://host[:port]"),
])
def test_serving_beyond_loopback_without_a_token_is_refused_before_anything_loads(argv, why, capsys, monkeypatch):
    monkeypatch.delenv("TALKHEAD_TOKEN", raising=False)
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert why in err and err.count("\n") == 0
