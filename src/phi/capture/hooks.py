"""Agent-host hook events (Claude Code's hooks format) turned into captured memory.

A host runs `phi capture` at each hook and writes the event as JSON on stdin. Each event
becomes one `capture` call (`phi.mcp.capture`, the same path as the MCP tool): a prompt is
a user `turn`, a `PreToolUse` is the agent's `decision`, a `PostToolUse` is its
`tool_result`, `error` or `file_change`, and `Stop` is the assistant's last message read
from the transcript. A result is linked to the decision that caused it, and a decision to
the prompt that led to it, by `causal` edges, so "why did we do X" finds both ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from phi.capture.events import HookName, is_blank
from phi.errors import InvalidInput

if TYPE_CHECKING:
    from phi.memory import Memory, Row

__all__ = ["HookEvent", "HookOutcome", "apply_event", "parse_event"]


MAX_EVENT_CHARS: Final = 4000
"""What one tool input or output keeps: a whole build log would cost seconds to embed and
drown the decision it belongs to; the head and tail say what happened."""
_LOOKBACK: Final = 200
"""How many recent rows of the namespace are searched for a result's decision."""
_FILE_TOOLS: Final = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})


class HookEvent(BaseModel):
    """One hook payload as the host sends it (unknown fields are kept, not refused: hosts
    add fields between versions)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    hook_event_name: HookName
    session_id: str
    cwd: str | None = None
    transcript_path: str | None = None
    source: str | None = None
    prompt: str | None = None
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_response: Any = None
    tool_use_id: str | None = None
    error: str | None = None

    @field_validator("session_id")
    @classmethod
    def _session_named(cls, value: str) -> str:
        if is_blank(value):
            raise ValueError("blank session id")
        return value


def parse_event(text: str) -> HookEvent:
    """The hook event in `text` (one JSON object), or `InvalidInput` naming what is wrong."""
    try:
        return HookEvent.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "payload"
        raise InvalidInput(f"hook event refused: {where}: {first['msg']}") from None


@dataclass(frozen=True, kw_only=True)
class HookOutcome:
    """What one event stored."""

    event: HookName
    rows: tuple[Row, ...] = ()
    """The rows written (none for events that carry nothing to remember)."""
    caused_by: str | None = None
    """The row a `causal` edge now links to the first of `rows`."""


def _clip(text: str, limit: int = MAX_EVENT_CHARS) -> str:
    # A tool's output may be binary (a NUL in `cat` of a file): no store keeps a NUL, and
    # memory refuses it, so it becomes U+FFFD here rather than costing the whole event.
    text = text.replace("\x00", "\ufffd")
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        # Bash results: what the command printed matters, not the flags around it.
        parts = [str(value[k]) for k in ("stdout", "stderr", "content", "output") if value.get(k)]
        if parts:
            return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _decision_text(event: HookEvent) -> str:
    args = event.tool_input or {}
    tool = event.tool_name or "tool"
    if isinstance(args.get("command"), str):
        why = f" ({args['description']})" if isinstance(args.get("description"), str) else ""
        return f"run {tool}{why}: {args['command']}"
    if isinstance(args.get("file_path"), str):
        change = args.get("new_string", args.get("content"))
        what = f": {_clip(change, 300)}" if isinstance(change, str) and change.strip() else ""
        return f"{tool} {args['file_path']}{what}"
    return f"call {tool} with {json.dumps(args, ensure_ascii=False, sort_keys=True)}"


def _failed(event: HookEvent) -> bool:
    if event.hook_event_name == "PostToolUseFailure" or event.error:
        return True
    response = event.tool_response
    if isinstance(response, dict):
        if response.get("is_error") or response.get("error") or response.get("interrupted"):
            return True
        code = response.get("exit_code", response.get("returnCode"))
        return isinstance(code, int) and code != 0
    return False


def _last_assistant_text(transcript: str | None) -> str | None:
    """The text of the last assistant message in a Claude Code transcript (JSON lines)."""
    if not transcript:
        return None
    path = Path(transcript).expanduser()
    if not path.is_file():
        return None
    last: str | None = None
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a host may be mid-write on the last line
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = [
                c["text"]
                for c in content
                if isinstance(c, dict)
                and c.get("type") == "text"
                and isinstance(c.get("text"), str)
            ]
        else:
            texts = []
        if any(t.strip() for t in texts):
            last = "\n".join(t for t in texts if t.strip())
    return last


async def apply_event(
    memory: Memory, event: HookEvent, *, namespace: str, event_id: str | None = None
) -> HookOutcome:
    """Store what `event` carries in `namespace` and link it to its cause.

    `event_id` (the spool's id for this event) goes into the rows' source, so storing the
    same event again makes no duplicate; without it the event is new each time.
    """
    # The MCP package is heavy; a hook that only queues never imports it.
    from phi.mcp.capture import capture, latest_in_session

    name = event.hook_event_name
    session = event.session_id
    if name == "UserPromptSubmit" and event.prompt and event.prompt.strip():
        done = await capture(
            memory,
            namespace=namespace,
            session=session,
            event=event_id,
            kind="turn",
            content=_clip(event.prompt),
            speaker="user",
        )
        return HookOutcome(event=name, rows=done.rows)
    if name == "PreToolUse" and event.tool_name:
        cause = await latest_in_session(memory, namespace=namespace, session=session, kind="turn")
        done = await capture(
            memory,
            namespace=namespace,
            session=session,
            event=event_id,
            kind="decision",
            content=_clip(_decision_text(event)),
            tool=event.tool_name,
            extra_meta={"tool_use_id": event.tool_use_id} if event.tool_use_id else None,
            caused_by=cause.row_id if cause else None,
        )
        return HookOutcome(event=name, rows=done.rows, caused_by=done.caused_by)
    if name in ("PostToolUse", "PostToolUseFailure") and event.tool_name:
        # The decision with the same tool_use_id: parallel tool calls interleave. Without
        # one (or with one no decision has), `capture` links the session's latest decision.
        cause = await latest_in_session(
            memory, namespace=namespace, session=session, tool_use_id=event.tool_use_id
        )
        path = (event.tool_input or {}).get("file_path")
        failed = _failed(event)
        body = _as_text(event.error) if event.error else _as_text(event.tool_response)
        if event.tool_name in _FILE_TOOLS and isinstance(path, str) and not failed:
            kind: Literal["file_change", "tool_result", "error"] = "file_change"
            body = _as_text({k: v for k, v in (event.tool_input or {}).items() if k != "file_path"})
        else:
            kind = "error" if failed else "tool_result"
        done = await capture(
            memory,
            namespace=namespace,
            session=session,
            event=event_id,
            kind=kind,
            content=_clip(body.strip() or "(no output)"),
            tool=event.tool_name,
            path=path if isinstance(path, str) else None,
            extra_meta={"tool_use_id": event.tool_use_id} if event.tool_use_id else None,
            caused_by=cause.row_id if cause else None,
        )
        return HookOutcome(event=name, rows=done.rows, caused_by=done.caused_by)
    if name in ("Stop", "SubagentStop"):
        text = _last_assistant_text(event.transcript_path)
        if text:
            done = await capture(
                memory,
                namespace=namespace,
                session=session,
                event=event_id,
                kind="turn",
                content=_clip(text),
                speaker="assistant",
                by_agent=True,
            )
            return HookOutcome(event=name, rows=done.rows)
    return HookOutcome(event=name)
