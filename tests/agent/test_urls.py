"""`check_urls`: refusals send nothing, redirects are vetted hop by hop, titles are read.

Only mock transports and a fake resolver: no request leaves the process.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable

import anyio
import httpx
import pytest
from inline_snapshot import snapshot

from phi.agent.urls import MAX_BODY_BYTES, UrlCheck, check_urls

pytestmark = pytest.mark.anyio

PUBLIC = "93.184.216.34"

HOSTS: dict[str, list[str]] = {
    "public.example": [PUBLIC],
    "other.example": ["151.101.1.69", "2606:2800:220:1:248:1893:25c8:1946"],
    "xn--bcher-kva.example": ["151.101.65.69"],
    "intranet.example": ["10.1.2.3"],
    "mixed.example": [PUBLIC, "127.0.0.1"],
    "ula.example": ["fd00::1"],
    "metadata.example": ["169.254.169.254"],
}


async def fake_resolve(host: str) -> list[str]:
    """DNS for the tests: example names map to fixed addresses, anything else fails."""
    try:
        return HOSTS[host]
    except KeyError:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None


Handler = Callable[[httpx.Request], httpx.Response | Awaitable[httpx.Response]]


class Recorder:
    """A mock transport that records every request it is sent."""

    def __init__(self, handler: Handler | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.handler = handler

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.handler is None:
            raise AssertionError(f"no request may be sent; got one to {request.url}")
        response = self.handler(request)
        return response if isinstance(response, httpx.Response) else await response

    def hosts(self) -> list[str]:
        """`Host` header and path of each request, in order."""
        return [f"{r.headers['host']}{r.url.raw_path.decode()}" for r in self.requests]


async def check(urls: list[str], recorder: Recorder, *, seconds: float = 10) -> list[UrlCheck]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(recorder)) as client:
        return await check_urls(urls, client=client, resolve=fake_resolve, timeout=seconds)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://127.0.0.1/", "refused: 127.0.0.1 is a loopback address"),
        ("http://127.1/", "refused: 127.0.0.1 is a loopback address"),
        ("http://0x7f.1:8080/admin", "refused: 127.0.0.1 is a loopback address"),
        ("http://2130706433/", "refused: 127.0.0.1 is a loopback address"),
        ("http://127.0.0.1./", "refused: 127.0.0.1 is a loopback address"),
        ("http://[::1]/", "refused: ::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "refused: ::ffff:7f00:1 is a loopback address"),
        ("http://[::ffff:a00:1]/", "refused: ::ffff:a00:1 is a private address"),
        ("http://[2002:7f00:1::]/", "refused: 2002:7f00:1:: is a loopback address"),
        ("http://[64:ff9b::a00:1]/", "refused: 64:ff9b::a00:1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[fe80::1]/", "refused: fe80::1 is a link-local address"),
        ("http://10.0.0.1/", "refused: 10.0.0.1 is a private address"),
        ("http://172.16.5.4/", "refused: 172.16.5.4 is a private address"),
        ("https://192.168.1.1/", "refused: 192.168.1.1 is a private address"),
        ("http://[fc00::1]/", "refused: fc00::1 is a private address"),
        ("http://100.64.0.1/", "refused: 100.64.0.1 is a non-public address"),
        ("http://0.0.0.0/", "refused: 0.0.0.0 is an unspecified address"),
        ("http://[::]/", "refused: :: is an unspecified address"),
        ("http://224.0.0.1/", "refused: 224.0.0.1 is a multicast address"),
        ("http://[ff02::1]/", "refused: ff02::1 is a multicast address"),
        ("http://240.0.0.1/", "refused: 240.0.0.1 is a reserved address"),
        ("http://localhost:2583/", "'localhost' is this machine"),
        ("http://phi.localhost/", "'phi.localhost' is this machine"),
        ("http://intranet.example/", "'intranet.example' resolves to 10.1.2.3 is a private"),
        ("http://mixed.example/", "'mixed.example' resolves to 127.0.0.1 is a loopback"),
        ("http://ula.example/", "'ula.example' resolves to fd00::1 is a private address"),
        ("http://metadata.example/", "resolves to 169.254.169.254 is a link-local address"),
        ("http://nowhere.example/", "could not resolve 'nowhere.example'"),
    ],
)
async def test_refused_hosts_get_no_request(url: str, error: str) -> None:
    recorder = Recorder()
    [result] = await check([url], recorder)
    assert recorder.requests == []
    assert (result.url, result.ok, result.status, result.final_url, result.title) == (
        url,
        False,
        None,
        str(httpx.URL(url)),
        None,
    )
    assert result.error is not None
    assert error in result.error


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("ftp://public.example/file", "only http and https links are checked, not 'ftp'"),
        ("file:///etc/passwd", "only http and https links are checked, not 'file'"),
        ("javascript:alert(1)", "only http and https links are checked, not 'javascript'"),
        ("gopher://public.example/", "only http and https links are checked, not 'gopher'"),
        ("public.example/page", "the URL has no scheme (write it with http:// or https://)"),
        ("http://[::1/", "invalid URL"),
        ("http://0177.0.0.1/", "invalid URL"),  # octal: httpx refuses it, so it is never sent
    ],
)
async def test_bad_schemes_are_refused(url: str, error: str) -> None:
    recorder = Recorder()
    [result] = await check([url], recorder)
    assert recorder.requests == []
    assert not result.ok
    assert result.error is not None
    assert result.error.startswith(error)


def page(title: str, *, status: int = 200) -> httpx.Response:
    body = f"<html><head><title>{title}</title></head><body>hi</body></html>"
    return httpx.Response(status, html=body)


async def test_title_is_read_and_the_request_goes_to_the_vetted_address() -> None:
    recorder = Recorder(lambda r: page(" Crows &amp; Ravens\n  of the North "))
    [result] = await check(["https://public.example/corvids?lang=en"], recorder)
    assert result == UrlCheck(
        url="https://public.example/corvids?lang=en",
        ok=True,
        status=200,
        final_url="https://public.example/corvids?lang=en",
        title="Crows & Ravens of the North",
        error=None,
    )
    [request] = recorder.requests
    assert (request.url.host, request.url.raw_path) == (PUBLIC, b"/corvids?lang=en")
    assert request.headers["host"] == "public.example"
    assert request.extensions["sni_hostname"] == "public.example"


async def test_titles_honour_the_charset_and_only_html_is_read() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/latin":
            body = "<title>Café crème</title>".encode("latin-1")
            return httpx.Response(
                200, content=body, headers={"content-type": "text/html; charset=iso-8859-1"}
            )
        if request.url.path == "/pdf":
            return httpx.Response(
                200, content=b"<title>not html</title>", headers={"content-type": "application/pdf"}
            )
        if request.url.path == "/untitled":
            return httpx.Response(200, html="<p>no title here</p>")
        return page("gone", status=404)

    results = await check(
        [
            "http://public.example/latin",
            "http://public.example/pdf",
            "http://public.example/untitled",
            "http://public.example/missing",
        ],
        Recorder(handler),
    )
    assert [(r.ok, r.status, r.title, r.error) for r in results] == snapshot(
        [
            (True, 200, "Café crème", None),
            (True, 200, None, None),
            (True, 200, None, None),
            (False, 404, "gone", "HTTP 404"),
        ]
    )


async def test_at_most_64_kb_of_the_body_is_read() -> None:
    sent: list[int] = []

    class Endless:
        """A body that never ends (an iterator, not an async generator: nothing to finalise)."""

        def __aiter__(self) -> Endless:
            return self

        async def __anext__(self) -> bytes:
            sent.append(16 * 1024)
            return b"x" * (16 * 1024)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/late-title":
            body = b"<html>" + b" " * MAX_BODY_BYTES + b"<title>too late</title>"
            return httpx.Response(200, content=body, headers={"content-type": "text/html"})
        return httpx.Response(200, content=Endless(), headers={"content-type": "text/html"})

    late, endless_page = await check(
        ["http://public.example/late-title", "http://public.example/endless"], Recorder(handler)
    )
    assert (late.ok, late.title) == (True, None)
    assert (endless_page.ok, endless_page.title) == (True, None)
    assert sum(sent) <= MAX_BODY_BYTES + 16 * 1024


async def test_redirects_are_followed_and_each_hop_vetted() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        match request.headers["host"], request.url.path:
            case "public.example", "/old":
                return httpx.Response(301, headers={"location": "/new"})
            case "public.example", "/new":
                return httpx.Response(302, headers={"location": "https://other.example/final"})
            case "other.example", "/final":
                return page("Arrived")
            case "public.example", "/to-loopback":
                return httpx.Response(302, headers={"location": "http://127.0.0.1:2583/admin"})
            case "public.example", "/to-intranet":
                return httpx.Response(307, headers={"location": "http://intranet.example/"})
            case "public.example", "/to-metadata":
                return httpx.Response(302, headers={"location": "http://[::ffff:169.254.169.254]/"})
            case "public.example", "/to-file":
                return httpx.Response(302, headers={"location": "file:///etc/passwd"})
        raise AssertionError(f"unexpected request {request.url}")

    recorder = Recorder(handler)
    moved, loopback, intranet, metadata, local_file = await check(
        [
            "http://public.example/old",
            "http://public.example/to-loopback",
            "http://public.example/to-intranet",
            "http://public.example/to-metadata",
            "http://public.example/to-file",
        ],
        recorder,
    )
    assert moved == UrlCheck(
        url="http://public.example/old",
        ok=True,
        status=200,
        final_url="https://other.example/final",
        title="Arrived",
        error=None,
    )
    assert loopback == UrlCheck(
        url="http://public.example/to-loopback",
        ok=False,
        status=302,
        final_url="http://127.0.0.1:2583/admin",
        title=None,
        error="refused: 127.0.0.1 is a loopback address",
    )
    assert (intranet.status, intranet.final_url, intranet.error) == (
        307,
        "http://intranet.example/",
        "refused: 'intranet.example' resolves to 10.1.2.3 is a private address",
    )
    assert metadata.error == "refused: ::ffff:a9fe:a9fe is a link-local address"
    assert local_file.error == "only http and https links are checked, not 'file'"
    # Each refused hop was never asked for: only the public pages were.
    assert sorted(recorder.hosts()) == sorted(
        [
            "public.example/old",
            "public.example/new",
            "other.example/final",
            "public.example/to-loopback",
            "public.example/to-intranet",
            "public.example/to-metadata",
            "public.example/to-file",
        ]
    )


async def test_redirects_stop_after_five() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        hop = int(request.url.path.strip("/"))
        if request.url.params.get("stop") == str(hop):
            return page(f"after {hop}")
        query = f"?{request.url.query.decode()}" if request.url.query else ""
        return httpx.Response(302, headers={"location": f"/{hop + 1}{query}"})

    recorder = Recorder(handler)
    [five] = await check(["http://public.example/0?stop=5"], recorder)
    assert (five.ok, five.title, len(recorder.requests)) == (True, "after 5", 6)

    recorder = Recorder(handler)
    [endless] = await check(["http://public.example/0"], recorder)
    assert endless == UrlCheck(
        url="http://public.example/0",
        ok=False,
        status=302,
        final_url="http://public.example/6",
        title=None,
        error="more than 5 redirects",
    )
    assert len(recorder.requests) == 6


async def test_failures_are_reported_in_order() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/slow":
            await anyio.sleep(5)
        if request.url.path == "/down":
            raise httpx.ConnectError("connection refused", request=request)
        return page("fine")

    results = await check(
        [
            "http://public.example/slow",
            "http://public.example/down",
            "http://127.0.0.1/",
            "http://xn--bcher-kva.example/",
            "http://bücher.example/",
        ],
        Recorder(handler),
        seconds=0.2,
    )
    assert [(r.url, r.ok, r.error) for r in results] == snapshot(
        [
            ("http://public.example/slow", False, "no answer within 0.2 s"),
            ("http://public.example/down", False, "ConnectError: connection refused"),
            ("http://127.0.0.1/", False, "refused: 127.0.0.1 is a loopback address"),
            ("http://xn--bcher-kva.example/", True, None),
            ("http://bücher.example/", True, None),
        ]
    )
    assert await check_urls([]) == []
