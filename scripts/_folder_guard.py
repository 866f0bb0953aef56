"""Keep the machine's shared folders as they were while mutants run.

A mutant of code that opens or closes folders (`phi.private`, the PostgreSQL server's
`_access`) runs as whoever runs the tests; as root, a mutated mode or ACL lands on `/` or
`/tmp` itself, and every other user of the machine (the system PostgreSQL's backends
among them) loses its way through them. `kept()` notes their mode and POSIX ACL before a
run and puts back whatever changed after it, naming each folder it had to repair.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_ACL = "system.posix_acl_access"


@dataclass(frozen=True)
class FolderState:
    mode: int
    acl: bytes | None


def shared_folders(checkout: Path) -> list[Path]:
    """`/`, the temporary folder and its parents, `/dev/shm`, and the checkout's parents."""
    folders = {Path("/"), Path("/dev/shm"), Path(tempfile.gettempdir()).resolve()}
    folders.update(Path(tempfile.gettempdir()).resolve().parents)
    folders.update(checkout.resolve().parents)
    return sorted(f for f in folders if f.is_dir())


def state_of(folder: Path) -> FolderState:
    try:
        acl: bytes | None = os.getxattr(folder, _ACL)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, errno.EOPNOTSUPP, errno.ENOTSUP):
            raise
        acl = None
    return FolderState(mode=stat.S_IMODE(folder.stat().st_mode), acl=acl)


def restore(folder: Path, was: FolderState) -> bool:
    """Put `folder` back as it `was`; True if anything had changed."""
    now = state_of(folder)
    if now == was:
        return False
    if now.acl != was.acl:
        if was.acl is None:
            with contextlib.suppress(OSError):
                os.removexattr(folder, _ACL)
        else:
            os.setxattr(folder, _ACL, was.acl)
    # The mode last: setting or removing an ACL rewrites the group bits.
    os.chmod(folder, was.mode)
    return True


@contextlib.contextmanager
def kept(checkout: Path) -> Iterator[None]:
    before = {folder: state_of(folder) for folder in shared_folders(checkout)}
    try:
        yield
    finally:
        for folder, was in before.items():
            if restore(folder, was):
                print(
                    f"a mutant changed {folder} (mode or ACL): put back as it was",
                    file=sys.stderr,
                    flush=True,
                )
