"""The `PHI_MCP_SERVERS` file: which external MCP servers phi mounts, and how to reach them.

A TOML (`[[servers]]` tables) or JSON (`{"servers": [...]}`) file; each server is a stdio
`command` or an HTTP `url`, with a tool-name `prefix` and optional `headers`. Validated here
(pydantic, at the boundary) so a typo is one clear error at startup, not a failing run.

A prefix is what keeps a server's tools apart from phi's and from each other's, so one that
could not do that is refused here: an empty one (a server's `recall` would shadow phi's and
the agent would refuse its tool set on every run), one a model provider would not accept in
a tool name, and two prefixes that can spell the same tool name (`a` + `b_c`, `a_b` + `c`).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from phi.errors import UserError

__all__ = [
    "DEFAULT_MAX_RESULT_CHARS",
    "McpConfigError",
    "McpServerConfig",
    "load_mcp_servers",
]

DEFAULT_MAX_RESULT_CHARS: Final = 20_000
"""What one external tool call may put in front of the model (about 5,000 tokens)."""

_PREFIX_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")
# Model providers accept tool names of letters, digits, `_` and `-` (Anthropic and OpenAI
# alike, at most 64 characters); a prefix of anything else breaks every request.


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
    servers' tools (and phi's own) apart. 1-32 letters, digits, `_` or `-`."""
    headers: dict[str, str] = {}
    """Extra HTTP headers (e.g. an `Authorization` bearer), HTTP servers only."""
    env: dict[str, str] = {}
    """Extra environment for a stdio server's process."""
    timeout: float = Field(default=30, gt=0)
    """Seconds to wait for the server to start and list its tools, and for each call."""
    max_result_chars: int = Field(default=DEFAULT_MAX_RESULT_CHARS, gt=0)
    """Characters of one call's answer the model sees; the rest is cut, and said so."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"server {self.name!r} needs exactly one of `command` or `url`")
        if self.command is not None and not self.command:
            raise ValueError(f"server {self.name!r} has an empty `command`")
        if self.headers and self.url is None:
            raise ValueError(f"server {self.name!r}: `headers` only apply to `url` servers")
        if not _PREFIX_RE.fullmatch(self.tool_prefix):
            given = "`prefix`" if self.prefix is not None else "`prefix` (default: its name)"
            raise ValueError(
                f"server {self.name!r}: tool {given} {self.tool_prefix!r} must be 1-32 letters, "
                "digits, `_` or `-`, starting with a letter or digit; it keeps the server's tools "
                "apart from phi's own"
            )
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
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise McpConfigError(path, exc.strerror or str(exc)) from exc
    except UnicodeDecodeError as exc:
        raise McpConfigError(path, f"not UTF-8 text (byte {exc.start})") from None
    try:
        raw = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        servers = _File.model_validate(raw).servers
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise McpConfigError(
            path, f"not valid {'TOML' if path.suffix == '.toml' else 'JSON'}: {exc}"
        ) from exc
    except RecursionError:
        raise McpConfigError(path, "nested too deeply to be a servers file") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise McpConfigError(path, f"{where}: {first['msg']}") from exc
    prefixes = [s.tool_prefix for s in servers]
    if len(set(prefixes)) != len(prefixes):
        raise McpConfigError(path, f"two servers share a tool prefix: {prefixes!r}")
    # `a` + `b_c` and `a_b` + `c` both give `a_b_c`: two such prefixes could each mount a
    # tool of one name, and pydantic-ai refuses the whole tool set when two tools collide.
    for short in prefixes:
        for long in prefixes:
            if long.startswith(f"{short}_"):
                raise McpConfigError(
                    path,
                    f"tool prefixes {short!r} and {long!r} can give the same tool name "
                    f"({short}_x_y); pick prefixes where neither starts with the other and `_`",
                )
    return tuple(servers)
