"""`phi.hosts` on its own: which names count as loopback, how a `Host` header is read, and what
`TrustedHosts` lets through or answers, spoken to as raw ASGI (what uvicorn hands it) and
through the web app. The web app's and control API's own tests show the same end to end."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from phi.hosts import TrustedHosts, host_name, is_loopback
from phi.memory import Memory
from phi.web import create_app
from tests._serving import serving

pytestmark = pytest.mark.anyio

Message = MutableMapping[str, Any]


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("localhost", True),
        ("LocalHost", True),
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
        ("::", False),
        ("phi.example", False),
        ("localhost.example", False),
        ("X127.0.0.1X", False),  # only brackets are taken off, nothing else
        ("", False),
    ],
)
def test_which_bind_addresses_stay_on_this_machine(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("127.0.0.1:8780", "127.0.0.1"),
        ("Phi.Example", "phi.example"),
        (" phi.example:443 ", "phi.example"),
        ("[::1]:8780", "::1"),
        ("[::1]", "::1"),
        ("[::1]:80]", "::1"),  # an address literal ends at its first `]`
        ("[::1", "[::1"),  # no closing bracket: no address literal, kept whole (and refused)
        ("::1", "::1"),  # several colons and no brackets: an address, no port
        ("", ""),
    ],
)
def test_the_name_in_a_host_header(header: str, name: str) -> None:
    assert host_name(header) == name


class Inner:
    """The app behind the middleware: records each scope and echoes the request body."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        self.seen.append(scope["type"])
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.complete"})
            return
        body = (await receive()).get("body", b"")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


async def call(app: TrustedHosts, scope: Message, body: bytes = b"") -> list[Message]:
    """Send one request through `app` the way an ASGI server would; what it answered."""
    sent: list[Message] = []

    async def receive() -> Message:
        if scope["type"] == "lifespan":
            return {"type": "lifespan.startup"}
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def http(host: bytes | None, kind: str = "http") -> Message:
    headers = [(b"host", host)] if host is not None else []
    return {"type": kind, "path": "/", "headers": [*headers, (b"accept", b"*/*")]}


async def test_a_trusted_request_reaches_the_app_with_its_body() -> None:
    inner = Inner()
    app = TrustedHosts(inner, hosts=["localhost"])
    sent = await call(app, http(b"LOCALHOST:8780"), b"hello")
    assert [m.get("status") for m in sent] == [200, None]
    assert sent[1]["body"] == b"hello"
    anyone = TrustedHosts(inner, hosts=["*"])
    sent = await call(anyone, http(b"anything.example"), b"hi")
    assert sent[1]["body"] == b"hi"
    assert inner.seen == ["http", "http"]


async def test_lifespan_passes_through_whatever_the_hosts() -> None:
    inner = Inner()
    sent = await call(TrustedHosts(inner, hosts=["localhost"]), {"type": "lifespan"})
    assert sent == [{"type": "lifespan.startup.complete"}]
    assert inner.seen == ["lifespan"]


async def test_an_untrusted_or_missing_host_is_refused_before_the_app() -> None:
    inner = Inner()
    app = TrustedHosts(inner, hosts=["localhost", "[::1]:8780"], advice="trust it somehow")
    for host, shown in [(b"attacker.example", "attacker.example"), (None, "")]:
        start, body = await call(app, http(host))
        detail = (
            f"host {shown!r} is not trusted by this server; reach it by one of "
            "['::1', 'localhost'], or trust it somehow"
        )
        expected = json.dumps({"detail": detail}).encode()
        assert start == {
            "type": "http.response.start",
            "status": 400,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(expected)).encode()),
            ],
        }
        assert body == {"type": "http.response.body", "body": expected}
    assert inner.seen == []


async def test_the_web_app_says_how_to_trust_another_name(memory: Memory) -> None:
    app = create_app(memory=memory)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://phi.example") as client:
        refused = await client.get("/health")
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "application/json"
    assert refused.json() == {
        "detail": "host 'phi.example' is not trusted by this server; reach it by one of "
        "['127.0.0.1', '::1', 'localhost'], or start it with --trusted-host"
    }


def websocket(host: bytes, *, refusable: bool) -> Message:
    """A websocket handshake's scope; `refusable` when the server can answer it with HTTP
    (the `websocket.http.response` extension, which uvicorn offers)."""
    extensions: dict[str, object] = {"websocket.http.response": {}} if refusable else {}
    return {**http(host, "websocket"), "extensions": extensions}


async def test_an_untrusted_websocket_handshake_is_refused_as_plain_requests_are() -> None:
    """Finding: a refused handshake was answered with `http.response.*`, which no ASGI server
    takes on a websocket (uvicorn logged a traceback and answered 500)."""
    inner = Inner()
    app = TrustedHosts(inner, hosts=["localhost"])
    start, body = await call(app, websocket(b"attacker.example", refusable=True))
    assert (start["type"], start["status"], body["type"]) == (
        "websocket.http.response.start",
        400,
        "websocket.http.response.body",
    )
    assert json.loads(body["body"])["detail"].startswith("host 'attacker.example' is not trusted")
    # A server that cannot answer with HTTP is told to close: it refuses the handshake.
    sent = await call(app, websocket(b"attacker.example", refusable=False))
    assert sent == [{"type": "websocket.close", "code": 1008}]
    assert inner.seen == []


async def test_a_real_server_refuses_an_untrusted_websocket_with_a_400() -> None:
    inner = Inner()
    async with serving(TrustedHosts(inner, hosts=["localhost"])) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"GET / HTTP/1.1\r\nHost: attacker.example\r\nUpgrade: websocket\r\n"
            b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            b"Sec-WebSocket-Version: 13\r\n\r\n"
        )
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert json.loads(body)["detail"].startswith("host 'attacker.example' is not trusted")
    assert inner.seen == ["lifespan"]
