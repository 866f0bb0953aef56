"""Team capture with the resident process: with `PHI_CAPTURE_URL` set, the events the
resident takes (the fast path) and the queue it drains go to the `phi mcp --http` server,
never into the laptop's own store (they used to: the resident drained into it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from phi.capture.resident import IDLE_ENV, Resident
from phi.errors import NamespaceNotFound
from phi.memory import Memory
from tests._child import URL, start_phi, stop

HOOK = "from phi.capture.__main__ import run; run()"
TOKEN = "a" * 32


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`phi mcp --http` on a SQLite store, one read-write token `alice` for `alice-`."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN} rw:alice-\n")
    tokens.chmod(0o600)
    db = tmp_path / "server.db"
    env = {**os.environ, "PHI_HOME": str(tmp_path / "server-home")}
    process, base = start_phi(
        ["mcp", "--db", str(db), "--http", "--port", "0", "--token-file", str(tokens)],
        tmp_path / "server.log",
        says=f"MCP over streamable HTTP at {URL}/mcp",
        env=env,
        timeout=120,
    )
    try:
        yield base, db
    finally:
        stop(process)


@pytest.fixture
def laptop(tmp_path: Path, server: tuple[str, Path]) -> Iterator[dict[str, str]]:
    home = tmp_path / "laptop"
    home.mkdir(mode=0o700)
    env = {
        **os.environ,
        "PHI_HOME": str(home),
        "PHI_CAPTURE_URL": f"{server[0]}/mcp",
        "PHI_CAPTURE_TOKEN": TOKEN,
        IDLE_ENV: "20",
    }
    env.pop("PHI_CAPTURE_PROJECT", None)
    yield env
    for pid in residents(home / "capture"):
        os.kill(pid, signal.SIGKILL)


def residents(spool: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            if "--resident" in argv and str(spool) in argv:
                pids.append(int(entry.name))
    return pids


def hook(env: dict[str, str], command: str) -> None:
    event = {
        "hook_event_name": "PreToolUse",
        "session_id": "s1",
        "cwd": "/",
        "tool_name": "Bash",
        "tool_use_id": f"toolu_{command}",
        "tool_input": {"command": command},
    }
    done = subprocess.run(
        [sys.executable, "-c", HOOK, "--namespace", "alice-api"],
        input=json.dumps(event).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def rows(db: Path, marker: str) -> list[str | None]:
    """`written_by` of each row of `alice-api` in `db` that holds `marker`."""

    async def read() -> list[str | None]:
        async with Memory.open(str(db)) as memory:
            try:
                return [
                    row.written_by
                    async for row in memory.export(namespace="alice-api")
                    if marker in row.content
                ]
            except NamespaceNotFound:
                return []

    return anyio.run(read) if db.exists() else []


def until(check: Callable[[], object], what: str, *, within: float = 180.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.3)


def test_the_resident_sends_team_capture_to_the_server(
    server: tuple[str, Path], laptop: dict[str, str]
) -> None:
    _, server_db = server
    spool = Path(laptop["PHI_HOME"]) / "capture"
    hook(laptop, "make team-1")  # no resident yet: queued here, and one is started
    until(lambda: residents(spool), "no resident process")
    until(lambda: Resident(spool_dir=spool).socket_path.exists(), "the resident never listened")
    hook(laptop, "make team-2")  # taken by the resident
    until(lambda: rows(server_db, "team-2"), "the server stored nothing")
    assert rows(server_db, "team-1") == ["alice"]
    assert rows(server_db, "team-2") == ["alice"]
    local = Path(laptop["PHI_HOME"]) / "memory.db"
    assert rows(local, "team-1") == [] and rows(local, "team-2") == []
