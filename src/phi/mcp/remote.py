"""Remote MCP: streamable HTTP with bearer tokens, each token confined to namespace prefixes.

`phi mcp --http --token-file FILE` serves one MCP server per token behind one endpoint; a
request is routed by its `Authorization: Bearer` token to the server confined to that
token's prefix, so a client sees and touches only its own namespaces (the same `Scope`
checks as over stdio) and cannot even resume another token's session. A request with no
token or an unknown one gets 401 before any MCP code runs. This is what makes serving off
loopback acceptable; use TLS in front of it (a reverse proxy) on an untrusted network.

Every row a token's client writes records the token's name as `written_by` (never the
secret). The token file takes two kinds of line (`#` starts a comment):

    PREFIX TOKEN                       # read-write under PREFIX, named PREFIX (the old form)
    NAME TOKEN GRANT [GRANT ...]       # GRANT: rw:PREFIX or ro:PREFIX (`*`: every namespace)

e.g. `alice <token> rw:alice- ro:team-` lets alice write her own namespaces and read the
team's; `ci <token> ro:team-` only reads. A token has at most one `rw:` grant; without one
it is read-only.
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
from phi.memory.model import validate_namespace
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
    prefix: str | None
    """Namespaces the client may use start with this (e.g. `team-a-`); `None`: all."""
    name: str | None = None
    """Recorded as `written_by` on each row the client writes; default: the prefix."""
    read_only: bool = False
    """The client may read under `prefix`, not write."""
    also_read: tuple[str, ...] = ()
    """More prefixes the client may read, not write."""

    @property
    def writer(self) -> str:
        """The label its rows record (`written_by`)."""
        return self.name or self.prefix or "*"


def load_tokens(path: Path) -> list[TokenScope]:
    """Tokens from a file of `PREFIX TOKEN` or `NAME TOKEN GRANT...` lines (module docs).

    Raises `InvalidInput` naming the line for a malformed entry, a short token, a bad
    grant, a token or name given twice, and `InsecureFile` (with the `chmod` that fixes it)
    for a file other users can read: their tokens would be theirs too.
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
        if len(parts) < 2:
            raise InvalidInput(
                f"{where}: expected 'PREFIX TOKEN' or 'NAME TOKEN GRANT...', got {len(parts)}"
                " field(s)"
            )
        token = parts[1]
        if len(token) < MIN_TOKEN_CHARS:
            raise InvalidInput(
                f"{where}: token is {len(token)} characters; use at least {MIN_TOKEN_CHARS} "
                "(e.g. `openssl rand -hex 16`)"
            )
        if any(token == s.token for s in scopes):
            raise InvalidInput(f"{where}: the same token is given twice")
        if len(parts) == 2:
            entry = TokenScope(token=token, prefix=parts[0])
        else:
            entry = _granted(parts[0], token, parts[2:], where=where)
            if any(entry.name == s.name for s in scopes):
                raise InvalidInput(f"{where}: the name {entry.name!r} is given twice")
        scopes.append(entry)
    if not scopes:
        raise InvalidInput(f"token file {str(path)!r} holds no tokens")
    return scopes


def _granted(name: str, token: str, grants: Sequence[str], *, where: str) -> TokenScope:
    """The scope of a `NAME TOKEN GRANT...` line."""
    writes: list[str | None] = []
    reads: list[str | None] = []
    for grant in grants:
        access, sep, prefix = grant.partition(":")
        if not sep or access not in ("rw", "ro"):
            raise InvalidInput(
                f"{where}: grant {grant!r} is not 'rw:PREFIX' or 'ro:PREFIX' (e.g. 'ro:team-')"
            )
        if prefix != "*":
            try:
                validate_namespace(prefix)
            except InvalidInput as exc:
                raise InvalidInput(f"{where}: grant {grant!r}: {exc}") from None
        (writes if access == "rw" else reads).append(None if prefix == "*" else prefix)
    if len(writes) > 1:
        raise InvalidInput(f"{where}: a token has at most one 'rw:' grant, got {len(writes)}")
    if None in (*writes, *reads) and len(grants) > 1:
        raise InvalidInput(f"{where}: a '*' grant covers every namespace; give it alone")
    if writes:
        home, read_only, more = writes[0], False, reads
    else:
        home, read_only, more = reads[0], True, reads[1:]
    return TokenScope(
        token=token,
        prefix=home,
        name=name,
        read_only=read_only,
        also_read=tuple(p for p in more if p is not None),
    )


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
        confined = dataclasses.replace(
            base,
            namespace_prefix=entry.prefix,
            read_only=entry.read_only,
            also_read=entry.also_read,
        )
        server = build_server(memory.as_writer(entry.writer), confined)
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
