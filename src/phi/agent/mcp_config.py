"""The `PHI_MCP_SERVERS` file: which external MCP servers phi mounts, and how to reach them.

A TOML (`[[servers]]` tables) or JSON (`{"servers": [...]}`) file; each server is a stdio
`command` or an HTTP `url`, with a tool-name `prefix` and optional `headers`. Validated here
(pydantic, at the boundary) so a typo is one clear error at startup, not a failing run.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from phi.errors import UserError

__all__ = ["McpConfigError", "McpServerConfig", "load_mcp_servers"]


class McpConfigError(UserError):
    """The `PHI_MCP_SERVERS` file is missing or malformed."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"MCP servers file {str(path)!r}: {reason}")


class McpServerConfig(BaseModel):
    """One external MCP server, as written in the `PHI_MCP_SERVERS` file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    """What the server is called in reports."""
    command: list[str] | None = None
    """A stdio server: the program and its arguments."""
    url: str | None = None
    """An HTTP server: its streamable HTTP endpoint (e.g. `http://127.0.0.1:8765/mcp`)."""
    prefix: str | None = None
    """Put before each tool name (`{prefix}_{tool}`), default the server's name; keeps two
    servers' tools (and phi's own) apart."""
    headers: dict[str, str] = {}
    """Extra HTTP headers (e.g. an `Authorization` bearer), HTTP servers only."""
    env: dict[str, str] = {}
    """Extra environment for a stdio server's process."""
    timeout: float = Field(default=30, gt=0)
    """Seconds to wait for the server to start and list its tools, and for each call."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r} needs exactly one of `command` or `url`")
        if self.command is not None and not self.command:
            raise ValueError(f"server {self.name!r} has an empty `command`")
        if self.headers and self.url is None:
            raise ValueError(f"server {self.name!r}: `headers` only apply to `url` servers")
        return self

    @property
    def tool_prefix(self) -> str:
        return self.prefix if self.prefix is not None else self.name


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")
    servers: list[McpServerConfig] = []


def load_mcp_servers(path: Path) -> tuple[McpServerConfig, ...]:
    """The servers listed in `path`: TOML (`[[servers]]` tables) when it ends in `.toml`,
    else JSON (`{"servers": [...]}`).

    Raises:
        McpConfigError: The file is unreadable, not TOML/JSON, or a server is malformed.
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise McpConfigError(path, exc.strerror or str(exc)) from exc
    try:
        raw = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        servers = _File.model_validate(raw).servers
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise McpConfigError(
            path, f"not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}"
        ) from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise McpConfigError(path, f"{where}: {first['msg']}") from exc
    prefixes = [s.tool_prefix for s in servers]
    if len(set(prefixes)) != len(prefixes):
        raise McpConfigError(path, f"two servers share a tool prefix: {prefixes!r}")
    return tuple(servers)
