"""Draining into a real store: nothing in the queue can stop capture for good."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from phi.capture import Spool, SpoolEntry
from phi.capture.spool import drain_into
from phi.memory import Memory


def prompt(text: str, *, session: str = "s-drain") -> str:
    return json.dumps(
        {"hook_event_name": "UserPromptSubmit", "session_id": session, "prompt": text}
    )


@pytest.mark.anyio
async def test_an_event_the_store_refuses_is_set_aside_and_the_drain_goes_on(
    memory: Memory, tmp_path: Path
) -> None:
    """Finding 5: a refused event is kept for the operator, and the events after it drain."""
    spool = Spool(directory=tmp_path / "capture")
    spool.append(SpoolEntry(namespace="ns", payload=prompt("first, before the bad ones")))
    spool.append(SpoolEntry(namespace="Not A Namespace!", payload=prompt("wrong namespace")))
    wrong_shape = json.dumps(
        {"hook_event_name": "PreToolUse", "session_id": "s", "tool_input": "not an object"}
    )
    spool.append(SpoolEntry(namespace="ns", payload=wrong_shape))
    spool.append(SpoolEntry(namespace="ns", payload=prompt("last, after the bad ones")))
    err = io.StringIO()
    with spool.draining(wait_s=1) as mine:
        assert mine
        assert await drain_into(memory, spool, err=err) == 2
    assert [r.content async for r in memory.export()] == [
        "user: first, before the bad ones",
        "user: last, after the bad ones",
    ]
    rejects = [
        json.loads(line) for line in (spool.directory / "rejects.jsonl").read_text().splitlines()
    ]
    assert [json.loads(r["line"])["payload"] for r in rejects] == [
        prompt("wrong namespace"),
        wrong_shape,
    ]
    assert "namespace" in rejects[0]["reason"]
    assert "tool_input" in rejects[1]["reason"]
    assert len(err.getvalue().splitlines()) == 2
    assert spool.pending() == 0


def hook(payload: str, home: Path, db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phi.capture", "--db", str(db), *args],
        input=payload,
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_HOME": str(home)},
        timeout=180,
        check=False,
    )


def test_a_torn_line_does_not_stop_the_hooks(tmp_path: Path) -> None:
    """Finding 5: with a torn line in the queue, a waiting hook and a session start still
    exit 0, store what follows it and set the torn line aside."""
    home, db = tmp_path / "home", tmp_path / "memory.db"
    queue = home / "capture" / "spool.jsonl"
    queue.parent.mkdir(parents=True)
    queue.write_bytes(b'{"namespace": "agent-sessions", "payload": "{\\"hook_')  # a crash
    done = hook(prompt("rename the torn flag"), home, db, "--wait")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("phi capture: set aside an unreadable spool line")
    assert len(done.stderr.splitlines()) == 1
    with queue.open("ab") as handle:
        handle.write(b"\xff\xfe not a record\n")
    start = json.dumps({"hook_event_name": "SessionStart", "session_id": "s-next", "cwd": "."})
    done = hook(start, home, db)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "user: rename the torn flag" in done.stdout  # preloaded from the store

    async def contents() -> list[str]:
        async with Memory.open(db) as memory:
            return [r.content async for r in memory.export()]

    assert anyio.run(contents) == ["user: rename the torn flag"]
    rejects = (home / "capture" / "rejects.jsonl").read_text().splitlines()
    assert len(rejects) == 2
    assert Spool(directory=home / "capture").pending() == 0
