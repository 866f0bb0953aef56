"""Which `Host` names phi's HTTP servers answer: loopback names unless told otherwise.

A server that answers any `Host` can be reached through DNS rebinding: a web page on
`attacker.example` re-points its name at 127.0.0.1 and reads the API from the visitor's
browser. Refusing unknown names closes that, whatever address the server binds. Both the
web app (`phi web`) and the control API of `phi run` pass requests through `TrustedHosts`,
so this leaf module (it imports nothing from phi) sits below both.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK_HOSTS", "TrustedHosts", "host_name", "is_loopback"]

LOOPBACK_HOSTS: Final[tuple[str, ...]] = ("localhost", "127.0.0.1", "::1")
"""The names a loopback-only server is reached by."""

ANY_HOST: Final = "*"


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name in a `Host` header, without its port, lower case (`[::1]:80` -> `::1`)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class TrustedHosts:
    """ASGI middleware: answer only requests whose `Host` is one of `hosts` (`*`: any);
    `advice` ends the refusal, saying how to trust another name."""

    def __init__(
        self, app: ASGIApp, *, hosts: Iterable[str], advice: str = "start it with --trusted-host"
    ) -> None:
        self.app = app
        self.hosts = frozenset(host_name(h) for h in hosts)
        self.advice = advice

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or ANY_HOST in self.hosts:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        raw = headers.get(b"host", b"").decode("latin-1")
        if host_name(raw) in self.hosts:
            await self.app(scope, receive, send)
            return
        detail = (
            f"host {host_name(raw)!r} is not trusted by this server; reach it by one of "
            f"{sorted(self.hosts)!r}, or {self.advice}"
        )
        body = json.dumps({"detail": detail}).encode()
        answer = "http.response"
        if scope["type"] == "websocket":
            # A handshake is refused with HTTP only through the extension for it (uvicorn
            # offers it); `http.response.*` on a websocket is a server error, not a refusal.
            if "websocket.http.response" not in (scope.get("extensions") or {}):
                await send({"type": "websocket.close", "code": 1008})  # policy violation
                return
            answer = "websocket.http.response"
        await send(
            {
                "type": f"{answer}.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": f"{answer}.body", "body": body})
