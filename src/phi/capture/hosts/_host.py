"""What phi needs to know about one coding-agent host's hooks."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from phi.capture._check import _parse
from phi.errors import InvalidInput

__all__ = ["Host", "normalize_event"]

Event = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class Host:
    """One host: how its hook events become Claude Code's, and how it reads an answer."""

    name: str
    """The `--host` value (`claude-code`, `gemini-cli`, `copilot-cli`)."""
    normalize: Callable[[Mapping[str, Any]], Event] | None
    """The host's event in Claude Code's shape (`session_id`, `cwd`, `hook_event_name`,
    `prompt`, `tool_name`, `tool_input`, `tool_response`, `error`, `tool_use_id`,
    `transcript_path`, `last_assistant_message`); `None` when it already is. Raises
    `InvalidInput` naming what is wrong."""
    context_output: Callable[[str, str], str | None]
    """What to print for context `text` at the (normalized) event `name`, in the host's
    format; `None` when the host takes no context there."""
    non_blocking_exits: frozenset[int]
    """Exit codes the host never reads as "stop this" (the hook uses only these)."""


def normalize_event(host: Host, payload: str) -> str:
    """`payload` (one event as the host sent it) as a Claude Code hook event.

    The same checks as `check_event` come first (size is checked when read), so an event
    a host sends is refused with the same one-line reasons whichever host sent it.
    """
    if host.normalize is None:
        return payload
    if not payload.strip():
        raise InvalidInput("hook event is empty; the host sends one JSON object on stdin")
    event = _parse(payload)
    if not isinstance(event, dict):
        raise InvalidInput(f"hook event must be a JSON object, not {type(event).__name__}")
    return json.dumps(host.normalize(event), ensure_ascii=False)


CLAUDE_CODE: Final = Host(
    name="claude-code",
    normalize=None,
    context_output=lambda _name, text: text,
    # https://code.claude.com/docs/en/hooks: exit 2 blocks (a tool call, a prompt, a stop).
    non_blocking_exits=frozenset({0, 1}),
)
