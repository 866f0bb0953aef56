"""One hook invocation in process: queue, then store in the background, now, or before a
session starts; and what the host sees on its pipes.

`run_hook` is what `python -m phi.capture` runs. These call it in this process (the detached
drainer it starts is a real `python -m phi.capture --drain`), so each promise is checked
where it is kept: the host's pipes are not held by the drainer, the drainer outlives the
host's session, an event is stored where the options say, and a session start sees every
event queued before it.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from phi.capture import HookOptions, Spool, SpoolEntry, run_hook
from phi.capture._run import default_spool_dir, drain
from phi.memory import Memory

PREAMBLE = "What you remember from earlier sessions (phi's memory):\n\n"


def event(name: str, **fields: object) -> bytes:
    return json.dumps({"hook_event_name": name, "session_id": "s1", **fields}).encode()


def prompt(text: str) -> bytes:
    return event("UserPromptSubmit", prompt=text)


def hook(stdin: bytes, options: HookOptions) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(io.BytesIO(stdin), options, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def contents(db: Path, namespace: str = "dev") -> list[str]:
    async def read() -> list[str]:
        async with Memory.open(db) as memory:
            return [r.content async for r in memory.export(namespace=namespace)]

    return anyio.run(read)


@pytest.fixture(autouse=True)
def started(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The processes a hook starts, each waited for (killed after 20 s) when the test
    ends: the drainer the hook lets go of is this process's child, and one left running or
    unreaped would be reaped by whoever waits for any child next (mutmut's runner does)."""
    started: list[subprocess.Popen[bytes]] = []

    class Kept(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(subprocess, "Popen", Kept)
    yield started
    for process in started:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def host_stdin() -> Iterator[None]:
    """This process's standard input a pipe from the host, as a hook's is."""
    saved = os.dup(0)
    read, write = os.pipe()
    os.dup2(read, 0)
    os.close(read)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(write)


def drainers(spool_dir: Path) -> list[int]:
    """The pids of processes draining `spool_dir`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # not a process, or it just ended
        if b"--drain" in argv and os.fsencode(spool_dir) in argv:
            found.append(int(entry.name))
    return found


def wait_until_stored(spool: Spool, drainer: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while spool.pending():
        log = (spool.directory / "drain.log").read_text()
        assert not log, log
        assert drainer.poll() is None or not spool.pending(), "the drainer ended, storing nothing"
        assert time.monotonic() < deadline, "the detached drainer stored nothing"
        time.sleep(0.1)


@pytest.mark.parametrize("own_db", [True, False], ids=["--db", "default-db"])
def test_an_event_is_queued_and_a_detached_drainer_stores_it(
    tmp_path: Path, phi_home: Path, own_db: bool, started: list[subprocess.Popen[bytes]]
) -> None:
    db = tmp_path / "memory.db" if own_db else phi_home / "memory.db"
    options = HookOptions(
        spool_dir=tmp_path / "capture", db=str(db) if own_db else None, namespace="dev"
    )
    spool = Spool(directory=options.spool_dir)
    secret = "AKIAIOSFODNN7EXAMPLE"
    with spool.draining(wait_s=0) as mine:  # the drainer waits for this lock: look at it
        assert mine
        with host_stdin():
            assert hook(prompt(f"deploy with key {secret}"), options) == (0, "", "")
        (line,) = spool.path.read_text().splitlines()
        queued = json.loads(line)
        assert queued["namespace"] == "dev"
        # Redacted before it touches the disk.
        assert (
            json.loads(queued["payload"])["prompt"] == "deploy with key [REDACTED:aws-access-key]"
        )
        deadline = time.monotonic() + 10  # it is there from its exec on
        while not (pids := drainers(options.spool_dir)):
            assert time.monotonic() < deadline, "no drainer was started"
            time.sleep(0.05)
        (pid,) = pids
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
        expected = [sys.executable, "-m", "phi.capture", "--drain", "--spool", str(spool.directory)]
        assert argv == expected + (["--db", str(db)] if own_db else [])
        # Outlives the host's session, and holds none of the host's pipes: a host reads a
        # hook's output until every writer closed it.
        assert os.getsid(pid) == pid != os.getsid(0)
        fds = {n: os.readlink(f"/proc/{pid}/fd/{n}") for n in (0, 1, 2)}
        assert fds == {0: "/dev/null", 1: "/dev/null", 2: str(spool.directory / "drain.log")}
    (drainer,) = started
    wait_until_stored(spool, drainer)
    assert stat.S_IMODE((spool.directory / "drain.log").stat().st_mode) == 0o600
    assert contents(db) == ["user: deploy with key [REDACTED:aws-access-key]"]


def test_with_wait_the_event_is_stored_before_the_hook_returns(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db), namespace="dev", wait=True)
    assert hook(prompt("rename the flag"), options) == (0, "", "")
    assert Spool(directory=options.spool_dir).pending() == 0
    assert drainers(options.spool_dir) == []
    assert contents(db) == ["user: rename the flag"]


def test_a_session_start_stores_what_is_queued_then_preloads(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db), namespace="dev")
    # A first session: nothing to remember yet, and nothing said about it.
    assert hook(event("SessionStart", cwd="/home/dev/tidepool"), options) == (0, "", "")
    spool = Spool(directory=options.spool_dir)
    spool.append(SpoolEntry(namespace="dev", payload=prompt("fix the expiry bug").decode()))
    code, out, err = hook(event("SessionStart", cwd="/home/dev/tidepool"), options)
    assert (code, err) == (0, "")
    assert out.startswith(PREAMBLE)
    assert out.endswith("\n")
    assert "[RELEVANT MEMORY — dev — for: work in tidepool]" in out
    assert "user: fix the expiry bug" in out
    assert spool.pending() == 0
    code, out, err = hook(event("SessionStart", cwd=""), options)
    assert "[RELEVANT MEMORY — dev — for: the work ahead]" in out
    # Another namespace has nothing yet.
    other = HookOptions(spool_dir=options.spool_dir, db=str(db), namespace="elsewhere")
    assert hook(event("SessionStart"), other) == (0, "", "")


def test_the_preload_keeps_to_its_budget(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    spool_dir = tmp_path / "capture"
    spool = Spool(directory=spool_dir)
    said = [f"prompt {n}: look at module {n} of the parser" for n in range(12)]
    for text in said:
        spool.append(SpoolEntry(namespace="dev", payload=prompt(text).decode()))
    roomy = HookOptions(spool_dir=spool_dir, db=str(db), namespace="dev")
    code, out, _ = hook(event("SessionStart"), roomy)
    assert all(text in out for text in said)
    tight = HookOptions(spool_dir=spool_dir, db=str(db), namespace="dev", budget_tokens=80)
    code, out, _ = hook(event("SessionStart"), tight)
    assert code == 0
    assert 0 < sum(text in out for text in said) < 4


def test_no_store_is_opened_when_there_is_nothing_to_drain(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db))
    err = io.StringIO()
    assert drain(options, wait_s=0, err=err) is None
    spool = Spool(directory=options.spool_dir)
    spool.append(SpoolEntry(namespace="dev", payload=prompt("later").decode()))
    with spool.draining(wait_s=0):  # another drainer has the queue
        assert drain(options, wait_s=0.1, err=err) is None
    assert (err.getvalue(), spool.pending(), db.exists()) == ("", 1, False)


def test_a_session_start_preloads_even_while_another_drainer_has_the_queue(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memory.db"
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db), namespace="dev")
    assert hook(prompt("stored before"), replace(options, wait=True))[0] == 0
    spool = Spool(directory=options.spool_dir)
    spool.append(SpoolEntry(namespace="dev", payload=prompt("still queued").decode()))
    err = io.StringIO()
    with spool.draining(wait_s=0):
        text = drain(options, wait_s=0.1, err=err, preload=True, cwd="/src/tidepool")
    assert text is not None and text.startswith(PREAMBLE)
    assert "user: stored before" in text
    assert "still queued" not in text
    assert (err.getvalue(), spool.pending()) == ("", 1)


def test_what_a_drain_sets_aside_is_said_on_the_hooks_stderr(tmp_path: Path) -> None:
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(tmp_path / "m.db"), wait=True)
    options.spool_dir.mkdir()
    torn = b'{"namespace": "dev", "payload": "{\\"hook_'  # a crash mid-append
    (options.spool_dir / "spool.jsonl").write_bytes(torn)
    code, out, err = hook(prompt("after the torn line"), replace(options, namespace="dev"))
    assert (code, out) == (0, "")
    assert err.startswith(
        f"phi capture: set aside an unreadable spool line ({len(torn)} bytes; 1 kept in"
    )
    assert len(err.splitlines()) == 1
    assert contents(tmp_path / "m.db") == ["user: after the torn line"]


def test_a_store_that_cannot_be_opened_keeps_the_event_queued(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    db.write_text("not a database " * 100)
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db), wait=True)
    assert hook(prompt("kept for later"), options) == (
        0,
        "",
        f"phi capture: 1 event(s) queued for later: {str(db)!r} is not a SQLite database"
        " (corrupt or another kind of file)\n",
    )
    assert Spool(directory=options.spool_dir).pending() == 1


def test_without_a_store_named_the_configured_one_is_used(tmp_path: Path, phi_home: Path) -> None:
    options = HookOptions(spool_dir=tmp_path / "capture", namespace="dev", wait=True)
    assert hook(prompt("to the default store"), options) == (0, "", "")
    assert contents(phi_home / "memory.db") == ["user: to the default store"]


def test_the_drain_keeps_to_the_auto_upgrade_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQLite store behind this phi's schema upgrades on open by default; with
    PHI_AUTO_UPGRADE=false the drain refuses it and the event stays queued."""
    db = tmp_path / "m.db"
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(db), namespace="dev", wait=True)
    assert hook(prompt("first"), options) == (0, "", "")
    conn = apsw.Connection(str(db))  # back to before migration 6, as its own test does
    conn.execute("DROP INDEX embed_queue_namespace")
    conn.execute("ALTER TABLE embed_queue DROP COLUMN namespace")
    conn.execute("DELETE FROM phi_migrations WHERE name = 'm006_embed_queue_namespace'")
    conn.close()
    monkeypatch.setenv("PHI_AUTO_UPGRADE", "false")
    code, out, err = hook(prompt("kept for later"), options)
    assert (code, out) == (0, "")
    assert err.startswith("phi capture: 1 event(s) queued for later: this store is at schema")
    assert err.endswith("(automatic upgrades are off for this store: PHI_AUTO_UPGRADE)\n")
    assert Spool(directory=options.spool_dir).pending() == 1
    monkeypatch.delenv("PHI_AUTO_UPGRADE")
    assert hook(prompt("then stored"), options) == (0, "", "")
    assert contents(db) == ["user: first", "user: kept for later", "user: then stored"]


def test_a_misconfigured_embedder_keeps_the_event_queued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHI_EMBEDDER", "no-such-model")
    options = HookOptions(spool_dir=tmp_path / "capture", db=str(tmp_path / "m.db"), wait=True)
    code, out, err = hook(prompt("kept for later"), options)
    assert (code, out) == (0, "")
    assert err.startswith("phi capture: 1 event(s) queued for later: PHI_EMBEDDER='no-such-model'")
    assert len(err.splitlines()) == 1
    assert Spool(directory=options.spool_dir).pending() == 1


def test_an_event_that_cannot_be_queued_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    spool_dir = tmp_path / "file" / "capture"
    options = HookOptions(spool_dir=spool_dir, db=str(tmp_path / "m.db"))
    assert hook(prompt("lost?"), options) == (
        1,
        "",
        f"phi capture: could not queue the event in {spool_dir / 'spool.jsonl'}:"
        f" [Errno 20] Not a directory: {str(spool_dir)!r}\n",
    )


def test_the_spool_lives_in_phi_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PHI_HOME", str(tmp_path / "home"))
    assert default_spool_dir() == tmp_path / "home" / "capture"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PHI_HOME", "~/elsewhere")
    assert default_spool_dir() == tmp_path / "elsewhere" / "capture"
    monkeypatch.delenv("PHI_HOME")
    assert default_spool_dir() == tmp_path / ".phi" / "capture"
