"""Files only their owner can read: PHI_HOME is 0700 and every file phi writes 0600.

phi keeps people's words, other agents' sessions, tokens and a database password. Each of
those lives under PHI_HOME, so the folder is closed (0700) and every file in it is 0600,
whatever the process's umask. A file that holds a secret and that others can read is
refused, with the command that fixes it, as ssh refuses a private key others can read:
accepting it silently would let the operator believe the secret is still theirs alone.

The umask only ever removes bits, so a file created with mode 0600 is never more open than
that; it may be less (a 0277 umask), and a file an older phi wrote is 0644 already: every
helper here therefore also sets the mode explicitly on files phi owns.

This module imports nothing from phi but its errors, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
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
    "private_file",
    "private_mkdirs",
    "private_opener",
    "write_private",
]

DIR_MODE = 0o700
"""What a folder phi creates or owns allows: its owner only."""

FILE_MODE = 0o600
"""What a file phi writes allows: its owner reads and writes, nobody else anything."""

_SQLITE_SIBLINGS = ("-wal", "-shm", "-journal")
"""Files SQLite keeps beside a database; they hold the same data, so the same mode."""


class InsecureFile(UserError):
    """A file that holds a secret is readable or writable by other users."""

    def __init__(self, path: Path, mode: int) -> None:
        self.path, self.mode = path, mode
        super().__init__(
            f"{str(path)!r} holds a secret and other users can access it "
            f"(mode {mode:04o}); run `chmod 600 {shlex.quote(str(path))}` and try again"
        )


def private_mkdirs(folder: Path) -> Path:
    """Create `folder` and its missing parents 0700, like `mkdir -p -m 700`.

    Folders that already exist are left as they are: they may be the user's own (a `--db`
    in `~/Documents`, `/tmp`), and closing them is not phi's call. `private_dir` also
    closes `folder` itself.

    Raises:
        NotADirectoryError: `folder` or one of its parents is a file.
        OSError: a folder could not be created (permissions, read-only file system).
    """
    missing = [p for p in [folder, *folder.parents] if not p.exists()]
    for new in reversed(missing):
        # Another process may create it between the check and here; it is then its folder.
        with contextlib.suppress(FileExistsError):
            new.mkdir(mode=DIR_MODE)
        _chmod_if_owned(new, DIR_MODE)
    if not folder.is_dir():
        raise NotADirectoryError(f"{str(folder)!r} is not a folder")
    return folder


def private_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as a folder only its owner may enter.

    An existing folder phi owns is closed too (chmod 0700): a PHI_HOME created by an older
    phi, or by `mkdir` under a 022 umask, was 0755. A folder with a POSIX ACL keeps its
    mask's search bit (0710), or the users its entries name would be locked out too
    (`_acl_search`). Parents that already exist are left alone (they may be the user's home
    or `/tmp`); new ones are made 0700.

    Raises:
        NotADirectoryError: `path` or one of its parents is a file.
        OSError: a folder could not be created.
    """
    private_mkdirs(path)
    _chmod_if_owned(path, DIR_MODE | _acl_search(path))
    return path


_ACL_XATTR = "system.posix_acl_access"


def _acl_search(folder: Path) -> int:
    """The search bit of the ACL mask of `folder` (0o010), if it has an ACL whose mask allows
    search; else 0.

    With a POSIX ACL the mode's group bits are the ACL's mask: `chmod 0700` would also lock
    out the entries it names. `phi postgres up` under root lets the server's OS user alone
    through PHI_HOME by such an entry (search, no listing); masking it made the running
    server fail at its next checkpoint. Search is all that is kept: nobody else gains
    anything the ACL did not already give.
    """
    try:
        if not os.getxattr(folder, _ACL_XATTR):
            return 0
        return folder.stat().st_mode & stat.S_IXGRP
    except OSError:  # no ACL, no ACL support, or gone
        return 0


def private_opener(path: str | os.PathLike[str], flags: int) -> int:
    """An `opener` for `open()` that creates files 0600 and closes an existing one of ours.

    `open(path, "a", opener=private_opener)`: a log or queue file an older phi made 0644 is
    tightened on its next write, and a new one never exists with a looser mode.
    """
    fd = os.open(path, flags, FILE_MODE)
    try:
        _fchmod_if_owned(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: Path) -> Path:
    """Make sure `path` exists as a file only its owner can use: created empty 0600 if
    missing (missing parent folders 0700, existing ones untouched), else made 0600.

    For files another library creates with its own default mode: SQLite makes a new
    database 0644 under the usual umask and its `-wal`/`-shm` siblings copy the database's
    mode, so creating the empty file first is what makes all three private. An empty file
    is a valid empty SQLite database.
    """
    private_mkdirs(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return make_private(path)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return path


def make_private(path: Path) -> Path:
    """Make an existing file phi wrote 0600 (SQLite's `-wal`/`-shm` siblings included)."""
    for candidate in (path, *(Path(f"{path}{suffix}") for suffix in _SQLITE_SIBLINGS)):
        # Files only: a folder given where a file belongs is the caller's error to report,
        # and a folder made 0600 could not even be entered.
        if candidate.is_file():
            _chmod_if_owned(candidate, FILE_MODE)
    return path


def write_private(path: Path, data: str | bytes, *, sync: bool = True) -> Path:
    """Write `data` to `path` atomically (a temporary sibling, then rename), mode 0600.

    The file is created 0600 before the first byte is written, so there is no moment in
    which a secret sits in a file others can read. `sync=False` skips the fsync, for
    bookkeeping that is cheap to lose (a queue's read offset) and written often.
    """
    # Missing folders are made 0700; an existing one is left as it is: it may be `/tmp` or a
    # folder the user chose, and closing it is not phi's call (root owns `/tmp`, so
    # `private_dir` would have closed it to every other user of the machine).
    private_mkdirs(path.parent)
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        os.write(fd, raw)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def check_secret_file(path: Path) -> Path:
    """Refuse a secret-bearing file that anyone but its owner can read or write.

    Raises:
        InsecureFile: group or other bits are set on the file.
        OSError: the file cannot be examined (missing, a folder phi may not enter).
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise InsecureFile(path, mode)
    return path


def _chmod_if_owned(path: Path, mode: int) -> None:
    # A file of another user (a shared /tmp folder, root's files seen by a user) cannot be
    # chmodded and is not phi's to change; phi's own are. A shared folder (sticky, as /tmp
    # is) is never closed, even by root who owns it: every other user of the machine would
    # lose it (PostgreSQL's backends could no longer reach /dev/shm through a closed /tmp).
    try:
        info = path.stat()
        shared = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode and not shared:
            path.chmod(mode)
    except FileNotFoundError:
        pass


def _fchmod_if_owned(fd: int, mode: int) -> None:
    info = os.fstat(fd)
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != mode:
        os.fchmod(fd, mode)
