"""Servers a test started are stopped, even when the code under test cannot stop them.

Under `scripts/mutate` a mutant of `server_down` (or of what it calls) may leave a server
running after its test; each would hold a port and its shared memory for good. A test's
teardown therefore stops, by the pid in its `postmaster.pid`, every server still running
from a folder it made.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from phi.postgres import server_down
from phi.postgres._process import running

__all__ = ["stop_every_server_under", "stop_for_good"]


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
