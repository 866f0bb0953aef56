"""The capture spool and a busy store: an event waits in the queue, it is never lost."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import anyio
import apsw
import pytest

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


def rejects_of(spool: Spool) -> list[dict[str, str]]:
    path = spool.directory / "rejects.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_torn_line_is_set_aside_and_the_events_around_it_drain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 5: a crash or a full disk mid-append leaves a line without its end."""
    spool = Spool(directory=tmp_path / "capture")
    spool.append(entry(0))
    torn = b'{"namespace": "ns", "payload": "{\\"n\\": 9'  # the writer died here
    with spool.path.open("ab") as handle:
        handle.write(torn)
    spool.append(entry(1))  # glued onto the torn bytes, on the same line
    with spool.path.open("ab") as handle:
        handle.write(b"\x00\x00\x00 \xff\n")  # a power cut's zeros, then an end of line
    spool.append(entry(2))
    being_written = b'{"namespace": "ns", "payload": "{\\"n\\": 3}", '
    with spool.path.open("ab") as handle:
        handle.write(being_written)  # another process is appending this line right now
    stored: list[int] = []

    async def keep(item: SpoolEntry) -> bool:
        stored.append(json.loads(item.payload)["n"])
        return True

    with spool.draining(wait_s=1) as mine:
        assert mine
        assert anyio.run(spool.drain, keep) == 3
    assert stored == [0, 1, 2]
    assert spool.pending() == 0  # the line being written is neither counted nor set aside
    rejects = rejects_of(spool)
    assert [r["line"].encode("utf-8", "surrogateescape") for r in rejects] == [
        torn,
        b"\x00\x00\x00 \xff",
    ]
    assert all(r["reason"] and r["at"] for r in rejects)
    assert stat.S_IMODE((spool.directory / "rejects.jsonl").stat().st_mode) == 0o600
    logged = capsys.readouterr().err.splitlines()
    assert len(logged) == 2
    said = "phi capture: set aside an unreadable spool line"
    assert all(line.startswith(said) for line in logged)

    with spool.path.open("ab") as handle:
        handle.write(b'"event": "e3"}\n')  # the append finishes
    with spool.draining(wait_s=1):
        assert anyio.run(spool.drain, keep) == 1
    assert stored == [0, 1, 2, 3]
    assert len(rejects_of(spool)) == 2  # set aside once, logged once
    assert capsys.readouterr().err == ""
    assert spool.path.read_bytes() == b""  # everything handled: the queue is emptied


def test_a_drain_stopped_mid_line_resumes_after_what_it_set_aside(tmp_path: Path) -> None:
    """Finding 5: a busy store stops the drain between a torn record and the one glued to it;
    the next drain stores that one and does not set the torn one aside again."""
    spool = Spool(directory=tmp_path / "capture")
    spool.directory.mkdir()
    with spool.path.open("ab") as handle:
        handle.write(b'{"namespace": "ns", "pay')  # torn by a crash
    spool.append(entry(1))
    busy = [True]
    stored: list[int] = []

    async def once_busy(item: SpoolEntry) -> bool:
        if busy:
            busy.pop()
            return False
        stored.append(json.loads(item.payload)["n"])
        return True

    for _ in range(2):
        with spool.draining(wait_s=1):
            anyio.run(spool.drain, once_busy)
    assert stored == [1]
    assert len(rejects_of(spool)) == 1


APPEND_WITH_A_FULL_DISK = """
import resource, signal, sys
from pathlib import Path
from phi.capture import Spool, SpoolEntry
spool = Spool(directory=Path(sys.argv[1]))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
size = spool.path.stat().st_size
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, resource.RLIM_INFINITY))
try:
    spool.append(SpoolEntry(namespace="ns", payload="x" * 500))
except OSError as exc:
    print(exc.errno)
"""


def test_an_append_that_fails_part_way_leaves_no_torn_line(tmp_path: Path) -> None:
    """Finding 5: a full disk mid-append (here a file size limit: the first 40 bytes are
    written, the rest refused) takes the part written back off."""
    spool = Spool(directory=tmp_path / "capture")
    spool.append(entry(0))
    before = spool.path.read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", APPEND_WITH_A_FULL_DISK, str(spool.directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == str(errno.EFBIG)
    assert spool.path.read_bytes() == before


def test_a_line_queued_by_an_older_phi_drains_with_the_same_id_each_time(
    tmp_path: Path,
) -> None:
    """Lines queued before events had ids: the line itself names the event, so storing it
    again after a crash still makes one row (a guard for the upgrade, not a finding)."""
    spool = Spool(directory=tmp_path / "capture")
    spool.directory.mkdir()
    old = b'{"namespace": "ns", "payload": "{\\"n\\": 7}"}\n'
    ids: list[str] = []

    async def keep(item: SpoolEntry) -> bool:
        ids.append(item.event)
        return True

    for _ in range(2):
        spool.path.write_bytes(old)
        with spool.draining(wait_s=1):
            assert anyio.run(spool.drain, keep) == 1
    assert len(ids) == 2
    assert ids[0] == ids[1]
    assert len(ids[0]) == 24
