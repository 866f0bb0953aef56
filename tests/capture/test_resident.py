"""The resident process: started once on demand, answers prompts warm, stops when idle, and
recovers a stale socket. Every hook here is a `python -m phi.capture` process, as a host
runs it; the resident process is the real one (real store, real MiniLM)."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phi.capture import Spool
from phi.capture.resident import IDLE_ENV, Resident

IDLE_S = 6
DECISION = "We decided to pin httpx to 0.27.2 because 0.28 broke the payments client"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def resident(home: Path, tmp_path: Path) -> Iterator[Resident]:
    found = Resident(spool_dir=home / "capture", db=str(tmp_path / "memory.db"))
    yield found
    for pid in residents(found):  # a failed test leaves none behind
        os.kill(pid, 15)


def residents(resident: Resident) -> list[int]:
    """The ids of resident processes serving this spool."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode().split("\0")
        except OSError:
            continue  # it ended while we looked
        if "--resident" in argv and str(resident.spool_dir) in argv:
            pids.append(int(entry.name))
    return pids


def run(payload: dict[str, object], home: Path, resident: Resident) -> subprocess.Popen[str]:
    env = {**os.environ, "PHI_HOME": str(home), IDLE_ENV: str(IDLE_S)}
    env.pop("PHI_CAPTURE_PROJECT", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "phi.capture", "--db", str(resident.db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload))
    process.stdin.close()
    return process


def finished(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    assert process.stdout is not None and process.stderr is not None
    code = process.wait(timeout=60)
    out, err = process.stdout.read(), process.stderr.read()
    process.stdout.close()
    process.stderr.close()
    return code, out, err


def prompt(session: str, text: str, cwd: Path) -> dict[str, object]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "cwd": str(cwd),
        "prompt": text,
    }


def until(check: Callable[[], object], what: str, *, within: float = 90.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def answers(resident: Resident) -> bool:
    """Whether the resident process answers on its socket (asked without starting one)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(resident.socket_path))
            sock.sendall(b'{"op": "drain"}\n')
            reply: object = json.loads(sock.makefile().readline())
            return reply == {"ok": True}
    except OSError:
        return False


def test_it_starts_once_answers_warm_and_stops_when_idle(
    home: Path, resident: Resident, tmp_path: Path
) -> None:
    # Two hooks at once, before any resident process is up: neither waits for one.
    first = [run(prompt("s1", DECISION, tmp_path), home, resident) for _ in range(2)]
    for process in first:
        assert finished(process) == (0, "", "")
    until(lambda: answers(resident), "the resident process never came up")
    until(lambda: len(residents(resident)) == 1, "not exactly one resident process")
    (pid,) = residents(resident)
    # The user's only: a 0700 folder, a 0600 socket.
    assert stat.S_IMODE(resident.socket_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(resident.socket_path.parent.stat().st_mode) == 0o700
    until(lambda: Spool(directory=resident.spool_dir).pending() == 0, "the queue was not stored")

    started = time.monotonic()
    code, out, err = finished(run(prompt("s2", "why is httpx pinned?", tmp_path), home, resident))
    took = time.monotonic() - started
    assert (code, err) == (0, "")
    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert f"session s1] user: {DECISION}" in context
    assert took < 5, f"a warm answer took {took:.1f}s"
    assert residents(resident) == [pid]  # the same process answered

    until(lambda: not residents(resident), "it did not stop when idle", within=IDLE_S + 30)
    assert not resident.socket_path.exists()
    assert not resident.running()


def test_a_stale_socket_is_recovered(home: Path, resident: Resident, tmp_path: Path) -> None:
    resident.socket_path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(resident.socket_path))  # a process that died left its socket file
    dead.close()
    assert resident.socket_path.exists() and not answers(resident)
    assert finished(run(prompt("s1", DECISION, tmp_path), home, resident)) == (0, "", "")
    until(lambda: answers(resident), "the stale socket was not replaced")
    assert len(residents(resident)) == 1


def test_a_bad_request_does_not_stop_it(home: Path, resident: Resident, tmp_path: Path) -> None:
    assert finished(run(prompt("s1", DECISION, tmp_path), home, resident)) == (0, "", "")
    until(lambda: answers(resident), "the resident process never came up")
    for junk in (b"not json\n", b'{"op": "recall", "budget_tokens": 5}\n', b"[1, 2]\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(resident.socket_path))
            sock.sendall(junk)
            assert sock.recv(100) == b""  # closed unanswered
    assert answers(resident)
    log = (resident.spool_dir / "resident.log").read_text()
    assert log.count("phi capture resident: request refused:") == 3
