"""Fixtures for the MCP server tests: a `phi mcp --http` process on a free loopback port."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests._child import PHI, URL, start_phi, stop

__all__ = ["PHI", "serve_http"]


@pytest.fixture
def serve_http(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start `phi mcp --http` in a subprocess; yields a function taking extra CLI args. The
    server binds port 0 and prints the port it got (a port picked here could be taken first)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(db: Path, *args: str) -> str:
        process, base = start_phi(
            ["mcp", "--db", str(db), "--http", "--port", "0", *args],
            tmp_path / f"mcp-{len(started)}.log",
            says=f"MCP over streamable HTTP at {URL}/mcp",
        )
        started.append(process)
        return f"{base}/mcp"

    yield start
    for process in started:
        stop(process)
