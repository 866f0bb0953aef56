"""The fast path with the real resident process: an event it takes is stored once while the
hook imports almost nothing; with the resident down, stopped, or dying between queueing and
answering, the hook queues the event itself and it is still stored exactly once; bad input
gets its one line either way. Every hook is a `python -c '... run()'` process, as the
shipped configurations run it; the store is real SQLite, the embedder MiniLM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from phi.capture._fast import ACK_WAIT_S, PROTOCOL
from phi.capture._intake import parse_head, parse_header, take
from phi.capture.resident import IDLE_ENV, Resident
from phi.capture.spool import Spool
from phi.errors import NamespaceNotFound
from phi.memory import Memory

HOOK = "from phi.capture.__main__ import run; run()"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
HEAVY = {"json", "re", "dataclasses", "typing", "pathlib", "socket", "phi.capture._run"}
"""What a hook the resident takes never imports (the full path imports them all)."""


@pytest.fixture
def resident(tmp_path: Path) -> Iterator[Resident]:
    found = Resident(spool_dir=tmp_path / "home" / "capture", db=str(tmp_path / "memory.db"))
    yield found
    for pid in residents(found):  # a failed test leaves none behind
        os.kill(pid, signal.SIGKILL)


def residents(resident: Resident) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue
        if "--resident" in argv and str(resident.spool_dir) in argv:
            pids.append(int(entry.name))
    return pids


def hook(
    resident: Resident, stdin: bytes, *, importtime: bool = False
) -> tuple[int, str, list[str], set[str]]:
    """Run the hook as a host does; returns its exit code, output, error lines and (with
    `importtime`) the modules it imported."""
    env = {**os.environ, "PHI_HOME": str(resident.spool_dir.parent), IDLE_ENV: "20"}
    env.pop("PHI_CAPTURE_PROJECT", None)
    flags = ["-X", "importtime"] if importtime else []
    done = subprocess.run(
        [sys.executable, *flags, "-c", HOOK, "--db", str(resident.db), "--namespace", "dev"],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    lines = done.stderr.decode().splitlines()
    modules = {line.rsplit("|", 1)[1].strip() for line in lines if line.startswith("import time:")}
    said = [line for line in lines if not line.startswith("import time:")]
    return done.returncode, done.stdout.decode(), said, modules


def tool_call(command: str, session: str = "s1") -> bytes:
    return json.dumps(
        {
            "hook_event_name": "PreToolUse",
            "session_id": session,
            "cwd": "/",
            "tool_name": "Bash",
            "tool_use_id": f"toolu_{command}",
            "tool_input": {"command": command},
        }
    ).encode()


def stored(resident: Resident, marker: str) -> list[str]:
    """The event ids of the stored rows that hold `marker`."""

    async def read() -> list[str]:
        async with Memory.open(str(resident.db)) as memory:
            try:
                return [
                    str(row.meta.get("event"))
                    async for row in memory.export(namespace="dev")
                    if marker in row.content
                ]
            except NamespaceNotFound:
                return []

    return anyio.run(read)


def queued(resident: Resident, marker: str) -> list[str]:
    """The event ids of the spool's lines (stored or not) that hold `marker`."""
    path = Spool(directory=resident.spool_dir).path
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line)["event"] for line in lines if marker in line]


def until(check: Callable[[], object], what: str, *, within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def listening(resident: Resident) -> bool:
    """Whether a resident process listens (it has opened the store by then)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(resident.socket_path))
            return True
    except OSError:
        return False


def up(resident: Resident) -> int:
    """Start the resident with a first event (the full path), and wait until it listens."""
    assert hook(resident, tool_call("echo warm-up"))[:2] == (0, "")
    until(lambda: listening(resident), "no resident process")
    until(lambda: stored(resident, "warm-up"), "the first event was not stored")
    (pid,) = residents(resident)
    return pid


def test_an_event_the_resident_takes_is_stored_once_and_the_hook_imports_little(
    resident: Resident,
) -> None:
    pid = up(resident)
    call = tool_call(f"make fast-1 GITHUB_TOKEN={GITHUB_TOKEN}")
    code, out, said, modules = hook(resident, call, importtime=True)
    assert (code, out, said) == (0, "", [])
    assert "phi.capture._fast" in modules
    assert not modules & HEAVY, " ".join(sorted(modules))
    # Redacted before it touched the disk, though the hook never loaded the redactor.
    assert GITHUB_TOKEN not in Spool(directory=resident.spool_dir).path.read_text()
    until(lambda: stored(resident, "fast-1"), "the event was not stored")
    (event,) = stored(resident, "fast-1")
    assert stored(resident, GITHUB_TOKEN) == []
    assert queued(resident, "fast-1") in ([], [event])  # queued once (or drained already)
    assert residents(resident) == [pid]


def test_with_the_resident_down_the_hook_queues_the_event_itself(resident: Resident) -> None:
    code, out, said, modules = hook(resident, tool_call("make down-1"), importtime=True)
    assert (code, out, said) == (0, "", [])
    assert "phi.capture._run" in modules  # the full path
    assert len(queued(resident, "down-1")) == 1  # before the resident started loads the store
    until(lambda: listening(resident), "the hook started no resident")
    until(lambda: stored(resident, "down-1"), "the event was not stored")
    assert len(stored(resident, "down-1")) == 1


def test_a_resident_stopped_mid_request_loses_nothing_and_doubles_nothing(
    resident: Resident,
) -> None:
    pid = up(resident)
    os.kill(pid, signal.SIGSTOP)  # it accepts (the kernel does) but never answers
    try:
        started = time.monotonic()
        assert hook(resident, tool_call("make stopped-1"))[:3] == (0, "", [])
        assert time.monotonic() - started >= ACK_WAIT_S
        (event,) = queued(resident, "stopped-1")
    finally:
        os.kill(pid, signal.SIGKILL)
    until(lambda: not residents(resident), "the resident did not die")
    # The next hook finds a dead socket, queues its event itself and starts a new resident,
    # which stores both.
    assert hook(resident, tool_call("make stopped-2"))[:3] == (0, "", [])
    until(lambda: listening(resident), "no new resident")
    until(lambda: stored(resident, "stopped-2"), "the new resident stored nothing")
    assert stored(resident, "stopped-1") == [event]
    assert len(stored(resident, "stopped-2")) == 1


def test_a_request_whose_hook_hung_up_is_not_queued_by_the_resident(resident: Resident) -> None:
    pid = up(resident)
    data = tool_call("make hung-up-1")
    header = b"\0".join([b"a" * 24, b"claude-code", b"dev", b"", b"/", b"1500"])
    os.kill(pid, signal.SIGSTOP)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(resident.socket_path))
            sock.sendall(b"%s %d %d\n" % (PROTOCOL, len(header), len(data)) + header + data)
    finally:
        os.kill(pid, signal.SIGCONT)  # it reads the whole request, then finds nobody there
    assert hook(resident, tool_call("make hung-up-2"))[:3] == (0, "", [])
    until(lambda: stored(resident, "hung-up-2"), "the later event was not stored")
    assert stored(resident, "hung-up-1") == []
    assert queued(resident, "hung-up-1") == []


def test_a_resident_dying_between_queueing_and_answering_doubles_nothing(
    resident: Resident,
) -> None:
    """The window the hang-up check cannot close: queued and fsynced, then no `queued`."""
    resident.spool_dir.mkdir(parents=True, mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(resident.socket_path))
    listener.listen()

    def dies_after_queueing() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            stream = conn.makefile("rb")
            header_size, event_size = parse_head(stream.readline().rstrip(b"\n"))
            request = parse_header(stream.read(header_size))
            data = stream.read(event_size)
            # The resident's own intake: checked, redacted, queued and fsynced.
            take(request, data, spool_dir=resident.spool_dir, db=resident.db)

    thread = threading.Thread(target=dies_after_queueing, daemon=True)
    thread.start()
    assert hook(resident, tool_call("make dying-1"))[:3] == (0, "", [])
    thread.join(timeout=10)
    # Queued twice under one id (by the dying resident, then by the hook itself); the
    # hook's nudge found nobody listening and started the real resident, which stores it.
    (event, again) = queued(resident, "dying-1")
    assert event == again
    until(lambda: listening(resident), "the hook started no resident")
    until(lambda: stored(resident, "dying-1"), "the event was not stored")
    until(lambda: not Spool(directory=resident.spool_dir).pending(), "the queue did not drain")
    assert stored(resident, "dying-1") == [event]


BAD = {
    "not-utf-8": (b'{"hook_event_name": "Stop", "session_id": "s\xff"}', "not UTF-8"),
    "not-an-object": (b"[1, 2]", "must be a JSON object, not list"),
    "blank-session": (b'{"hook_event_name": "Stop", "session_id": "\\u200b"}', "blank session"),
    "no-session": (b'{"hook_event_name": "Stop"}', "has no session_id"),
    "empty": (b"", "hook event is empty"),
}


def test_bad_input_through_the_resident_gets_one_line_and_exit_1(resident: Resident) -> None:
    up(resident)
    spool = Spool(directory=resident.spool_dir)
    before = spool.path.read_bytes()
    for case, (stdin, says) in BAD.items():
        code, out, said, modules = hook(resident, stdin, importtime=True)
        assert (code, out) == (1, ""), case
        assert len(said) == 1 and said[0].startswith("phi capture: "), (case, said)
        assert says in said[0], (case, said)
        assert "phi.capture._run" not in modules, case  # the resident refused it
    huge = b" " * (8 * 1024 * 1024) + b'{"hook_event_name": "Stop", "session_id": "s"}'
    code, out, said, modules = hook(resident, huge, importtime=True)
    assert (code, out, len(said)) == (1, "", 1)
    assert "over the limit of" in said[0] and "phi.capture._run" in modules  # never sent
    assert spool.path.read_bytes() == before  # nothing queued
