"""The capture spool and a busy store: an event waits in the queue, it is never lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import apsw

from phi.capture import Spool, SpoolEntry
from phi.memory import Memory


def entry(n: int) -> SpoolEntry:
    return SpoolEntry(namespace="ns", payload=json.dumps({"n": n}))


def test_drain_stops_where_the_store_refuses_and_resumes_in_order(tmp_path: Path) -> None:
    spool = Spool(directory=tmp_path / "capture")
    for n in range(4):
        spool.append(entry(n))
    stored: list[int] = []
    busy = [True]

    async def until_two(item: SpoolEntry) -> bool:
        n = json.loads(item.payload)["n"]
        if n == 2 and busy.pop() if busy else False:
            return False  # the store is busy, once
        stored.append(n)
        return True

    with spool.draining(wait_s=1) as mine:
        assert mine
        assert anyio.run(spool.drain, until_two) == 2
    assert spool.pending() == 2
    spool.append(entry(4))
    with spool.draining(wait_s=1) as mine:
        assert anyio.run(spool.drain, until_two) == 3
    assert stored == [0, 1, 2, 3, 4]
    assert spool.pending() == 0
    assert spool.path.read_text() == ""  # emptied once everything was stored


def test_a_second_drainer_is_kept_out(tmp_path: Path) -> None:
    spool = Spool(directory=tmp_path)
    with spool.draining(wait_s=0) as first, spool.draining(wait_s=0.1) as second:
        assert (first, second) == (True, False)


def prompt(n: int) -> str:
    return json.dumps(
        {
            "hook_event_name": "UserPromptSubmit",
            "session_id": "s-busy",
            "cwd": "/tmp/project",
            "prompt": f"prompt number {n}: rename the busy flag",
        }
    )


def hook(payload: str, home: Path, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "phi.capture", "--db", str(db), "--wait"],
        input=payload,
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_HOME": str(home)},
        timeout=120,
        check=False,
    )


def test_an_event_meeting_a_locked_store_is_queued_then_stored(tmp_path: Path) -> None:
    home, db = tmp_path / "home", tmp_path / "memory.db"
    assert hook(prompt(1), home, db).returncode == 0
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        busy = hook(prompt(2), home, db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert busy.returncode == 0  # the host carries on
    assert "1 event(s) queued for later: the store" in busy.stderr
    assert Spool(directory=home / "capture").pending() == 1
    assert hook(prompt(3), home, db).returncode == 0

    async def contents() -> list[str]:
        async with Memory.open(db) as memory:
            return [r.content async for r in memory.export()]

    assert anyio.run(contents) == [
        f"user: prompt number {n}: rename the busy flag" for n in (1, 2, 3)
    ]
    assert Spool(directory=home / "capture").pending() == 0
