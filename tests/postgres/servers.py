"""Servers a test starts: on a port no one else takes, and stopped even when the code under
test cannot stop them.

PostgreSQL cannot bind port 0 and say which port it got, and a port a test found free by
binding port 0 is an ephemeral one: any outgoing connection on the machine may take it
before the server binds it. `reserve_port` picks from a range below the ephemeral ports
instead, under a lock file per port that keeps every other test process off it for as long
as this one lives (then the kernel releases the lock, however the process ended): the port
stays the test's through a server's stop and restart on it, which no retry could promise.

Under `scripts/mutate` a mutant of `server_down` (or of what it calls) may leave a server
running after its test; each would hold a port and its shared memory for good. A test's
teardown therefore stops, by the pid in its `postmaster.pid`, every server still running
from a folder it made.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import tempfile
import time
from pathlib import Path
from typing import Final

from phi.postgres import server_down
from phi.postgres._process import running

__all__ = ["PORTS", "reserve_port", "stop_every_server_under", "stop_for_good"]

PORTS: Final = range(24000, 25000)
"""Where test servers listen: below Linux's ephemeral ports (32768 and up), which the kernel
gives outgoing connections and port-0 binds, and away from phi's own defaults (sandbox
2582 and the test networks above it, PostgreSQL 5442-5443, MCP 8765, web 8780-8781)."""

_held: list[int] = []
"""Descriptors of the lock files of the ports this process reserved, open until it exits."""


def reserve_port(ports: range = PORTS) -> int:
    """A port of `ports` for a server this test process starts: no other process that
    reserves ports here gets it while this one runs, and no program listened on it just now.

    Raises:
        RuntimeError: every port of `ports` is reserved or taken.
    """
    folder = Path(tempfile.gettempdir()) / f"phi-test-ports-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    for port in ports:
        fd = os.open(folder / f"{port}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if _bindable(port):
            _held.append(fd)
            return port
        os.close(fd)  # another program listens there: leave it and its lock
    raise RuntimeError(f"no free port in {ports.start}-{ports.stop - 1}: all reserved or taken")


def _bindable(port: int) -> bool:
    # SO_REUSEADDR as PostgreSQL sets it: a port left in TIME_WAIT is free to it too.
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def stop_for_good(data: Path) -> None:
    """`server_down(data)`; then, if the server still runs, its postmaster stopped by pid."""
    try:
        server_down(data)
    finally:
        _kill(data)


def stop_every_server_under(folder: Path) -> None:
    """Stop every server whose data folder lies under `folder` (by pid: no phi code)."""
    for pidfile in folder.rglob("postmaster.pid"):
        _kill(pidfile.parent)


def _kill(data: Path) -> None:
    if not data.exists():
        return
    info = running(data.resolve())
    if info is None:
        return
    os.kill(info.pid, signal.SIGQUIT)  # immediate shutdown: the folder is thrown away
    deadline = time.monotonic() + 30
    while running(data.resolve()) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
