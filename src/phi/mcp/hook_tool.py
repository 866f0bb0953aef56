"""The `capture_event` tool: a host's hook event, captured on the server as `phi capture` would.

A team's laptops send their spooled hook events here (`phi.capture.remote_sink`) instead of
writing the store: the server applies each one with the same code as a local drain
(`phi.capture.hooks.apply_event`), in the namespace the client named (checked against its
token), under the event id the client's spool gave it, so an event delivered twice is one
event. The client's transcript file is not readable here: the client sends the part that
matters, and a `transcript_path` in the payload is never opened on the server (it would let
a client read the server's own files).

A bad event comes back as a tool error (the client sets it aside); a store that cannot take
it now comes back as a protocol error (the client keeps it queued and tries later).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated, Any, Final

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from pydantic import Field

from phi.errors import EmbedderMismatch, InvalidInput, PhiError, StoreError
from phi.mcp._scope import Scope
from phi.memory import Memory
from phi.private import write_private

__all__ = ["MAX_TRANSCRIPT_CHARS", "add_hook_tool"]

MAX_TRANSCRIPT_CHARS: Final = 2_000_000
"""The most transcript one event may carry (the client sends the tail of a longer one)."""


def _with_transcript(payload: str, local: Path | None) -> str:
    """`payload` with every transcript path it names (`transcript_path`, a subagent's
    `agent_transcript_path`...) pointing at `local`, the copy the client sent, or removed."""
    try:
        fields = json.loads(payload)
    except ValueError:
        return payload  # `parse_event` says what is wrong with it
    if not isinstance(fields, dict):
        return payload
    for key in [k for k in fields if k.endswith("transcript_path")]:
        del fields[key]
        if local is not None:
            fields[key] = str(local)
    return json.dumps(fields)


async def capture_event(
    memory: Memory,
    scope: Scope,
    *,
    default_namespace: str,
    payload: str,
    event: str,
    namespace: str | None,
    transcript: str,
) -> dict[str, Any]:
    """Apply one hook event under `scope`: what the `capture_event` tool does.

    A function of its own, not the tool's body, so that it is what a reader (and mutmut,
    which leaves decorated functions alone) sees whole.
    """
    from phi.capture.hooks import apply_event, parse_event

    try:
        # The laptop names its project's namespace without knowing its token's prefix:
        # one outside what the token may read is put under it, as `capture`'s default is.
        target = scope.check_write(scope.place(namespace or default_namespace))
        if len(transcript) > MAX_TRANSCRIPT_CHARS:
            raise InvalidInput(
                f"transcript of {len(transcript)} characters is over {MAX_TRANSCRIPT_CHARS};"
                " send its last lines"
            )
        with tempfile.TemporaryDirectory(prefix="phi-transcript-") as folder:
            local: Path | None = None
            if transcript:
                local = write_private(Path(folder) / "transcript.jsonl", transcript)
            parsed = parse_event(_with_transcript(payload, local))
            outcome = await apply_event(memory, parsed, namespace=target, event_id=event)
    except (StoreError, EmbedderMismatch) as exc:
        # The store cannot take it now, not a bad event: a protocol error, so the client
        # keeps the event queued and tries again (a tool error would set it aside).
        raise MCPError(code=INTERNAL_ERROR, message=f"try again later: {exc}") from None
    except PhiError as exc:
        raise ToolError(str(exc)) from None
    return {"event": outcome.event, "row_ids": [row.row_id for row in outcome.rows]}


def add_hook_tool(
    server: MCPServer, memory: Memory, scope: Scope, *, default_namespace: str
) -> None:
    """Register `capture_event` on `server`."""

    @server.tool(name="capture_event")
    async def capture_event_tool(
        payload: Annotated[str, Field(description="The hook event as the host wrote it (JSON).")],
        event: Annotated[str, Field(description="The event's id: sent twice, stored once.")],
        namespace: Annotated[str | None, Field(description="Default: the server's.")] = None,
        # `str`, not `str | None`: the SDK parses a string that reads as JSON into an object
        # for an optional argument, and a one-line transcript does.
        transcript: Annotated[
            str, Field(description="The session transcript's last lines (JSON lines), if any.")
        ] = "",
    ) -> dict[str, Any]:
        """Capture one agent-host hook event (Claude Code's format) as `phi capture` does."""
        return await capture_event(
            memory,
            scope,
            default_namespace=default_namespace,
            payload=payload,
            event=event,
            namespace=namespace,
            transcript=transcript,
        )
