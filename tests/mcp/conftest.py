"""Fixtures for the MCP server tests: a `phi mcp --http` process on a free loopback port."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

PHI = str(Path(sys.executable).parent / "phi")
"""The installed `phi` console script of this environment."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], *, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


@pytest.fixture
def serve_http(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start `phi mcp --http` in a subprocess; yields a function taking extra CLI args."""
    started: list[subprocess.Popen[bytes]] = []
    logs: list[IO[bytes]] = []

    def start(db: Path, *args: str) -> str:
        port = free_port()
        log = (tmp_path / f"mcp-{port}.log").open("wb")
        logs.append(log)
        process = subprocess.Popen(
            [PHI, "mcp", "--db", str(db), "--http", "--port", str(port), *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ),
        )
        started.append(process)
        wait_for_port(port, process)
        return f"http://127.0.0.1:{port}/mcp"

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for log in logs:
        log.close()
