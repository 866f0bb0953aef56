"""A resident local process that keeps the embedder warm for the capture hooks.

A hook is a new Python process per event; loading the memory engine and its embedding
model costs seconds, far more than a host can wait on every prompt. So one process per
store stays up: it holds the store and the model open, answers the prompt and session-start
hooks over a unix socket, and stores queued events in the background (so the quick hooks
only queue and nudge it, and no drainer process is started per event).

- Started on demand by the first hook that needs it (detached, in its own session), and
  stopping by itself after `DEFAULT_IDLE_S` without a request.
- The user's only: the socket sits in a 0700 folder and is 0600, and a connection from
  another user id (the kernel's peer credentials) is closed unanswered.
- One at a time: the process holds `resident-<key>.lock` for its whole life; a second one
  started at the same moment finds it taken and exits. A socket file left by a process
  that died is stale: whoever holds the lock removes it before listening.
- A hook never waits long: if the process is not up, the hook starts it and answers
  nothing this time.
- When it is up, a hook hands it the raw event (`phi.capture._fast`), and the process
  checks, redacts and queues it (`phi.capture._intake`): the hook imports almost nothing.

The client side (`ask`, `nudge`) imports the standard library only: it runs in every hook
that the process did not take.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from phi.capture._fast import owned_privately as _owned_privately
from phi.capture._fast import resident_key, socket_path
from phi.private import private_dir, private_opener

__all__ = [
    "DEFAULT_IDLE_S",
    "IDLE_ENV",
    "Resident",
    "ask",
    "nudge",
    "owned_privately",
    "start",
]

DEFAULT_IDLE_S: Final = 600.0
"""How long the process stays up without a request (ten minutes: a pause in a session)."""
IDLE_ENV: Final = "PHI_CAPTURE_RESIDENT_IDLE_S"
"""Overrides `DEFAULT_IDLE_S` (seconds), read when the process starts."""
MAX_REQUEST_BYTES: Final = 1 << 20
MAX_REPLY_BYTES: Final = 1 << 20
_RETRY_S: Final = 0.1


@dataclass(frozen=True, kw_only=True)
class Resident:
    """Where the resident process for one spool and store lives."""

    spool_dir: Path
    """The capture folder (`<home>/capture`): the lock and log are kept here."""
    db: str | None = None
    """The store it serves; `None` is the configured default. One process per store."""

    @property
    def key(self) -> str:
        return resident_key(self.db)

    @property
    def lock_path(self) -> Path:
        return self.spool_dir / f"resident-{self.key}.lock"

    @property
    def log_path(self) -> Path:
        return self.spool_dir / "resident.log"

    @property
    def socket_path(self) -> Path:
        """`<capture>/resident-<key>.sock`, or, when that path is too long for a socket, a
        0700 folder of this user's under the temporary folder (`_fast.socket_path`: the
        fast path finds it the same way)."""
        return Path(socket_path(os.fspath(self.spool_dir), self.db))

    def running(self) -> bool:
        """Whether a resident process holds the lock (up, or loading its model)."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing drops a lock taken just now
        return False


def start(resident: Resident) -> bool:
    """Start the resident process in the background unless one holds the lock already;
    returns whether one was started.

    The lock is taken here and handed to the child (its descriptor inherited; a `flock`
    belongs to the open file, so it outlives this process): of two hooks starting it at
    once, one gets the lock and starts it, the other sees it taken and starts nothing."""
    if resident.running():
        return False
    import subprocess  # only when starting one, not on every hook

    private_dir(resident.spool_dir)
    lock = private_opener(resident.lock_path, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # started a moment ago by another hook
        args = [sys.executable, "-m", "phi.capture", "--resident", "--spool"]
        args += [str(resident.spool_dir), "--lock-fd", str(lock)]
        if resident.db:
            args += ["--db", resident.db]
        with open(resident.log_path, "a", opener=private_opener) as log:
            subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                pass_fds=(lock,),
            )
        return True
    finally:
        os.close(lock)


def owned_privately(folder: Path) -> bool:
    """Whether `folder` is a real folder of this user that no one else may enter: the
    socket's folder under the shared temporary folder could have been made by anyone, and
    a process of theirs listening in it would be heard as ours."""
    return _owned_privately(os.fspath(folder))


def _exchange(path: Path, request: dict[str, object], *, timeout_s: float) -> object:
    if path.parent.exists() and not owned_privately(path.parent):
        raise PermissionError(f"{path.parent} is not this user's private folder")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(max(timeout_s, 0.001))
        sock.connect(os.fspath(path))
        sock.sendall(json.dumps(request).encode() + b"\n")
        deadline = time.monotonic() + timeout_s
        reply = b""
        while not reply.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or len(reply) > MAX_REPLY_BYTES:
                raise TimeoutError("no whole reply in time")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("the resident process closed the connection")
            reply += chunk
        return json.loads(reply)


def ask(
    resident: Resident, request: dict[str, object], *, timeout_s: float, wait_start: bool = False
) -> dict[str, object] | None:
    """`request` answered by the resident process within `timeout_s`, else `None`.

    A process that is not up is started; with `wait_start` the question is asked again
    until `timeout_s` runs out (a session start can wait for the model to load, a prompt
    cannot)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            reply = _exchange(resident.socket_path, request, timeout_s=left)
        except (FileNotFoundError, ConnectionRefusedError):
            start(resident)  # not up, or a stale socket of a process that died
        except (OSError, ValueError):
            return None  # too slow, or cut off: this time without an answer
        else:
            return reply if isinstance(reply, dict) else None
        if not wait_start or deadline - time.monotonic() <= _RETRY_S:
            return None
        time.sleep(_RETRY_S)


def nudge(resident: Resident) -> None:
    """Tell the resident process that events are queued (starting it if it is not up);
    returns without waiting for its reply."""
    path = resident.socket_path
    try:
        if path.parent.exists() and not owned_privately(path.parent):
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.2)
            sock.connect(os.fspath(path))
            sock.sendall(b'{"op": "drain"}\n')
    except (FileNotFoundError, ConnectionRefusedError):
        start(resident)
    except OSError:
        pass  # busy: the process also looks at the queue every few seconds


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of a unix socket (Linux), else `None`."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, 12))
    return int(uid)
