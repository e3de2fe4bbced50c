"""Who may use a server: Host, Origin and token checks in front of every HTTP request and WebSocket.

A server on loopback is still reachable from every web page its user opens: a page may open a WebSocket or
POST a ``text/plain`` body to ``127.0.0.1`` without any preflight, and a name the attacker controls can be
made to resolve to ``127.0.0.1`` (DNS rebinding). So, as Jupyter Server and Ollama do:

- **Host**: the name the request was sent to must be this server's own (loopback names, the address it is
  bound to, or one allowed with ``--allow-host``). A server bound to every interface (``0.0.0.0``) cannot
  know its names and takes any, behind its token.
- **Origin**: a browser says which page sent the request. It is served when that page is the server's own
  (the same scheme, host and port) or on the allowlist (``--allow-origin``); any other page gets 403.
  Clients that send no Origin (SDKs, voice agents, curl) are not browsers acting for a page: served.
- **Token**: with one set (required beyond loopback), every ``/v1/`` request carries it, as
  ``Authorization: Bearer TOKEN`` or, where a browser cannot set headers (WebSocket), ``?token=TOKEN``.
  The page itself (``/``) holds no secret and is served without it; it passes on a ``?token=`` it was
  opened with.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from urllib.parse import parse_qs

from talkhead.config import option

LOOPBACK = ("127.0.0.1", "localhost", "::1")
EVERY_INTERFACE = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class GuardConfig:
    """Who a server serves (see the module's text)."""

    host: str = option("127.0.0.1", "the address the server is bound to (loopback only by default)")
    allow_hosts: tuple[str, ...] = option((), "a name the server is reached by besides loopback and --host (a "
                                              "proxy's, a LAN name; repeatable); other Host headers get 403 (DNS "
                                              "rebinding)", flag="--allow-host", append=True, metavar="NAME")
    allow_origins: tuple[str, ...] = option((), "a web page origin (http://host:port) allowed to use the server "
                                                "besides its own page (repeatable; '*' any); other pages get 403",
                                            flag="--allow-origin", append=True, metavar="URL")
    token: str | None = option(None, "clients send 'Authorization: Bearer TOKEN' (or ?token=TOKEN) on every /v1/ "
                                     "request; required beyond loopback (default: $TALKHEAD_TOKEN, else none on "
                                     "loopback)")

    def check(self) -> None:
        """Refuse a configuration that would leave the server open: beyond loopback without a token."""
        from talkhead.errors import InputError

        if self.host not in LOOPBACK and not self.token:
            raise InputError(f"serving on {self.host} (beyond loopback) needs a token: give --token or set "
                             "TALKHEAD_TOKEN, and clients send it as 'Authorization: Bearer TOKEN'")
        if self.token is not None and not 16 <= len(self.token) <= 256:
            raise InputError("a token must be 16 to 256 characters (python -c 'import secrets; "
                             "print(secrets.token_urlsafe())' makes one)")
        for o in self.allow_origins:
            if o != "*" and not o.startswith(("http://", "https://")):
                raise InputError(f"--allow-origin takes http://host[:port] or https://..., got {o[:64]!r}")


def hostname(value: str) -> str:
    """The name in a Host header or an origin's authority, lower case, without port or IPv6 brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def refusal(scope: dict, cfg: GuardConfig) -> tuple[int, str] | None:
    """Why this request is refused, as (HTTP status, one line), or None to serve it."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    host = headers.get("host")
    names = set(LOOPBACK) | {h.lower() for h in cfg.allow_hosts} | {cfg.host.lower()}
    if host is not None and cfg.host not in EVERY_INTERFACE and hostname(host) not in names:
        return 403, f"host {host[:64]!r} is not this server's (give --allow-host to serve it)"
    origin = headers.get("origin")
    if origin is not None and not _origin_allowed(origin, host, scope, cfg):
        return 403, f"pages from {origin[:64]!r} may not use this server (give --allow-origin to allow them)"
    if cfg.token is not None and scope.get("path", "").startswith("/v1/"):
        given = _bearer(headers.get("authorization", "")) or _query_token(scope)
        if not hmac.compare_digest(given.encode(), cfg.token.encode()):
            return 401, "a token is required: 'Authorization: Bearer TOKEN' or ?token=TOKEN"
    return None


def _origin_allowed(origin: str, host: str | None, scope: dict, cfg: GuardConfig) -> bool:
    origin = origin.strip().lower().rstrip("/")
    if "*" in cfg.allow_origins or origin in {o.lower().rstrip("/") for o in cfg.allow_origins}:
        return True
    secure = scope.get("scheme") in ("https", "wss")
    return host is not None and origin == f"{'https' if secure else 'http'}://{host.strip().lower()}"


def _bearer(value: str) -> str:
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _query_token(scope: dict) -> str:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
    return values[0] if values else ""


class Guard:
    """ASGI middleware: requests that ``refusal`` refuses get their status and a JSON error (a WebSocket too,
    before it is accepted, where the server can answer a handshake so; else it is closed: a 403); the rest
    reach ``app``."""

    def __init__(self, app, cfg: GuardConfig) -> None:
        self.app, self.cfg = app, cfg

    async def __call__(self, scope, receive, send) -> None:
        why = refusal(scope, self.cfg) if scope["type"] in ("http", "websocket") else None
        if why is None:
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": why[1]}).encode()
        head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": why[0], "headers": head})
            await send({"type": "http.response.body", "body": body})
            return
        await receive()  # the connect message, before the answer that refuses it
        if "websocket.http.response" in scope.get("extensions", {}):  # the real status and why (uvicorn has it)
            await send({"type": "websocket.http.response.start", "status": why[0], "headers": head})
            await send({"type": "websocket.http.response.body", "body": body})
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": why[1][:120]})
