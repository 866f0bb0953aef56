"""Team capture: the spool's events delivered to a `phi mcp --http` server, not the store.

With `PHI_CAPTURE_URL` set, a laptop's drainer sends each queued event, in order, to the
server's `capture_event` tool (the official MCP client over streamable HTTP, with the
bearer token of `PHI_CAPTURE_TOKEN` or `PHI_CAPTURE_TOKEN_FILE`), instead of opening a store:
the laptop needs no database URL and holds only a token that may write its own namespaces.

Each event goes with the id the spool gave it, and the server stores it under
`capture://<session>/<event>`, so an event delivered twice (a drainer killed after the
server stored it, before the offset moved) is stored once. While the server cannot be
reached, or its store cannot take the event now, the drain stops there: the event and all
after it stay queued for the next drain, in order. An event the server refuses (a bad
event, a namespace the token may only read) is set aside in the spool's rejects file.

The session's transcript is a file on the laptop: the part a hook reads from it (its last
`TRANSCRIPT_TAIL_BYTES`, whole lines, redacted here first) travels with the event.

Who drains: a detached drainer (`--no-recall`, `phi capture`), a hook run with `--wait`, and
the resident process (`python -m phi.capture`, recall on) all deliver here when the hook
names no `--db`; the resident reads the settings at each drain, as a drainer does. What is
not served from the server yet: the answers. A prompt's memories and the session-start
preload come from the resident's store, the laptop's own, which team capture leaves empty,
so in team mode those hooks print nothing; serving them needs a server tool that runs
`phi.capture.recall`'s `prompt_context` / `session_context` under the token's read scope.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from phi.capture.spool import Spool, SpoolEntry
from phi.config import SettingsError
from phi.errors import InvalidInput
from phi.private import check_secret_file
from phi.redact import redact

if TYPE_CHECKING:
    from mcp import Client
    from phi.config import Settings

__all__ = ["TRANSCRIPT_TAIL_BYTES", "RemoteTarget", "configured_target", "drain_remote"]

TRANSCRIPT_TAIL_BYTES: Final = 1_000_000
"""How much of a transcript goes with an event: the end of a session's transcript holds
what its latest hook reads; a long session's whole file would be sent again at every stop."""
TOOL: Final = "capture_event"
"""The server's tool (`phi.mcp.hook_tool`)."""
READ_TIMEOUT_S: Final = 120.0
"""How long one event may take on the server (embedding on a busy machine)."""


@dataclass(frozen=True, kw_only=True)
class RemoteTarget:
    """Where a laptop's capture goes instead of a store."""

    url: str
    """The server's MCP endpoint (`https://host/mcp`)."""
    token: str = field(repr=False)
    """The bearer token; never printed."""

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteTarget | None:
        """The target `settings` name (`capture_url` and a token), or `None` for local capture.

        Raises:
            SettingsError: a URL without a token, a token without a URL, or an unreadable
                or world-readable token file.
        """
        token = settings.capture_token.get_secret_value() if settings.capture_token else None
        if settings.capture_token_file is not None:
            if token is not None:
                raise SettingsError(
                    "both PHI_CAPTURE_TOKEN and PHI_CAPTURE_TOKEN_FILE are set; keep one"
                )
            token = _read_token(settings.capture_token_file)
        if settings.capture_url is None:
            if token is not None:
                raise SettingsError(
                    "a capture token is set but PHI_CAPTURE_URL is not; set the server's"
                    " endpoint (e.g. https://memory.example/mcp) or remove the token"
                )
            return None
        if not settings.capture_url.startswith(("http://", "https://")):
            raise SettingsError(
                f"PHI_CAPTURE_URL {settings.capture_url!r} is not an http(s) URL; give the"
                " server's endpoint, e.g. https://memory.example/mcp"
            )
        if not token:
            raise SettingsError(
                "PHI_CAPTURE_URL is set without a token; set PHI_CAPTURE_TOKEN or"
                " PHI_CAPTURE_TOKEN_FILE (a 0600 file holding the token)"
            )
        return cls(url=settings.capture_url, token=token)


def configured_target() -> RemoteTarget | None:
    """The target of the configured settings (`PHI_CAPTURE_URL`...), if capture is remote."""
    from phi.config import load_settings

    return RemoteTarget.from_settings(load_settings())


def _read_token(path: Path) -> str:
    try:
        token = check_secret_file(path.expanduser()).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read PHI_CAPTURE_TOKEN_FILE {str(path)!r}: {exc}") from None
    if not token or len(token.split()) != 1:
        raise SettingsError(
            f"PHI_CAPTURE_TOKEN_FILE {str(path)!r} must hold the token alone on one line"
        )
    return token


@asynccontextmanager
async def _client(target: RemoteTarget) -> AsyncIterator[Client]:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from mcp import Client

    headers = {"Authorization": f"Bearer {target.token}"}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(target.url, http_client=http)
        async with Client(transport, read_timeout_seconds=READ_TIMEOUT_S) as client:
            yield client


def transcript_tail(payload: str) -> str | None:
    """The last whole lines of the transcript the event names (at most
    `TRANSCRIPT_TAIL_BYTES`), redacted; `None` when it names none this laptop can read."""
    try:
        fields = json.loads(payload)
        # A subagent's own transcript is what its stop reads (`phi.capture.hooks`).
        named = fields.get("agent_transcript_path") or fields.get("transcript_path")
    except (ValueError, AttributeError):
        return None
    if not isinstance(named, str) or not named:
        return None
    path = Path(named).expanduser()
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(max(0, size - TRANSCRIPT_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return None  # gone or unreadable: the event is stored without it, as locally
    if size > TRANSCRIPT_TAIL_BYTES:
        data = data.partition(b"\n")[2]  # the first line is cut: it starts mid-record
    return redact(data.decode("utf-8", errors="replace"))


def _arguments(entry: SpoolEntry) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "payload": entry.payload,
        "event": entry.event,
        "namespace": entry.namespace,
    }
    tail = transcript_tail(entry.payload)
    if tail:
        arguments["transcript"] = tail
    return arguments


async def drain_remote(spool: Spool, target: RemoteTarget, *, err: TextIO) -> int:
    """Deliver `spool`'s queued events to `target` in order (call inside `spool.draining`);
    returns how many were stored. Never raises for an unreachable server: the events wait."""
    import httpx2
    from mcp.shared.exceptions import MCPError

    async def send(client: Client, entry: SpoolEntry) -> bool:
        try:
            done = await client.call_tool(TOOL, _arguments(entry))
        except MCPError as exc:  # the server's store is busy, or the session broke
            print(f"phi capture: {spool.pending()} event(s) queued for later: {exc}", file=err)
            return False
        if done.is_error:
            text = " ".join(getattr(part, "text", "") for part in done.content)
            text = text.removeprefix(f"Error executing tool {TOOL}: ")  # the SDK's, not ours
            # A UserError: the spool sets the event aside, so it cannot hold back the rest.
            raise InvalidInput(f"the server refused the event: {text}")
        return True

    unreachable: tuple[type[Exception], ...] = (httpx2.HTTPError, OSError, MCPError)
    stored = 0

    async def send_counted(client: Client, entry: SpoolEntry) -> bool:
        nonlocal stored
        sent = await send(client, entry)
        stored += sent
        return sent

    try:
        async with _client(target) as client:
            await spool.drain(lambda entry: send_counted(client, entry), err=err)
    except* unreachable as group:
        reason: BaseException = group
        while isinstance(reason, BaseExceptionGroup):  # the SDK's task groups nest them
            reason = reason.exceptions[0]
        print(
            f"phi capture: {spool.pending()} event(s) queued for later: cannot reach"
            f" {target.url}: {type(reason).__name__}: {reason}",
            file=err,
        )
    return stored
