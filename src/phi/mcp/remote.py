"""Remote MCP: streamable HTTP with bearer tokens, each token confined to a namespace prefix.

`phi mcp --http --token-file FILE` serves one MCP server per token behind one endpoint; a
request is routed by its `Authorization: Bearer` token to the server confined to that
token's prefix, so a client sees and touches only its own namespaces (the same `Scope`
checks as over stdio) and cannot even resume another token's session. A request with no
token or an unknown one gets 401 before any MCP code runs. This is what makes serving off
loopback acceptable; use TLS in front of it (a reverse proxy) on an untrusted network.
"""

from __future__ import annotations

import dataclasses
import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from phi.errors import InvalidInput
from phi.mcp.server import McpOptions, build_server
from phi.memory import Memory
from phi.private import check_secret_file

__all__ = ["TokenScope", "build_remote_app", "load_tokens"]

MIN_TOKEN_CHARS: Final = 24
"""Long enough that guessing is hopeless (`openssl rand -hex 16` gives 32)."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True, kw_only=True)
class TokenScope:
    """One client's bearer token and the namespaces it may use."""

    token: str = dataclasses.field(repr=False)
    """The secret the client sends as `Authorization: Bearer <token>`."""
    prefix: str
    """Namespaces the client may use start with this (e.g. `team-a-`)."""


def load_tokens(path: Path) -> list[TokenScope]:
    """Tokens from a file of `PREFIX TOKEN` lines (`#` starts a comment).

    Raises `InvalidInput` naming the line for a malformed entry, a short token, an empty
    prefix or a token given twice, and `InsecureFile` (with the `chmod` that fixes it) for
    a file other users can read: their tokens would be theirs too.
    """
    try:
        text = check_secret_file(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read token file {str(path)!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"token file {str(path)!r} is not UTF-8 text (byte {exc.start}); write it as "
            "'PREFIX TOKEN' lines, e.g. with `openssl rand -hex 16`"
        ) from None
    scopes: list[TokenScope] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.partition("#")[0].strip()
        if not line:
            continue
        parts = line.split()
        where = f"{path}:{number}"
        if len(parts) != 2:
            raise InvalidInput(f"{where}: expected 'PREFIX TOKEN', got {len(parts)} fields")
        prefix, token = parts
        if len(token) < MIN_TOKEN_CHARS:
            raise InvalidInput(
                f"{where}: token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                "(e.g. `openssl rand -hex 16`)"
            )
        if any(token == s.token for s in scopes):
            raise InvalidInput(f"{where}: the same token is given twice")
        scopes.append(TokenScope(token=token, prefix=prefix))
    if not scopes:
        raise InvalidInput(f"token file {str(path)!r} holds no tokens")
    return scopes


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="phi-memory"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _bearer(scope: Scope) -> bytes | None:
    """The bearer token's bytes as sent (a header is bytes; no decoding can mangle them)."""
    for name, value in scope["headers"]:
        if name.lower() == b"authorization":
            kind, _, token = bytes(value).partition(b" ")
            return token.strip() if kind.lower() == b"bearer" else None
    return None


def build_remote_app(
    memory: Memory,
    tokens: Sequence[TokenScope],
    options: McpOptions | None = None,
    *,
    host: str = "127.0.0.1",
) -> AsgiApp:
    """An ASGI app serving `memory` at `/mcp` to the holders of `tokens`.

    Each token gets its own MCP server confined to its prefix (`options` gives the rest).
    """
    base = options or McpOptions()
    routes: list[tuple[bytes, AsgiApp]] = []
    servers = []
    for entry in tokens:
        server = build_server(memory, dataclasses.replace(base, namespace_prefix=entry.prefix))
        routes.append((entry.token.encode(), server.streamable_http_app(host=host)))
        servers.append(server)

    async def lifespan(receive: Receive, send: Send) -> None:
        async with AsyncExitStack() as stack:
            await receive()  # lifespan.startup
            for server in servers:
                await stack.enter_async_context(server.session_manager.run())
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        given = _bearer(scope)
        if given is None:
            await _refuse(send, 401, "missing bearer token (Authorization: Bearer <token>)")
            return
        # Compare against every token in constant time, so timing says nothing about them;
        # `compare_digest` is exact (a longer or shorter token is another token).
        matched = [inner for token, inner in routes if hmac.compare_digest(token, given)]
        if not matched:
            await _refuse(send, 401, "unknown bearer token")
            return
        await matched[0](scope, receive, send)

    return app
