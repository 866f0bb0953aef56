"""Coding-agent hosts: each host's hook events as the Claude Code events `phi.capture`
stores, and phi's context printed the way the host reads it.

`python -m phi.capture --host NAME` picks one (default `claude-code`). Each host's module
says where its format was verified. Hosts without hooks use the MCP server (`phi mcp`).
Only the standard library is imported here: a hook runs on every tool call.
"""

from __future__ import annotations

from typing import Final

from phi.capture.hosts._host import CLAUDE_CODE, Host, normalize_event
from phi.capture.hosts.copilot_cli import COPILOT_CLI
from phi.capture.hosts.gemini_cli import GEMINI_CLI
from phi.errors import InvalidInput

__all__ = [
    "CLAUDE_CODE",
    "COPILOT_CLI",
    "GEMINI_CLI",
    "HOSTS",
    "Host",
    "host_named",
    "normalize_event",
]

HOSTS: Final = {host.name: host for host in (CLAUDE_CODE, GEMINI_CLI, COPILOT_CLI)}


def host_named(name: str) -> Host:
    """The host called `name`, or `InvalidInput` listing the known ones."""
    try:
        return HOSTS[name]
    except KeyError:
        raise InvalidInput(f"unknown host {name!r}; expected one of {', '.join(HOSTS)}") from None
