"""Checking links before phi shares them, without becoming a way into private networks.

A link phi is asked to check may point anywhere, the machine's own services and the cloud's
metadata address (`169.254.169.254`) included. So every address is vetted before a request
goes out: only `http` and `https`, and only hosts that are, and resolve only to, public
addresses (IPv4 and IPv6; IPv4-mapped, 6to4 and NAT64 forms are unwrapped, and numeric
shorthands such as `127.1` or `0x7f000001` are read as the addresses they are). Redirects
are followed by hand, vetting each hop the same way. The request then goes to the address
that was vetted (the name stays in `Host` and in TLS), so a name cannot resolve to a public
address for the check and a private one for the connection.
"""

from __future__ import annotations

import codecs
import html
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
import httpx

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_REDIRECTS",
    "Resolver",
    "UrlCheck",
    "check_urls",
]

MAX_REDIRECTS = 5
"""Redirects followed before giving up."""

MAX_BODY_BYTES = 64 * 1024
"""At most this much of a page is read, to find its `<title>`."""

MAX_PARALLEL = 4
"""URLs checked at the same time."""

Resolver = Callable[[str], Awaitable[list[str]]]
"""Turns a host name into its IP addresses (as strings)."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_REDIRECTS = {301, 302, 303, 307, 308}
_NUMERIC_V4 = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$", re.IGNORECASE)
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_HEADERS = {"User-Agent": "phi-link-check/1.0", "Accept": "text/html,*/*;q=0.5"}


@dataclass(frozen=True, kw_only=True)
class UrlCheck:
    """What checking one URL found."""

    url: str
    """The URL as given."""
    ok: bool
    """Whether it answered with a 2xx status, after redirects."""
    status: int | None
    """The last HTTP status received; None when no answer came (refused, unreachable)."""
    final_url: str
    """The last address reached or refused (the URL itself without redirects)."""
    title: str | None
    """The page's `<title>`, when it is HTML and has one in its first 64 KB."""
    error: str | None
    """Why it is not ok: a refused address, `HTTP 404`, a network failure; None when ok."""


async def _getaddrinfo(host: str) -> list[str]:
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def _literal_ip(host: str) -> IPAddress | None:
    """The address a host names by itself: `::1`, `10.0.0.1`, and `127.1`, `0x7f.1`, ...

    Resolvers read numeric shorthands (`127.1`, `2130706433`, `0177.0.0.1`) as IPv4
    addresses, so they are addresses here too, not names to look up.
    """
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if _NUMERIC_V4.match(host):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


def _unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv6 one that carries it (mapped, 6to4, NAT64)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def _address_problem(ip: IPAddress) -> str | None:
    """Why connecting to `ip` is refused, or None for a public address."""
    inner = _unwrap(ip)
    kinds = [
        ("an unspecified", inner.is_unspecified),
        ("a loopback", inner.is_loopback),
        ("a link-local", inner.is_link_local),
        ("a multicast", inner.is_multicast),
        ("a reserved", inner.is_reserved),
        ("a private", inner.is_private),
        ("a non-public", not inner.is_global),  # e.g. 100.64.0.0/10, shared by carriers
    ]
    for kind, applies in kinds:
        if applies:
            return f"{ip} is {kind} address"
    return None


async def _vet(url: httpx.URL, resolve: Resolver) -> tuple[str | None, IPAddress | None]:
    """`(refusal, address)`: why `url` may not be fetched, or the vetted address to use."""
    if not url.scheme:
        return "the URL has no scheme (write it with http:// or https://)", None
    if url.scheme not in ("http", "https"):
        return f"only http and https links are checked, not {url.scheme!r}", None
    host = url.raw_host.decode("ascii").rstrip(".").lower()
    if not host:
        return "the URL has no host", None
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host!r} is this machine", None
    literal = _literal_ip(host)
    if literal is not None:
        problem = _address_problem(literal)
        return (f"refused: {problem}", None) if problem else (None, literal)
    try:
        found = await resolve(host)
    except OSError as exc:
        return f"could not resolve {host!r} ({exc})", None
    addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
    if not addresses:
        return f"{host!r} has no address", None
    for address in addresses:
        problem = _address_problem(address)
        if problem:
            return f"refused: {host!r} resolves to {problem}", None
    return None, addresses[0]


def _title(body: bytes, charset: str | None) -> str | None:
    found = _TITLE.search(body)
    if found is None:
        return None
    try:
        encoding = codecs.lookup(charset or "utf-8").name
    except LookupError:  # a charset Python does not know: read it as UTF-8
        encoding = "utf-8"
    text = " ".join(html.unescape(found.group(1).decode(encoding, errors="replace")).split())
    return text[:300] or None


async def _read_head(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) >= MAX_BODY_BYTES:
            break
    return bytes(body[:MAX_BODY_BYTES])


def _pinned(client: httpx.AsyncClient, url: httpx.URL, address: IPAddress) -> httpx.Request:
    """A GET of `url` sent to `address`, with the name kept for `Host` and TLS."""
    return client.build_request(
        "GET",
        url.copy_with(host=str(address)),
        headers={**_HEADERS, "Host": url.netloc.decode("ascii")},
        extensions={"sni_hostname": url.raw_host.decode("ascii")},
    )


async def _check_one(url: str, client: httpx.AsyncClient, resolve: Resolver) -> UrlCheck:
    try:
        current = httpx.URL(url)
    except httpx.InvalidURL as exc:
        return UrlCheck(
            url=url, ok=False, status=None, final_url=url, title=None, error=f"invalid URL ({exc})"
        )
    status: int | None = None
    for _hop in range(MAX_REDIRECTS + 1):
        refusal, address = await _vet(current, resolve)
        if refusal is not None or address is None:
            return UrlCheck(
                url=url, ok=False, status=status, final_url=str(current), title=None, error=refusal
            )
        request = _pinned(client, current, address)
        response = await client.send(request, stream=True, follow_redirects=False)
        try:
            status = response.status_code
            location = response.headers.get("location")
            if status in _REDIRECTS and location:
                current = current.join(location)
                continue
            content_type = response.headers.get("content-type", "text/html").lower()
            title = (
                _title(await _read_head(response), response.charset_encoding)
                if content_type.startswith(_HTML_TYPES)
                else None
            )
        finally:
            await response.aclose()
        ok = response.is_success
        return UrlCheck(
            url=url,
            ok=ok,
            status=status,
            final_url=str(current),
            title=title,
            error=None if ok else f"HTTP {status}",
        )
    return UrlCheck(
        url=url,
        ok=False,
        status=status,
        final_url=str(current),
        title=None,
        error=f"more than {MAX_REDIRECTS} redirects",
    )


async def _check_bounded(
    url: str, client: httpx.AsyncClient, resolve: Resolver, seconds: float
) -> UrlCheck:
    try:
        with anyio.fail_after(seconds):
            return await _check_one(url, client, resolve)
    except TimeoutError:
        error = f"no answer within {seconds:g} s"
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return UrlCheck(url=url, ok=False, status=None, final_url=url, title=None, error=error)


async def check_urls(
    urls: Sequence[str],
    *,
    client: httpx.AsyncClient | None = None,
    resolve: Resolver | None = None,
    timeout: float = 10,  # noqa: ASYNC109 - a limit per URL, which a caller's scope cannot set
) -> list[UrlCheck]:
    """Check that links work: status, final address after redirects, and page title.

    Nothing is sent to a refused address: a non-http(s) scheme, `localhost`, or a host
    that is or resolves to a private, loopback, link-local, multicast, reserved,
    unspecified or otherwise non-public address. Each redirect hop (at most 5) is vetted
    the same way. Failures are reported in the result, never raised.

    Args:
        urls: The links, checked a few at a time; results come back in the same order.
        client: The HTTP client to use (tests pass one with a mock transport); by default a
            new one without proxies, closed afterwards. Requests go to the vetted IP
            address, so it must connect directly, not through a proxy.
        resolve: Host name to IP addresses; by default `anyio.getaddrinfo`.
        timeout: Seconds allowed for each URL, redirects and reading included.

    Returns:
        One `UrlCheck` per URL.
    """
    lookup = resolve or _getaddrinfo
    results: list[UrlCheck | None] = [None] * len(urls)
    limiter = anyio.CapacityLimiter(MAX_PARALLEL)

    async def run(index: int, url: str, http: httpx.AsyncClient) -> None:
        async with limiter:
            results[index] = await _check_bounded(url, http, lookup, timeout)

    async def run_all(http: httpx.AsyncClient) -> None:
        async with anyio.create_task_group() as group:
            for index, url in enumerate(urls):
                group.start_soon(run, index, url, http)

    if client is not None:
        await run_all(client)
    else:
        async with httpx.AsyncClient(
            timeout=timeout, follow_redirects=False, trust_env=False
        ) as http:
            await run_all(http)
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]
