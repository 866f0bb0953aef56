"""Files only their owner can read: PHI_HOME is 0700 and every file phi writes 0600.

phi keeps people's words, other agents' sessions, tokens and a database password. Each of
those lives under PHI_HOME, so the folder is closed (0700) and every file in it is 0600,
whatever the process's umask. A file that holds a secret and that others can read is
refused, with the command that fixes it, as ssh refuses a private key others can read:
accepting it silently would let the operator believe the secret is still theirs alone.

This module imports nothing from phi but its errors, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from phi.errors import UserError

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "InsecureFile",
    "check_secret_file",
    "make_private",
    "private_dir",
    "write_private",
]

DIR_MODE = 0o700
"""What a folder phi creates or owns allows: its owner only."""

FILE_MODE = 0o600
"""What a file phi writes allows: its owner reads and writes, nobody else anything."""


class InsecureFile(UserError):
    """A file that holds a secret is readable or writable by other users."""

    def __init__(self, path: Path, mode: int) -> None:
        self.path, self.mode = path, mode
        super().__init__(
            f"{str(path)!r} holds a secret and other users can access it "
            f"(mode {mode:04o}); run `chmod 600 {path}` and try again"
        )


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as a folder only its owner may enter.

    An existing folder phi owns is closed too (chmod 0700): a PHI_HOME created by an older
    phi, or by `mkdir` under a 022 umask, was 0755. Parents that already exist are left
    alone (they may be the user's home or `/tmp`); new ones are made 0700.
    """
    missing = [p for p in [path, *path.parents] if not p.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=DIR_MODE)
        _chmod_if_owned(folder, DIR_MODE)
    _chmod_if_owned(path, DIR_MODE)
    return path


def make_private(path: Path) -> Path:
    """Make an existing file phi wrote 0600 (SQLite's `-wal`/`-shm` siblings included)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        if candidate.exists():
            _chmod_if_owned(candidate, FILE_MODE)
    return path


def write_private(path: Path, data: str | bytes) -> Path:
    """Write `data` to `path` atomically (a temporary sibling, then rename), mode 0600.

    The file is created 0600 before the first byte is written, so there is no moment in
    which a secret sits in a file others can read.
    """
    private_dir(path.parent)
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, raw)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def check_secret_file(path: Path) -> Path:
    """Refuse a secret-bearing file that anyone but its owner can read or write.

    Raises:
        InsecureFile: group or other bits are set on the file.
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise InsecureFile(path, mode)
    return path


def _chmod_if_owned(path: Path, mode: int) -> None:
    # A file of another user (a shared /tmp folder, root's files seen by a user) cannot be
    # chmodded and is not phi's to change; phi's own are.
    try:
        if path.stat().st_uid == os.geteuid() and stat.S_IMODE(path.stat().st_mode) != mode:
            path.chmod(mode)
    except FileNotFoundError:
        pass
