"""Which OS users reach the local server's folders (`phi.postgres._access`), on real
folders: the server's user (`pgserver`, phi runs as root here) is let through a private
folder by an ACL entry of its own, `nobody` is not; files of the data folder are the
server's user's, 0600."""

from __future__ import annotations

import errno
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import phi.postgres._access as access
from phi.postgres._access import (
    ServerUser,
    give_to,
    grant_passage,
    server_user,
    write_server_file,
)
from tests.security.nobody import as_nobody, require_root

ACL = "system.posix_acl_access"


@pytest.fixture(autouse=True)
def nothing_outside_the_tests_folders(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Folders above the data folder that others may already pass are left alone: a
    change to any folder outside this test's own (`/`, `/tmp`, a home) is refused and
    fails the test, so a broken `grant_passage` cannot reach the machine's folders."""
    allowed = (tmp_path_factory.getbasetemp().resolve(), Path(tempfile.gettempdir()).resolve())
    touched: list[str] = []

    def guard(name: str) -> object:
        real = getattr(os, name)

        def guarded(path: object, *args: object, **kwargs: object) -> object:
            if not isinstance(path, int):
                where = Path(str(path)).resolve()
                if not any(where.is_relative_to(a) and where != a for a in allowed) or (
                    where.parent == allowed[1] and not where.name.startswith("phi-access-test-")
                ):
                    touched.append(f"{name} {where}")
                    raise OSError(errno.EPERM, f"test guard: {name} outside the test", str(where))
            return real(path, *args, **kwargs)

        return guarded

    for name in ("chmod", "chown", "setxattr"):
        monkeypatch.setattr(os, name, guard(name))
    yield
    assert touched == []


@pytest.fixture
def tree() -> Iterator[Path]:
    """`top/` (0755, as a home folder) in /tmp: what keeps another user out must be the
    code's doing, not a closed folder above it. (Not under pytest's `tmp_path`: its root
    is private to root, and other pytest sessions close it again whenever they start.)"""
    require_root()
    closed = [str(f) for f in Path(tempfile.gettempdir()).resolve().parents if not _passable(f)]
    if not _passable(Path(tempfile.gettempdir())) or closed:
        pytest.fail(f"{tempfile.gettempdir()} or a folder above it is closed to other users")
    base = Path(tempfile.mkdtemp(prefix="phi-access-test-"))
    base.chmod(0o755)
    top = base / "top"
    top.mkdir(mode=0o755)
    yield top
    shutil.rmtree(base)


def _passable(folder: Path) -> bool:
    return bool(folder.stat().st_mode & stat.S_IXOTH)


def _pgserver() -> ServerUser:
    entry = pwd.getpwnam("pgserver")
    return ServerUser(name="pgserver", uid=entry.pw_uid, gid=entry.pw_gid)


def _as(user: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )


def _acl(folder: Path) -> dict[tuple[int, int], int]:
    if ACL not in os.listxattr(folder):
        return {}
    return access._parse_acl(os.getxattr(folder, ACL))


def test_the_server_runs_as_pgserver_under_root_else_as_the_invoking_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    require_root()
    assert server_user() == _pgserver()
    monkeypatch.setattr(os, "geteuid", lambda: 1234)
    assert server_user() == ServerUser(name=None, uid=1234, gid=os.getegid())


def test_pgserver_alone_is_let_through_a_private_folder(tree: Path) -> None:
    private = tree / "private"
    private.mkdir(mode=0o700)
    data = private / "inner" / "pg"
    data.parent.mkdir(mode=0o750)
    data.mkdir(mode=0o700)
    (data / "PG_VERSION").write_text("18\n")
    user = _pgserver()
    grant_passage(data, user)
    seen = _as("pgserver", ["cat", str(data / "PG_VERSION")])
    assert seen.returncode != 0 and "Permission denied" in seen.stderr  # `data` is root's
    data.chmod(0o755)
    assert _as("pgserver", ["cat", str(data / "PG_VERSION")]).stdout == "18\n"
    listed = _as("pgserver", ["ls", str(private)])  # passage, not listing
    assert listed.returncode != 0 and "Permission denied" in listed.stderr
    refused = as_nobody(["cat", str(data / "PG_VERSION")])
    assert refused.returncode != 0 and "Permission denied" in refused.stderr
    # The mode's bits stay what they were: the ACL's mask is the group bits plus search.
    assert stat.S_IMODE(private.stat().st_mode) == 0o710
    assert stat.S_IMODE(data.parent.stat().st_mode) == 0o750
    assert _acl(private) == {
        (access._USER_OBJ, access._NO_ID): 0o7,
        (access._USER, user.uid): 0o1,
        (access._GROUP_OBJ, access._NO_ID): 0o0,
        (access._MASK, access._NO_ID): 0o1,
        (access._OTHER, access._NO_ID): 0o0,
    }
    assert _acl(data.parent) == {
        (access._USER_OBJ, access._NO_ID): 0o7,
        (access._USER, user.uid): 0o1,
        (access._GROUP_OBJ, access._NO_ID): 0o5,
        (access._MASK, access._NO_ID): 0o5,
        (access._OTHER, access._NO_ID): 0o0,
    }
    assert _acl(tree) == {}  # others could pass already: left alone
    assert _acl(data) == {}  # the data folder itself is not above itself


def test_passage_is_granted_once_and_kept_beside_other_entries(tree: Path) -> None:
    private = tree / "private"
    private.mkdir(mode=0o700)
    (private / "pg").mkdir()
    user = _pgserver()
    nobody = pwd.getpwnam("nobody").pw_uid
    theirs = {
        (access._USER_OBJ, access._NO_ID): 0o7,
        (access._USER, nobody): 0o4,
        (access._GROUP_OBJ, access._NO_ID): 0o0,
        (access._MASK, access._NO_ID): 0o4,
        (access._OTHER, access._NO_ID): 0o0,
    }
    os.setxattr(private, ACL, _blob(theirs))
    grant_passage(private / "pg", user)
    assert _acl(private) == theirs | {
        (access._USER, user.uid): 0o1,
        (access._MASK, access._NO_ID): 0o5,
    }
    readable = tree / "readable"  # an entry of the server's user keeps what it allowed
    readable.mkdir(mode=0o700)
    os.setxattr(readable, ACL, _blob(theirs | {(access._USER, user.uid): 0o4}))
    grant_passage(readable / "pg", user)
    assert _acl(readable)[(access._USER, user.uid)] == 0o5
    before = os.stat(private).st_ctime_ns
    grant_passage(private / "pg", user)  # nothing to add: the folder is not touched
    assert os.stat(private).st_ctime_ns == before
    private.chmod(0o700)  # `private_dir` closes the folder again: the mask loses search
    assert _as("pgserver", ["stat", str(private / "pg")]).returncode != 0
    grant_passage(private / "pg", user)
    assert _as("pgserver", ["stat", str(private / "pg")]).returncode == 0


def test_every_closed_folder_above_is_opened_past_an_open_one(tree: Path) -> None:
    tree.chmod(0o700)
    data = tree / "open" / "pg"
    data.parent.mkdir(mode=0o755)
    data.mkdir(mode=0o755)
    (data / "PG_VERSION").write_text("18\n")
    grant_passage(data, _pgserver())
    assert _acl(data.parent) == {}
    assert (access._USER, _pgserver().uid) in _acl(tree)
    assert _as("pgserver", ["cat", str(data / "PG_VERSION")]).stdout == "18\n"


def test_a_folder_the_user_owns_and_may_search_is_left_alone(tree: Path) -> None:
    user = _pgserver()
    own = tree / "own"
    own.mkdir(mode=0o700)
    os.chown(own, user.uid, user.gid)
    closed = tree / "own-closed"
    closed.mkdir(mode=0o600)
    os.chown(closed, user.uid, user.gid)
    grant_passage(own / "pg", user)
    grant_passage(closed / "pg", user)
    assert _acl(own) == {}
    assert (access._USER, user.uid) in _acl(closed)  # its own, but without search


def test_the_invoking_user_needs_no_passage(tree: Path) -> None:
    private = tree / "private"
    private.mkdir(mode=0o700)
    grant_passage(private / "pg", ServerUser(name=None, uid=os.geteuid(), gid=os.getegid()))
    grant_passage(private / "pg", ServerUser(name=None, uid=12345, gid=12345))
    assert _acl(private) == {}
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


@pytest.mark.parametrize("where", ["read", "write"])
def test_without_acls_others_get_search_and_nothing_more(
    tree: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A file system without POSIX ACLs (EOPNOTSUPP on reading or on writing one)."""
    private = tree / "private"
    private.mkdir(mode=0o700)

    def unsupported(*_: object) -> bytes:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "getxattr" if where == "read" else "setxattr", unsupported)
    grant_passage(private / "pg", _pgserver())
    assert stat.S_IMODE(private.stat().st_mode) == 0o701


def test_another_error_reading_or_writing_an_acl_is_raised(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    private = tree / "private"
    private.mkdir(mode=0o700)

    def denied(*_: object) -> bytes:
        raise OSError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "getxattr", denied)
    with pytest.raises(PermissionError):
        grant_passage(private / "pg", _pgserver())
    monkeypatch.undo()
    monkeypatch.setattr(os, "setxattr", denied)
    with pytest.raises(PermissionError):
        grant_passage(private / "pg", _pgserver())
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


def test_an_acl_of_an_unknown_version_is_not_read() -> None:
    with pytest.raises(AssertionError, match="unknown POSIX ACL version 3"):
        access._parse_acl((3).to_bytes(4, "little"))


def test_a_server_file_is_replaced_whole_0600_and_owned_by_the_server(
    tmp_path: Path,
) -> None:
    require_root()
    user = _pgserver()
    (tmp_path / "pg").mkdir()
    path = tmp_path / "pg" / "pg_hba.conf"
    path.write_text("old\n")
    old_umask = os.umask(0)
    try:
        write_server_file(path, "local all all scram-sha-256\n", user)
    finally:
        os.umask(old_umask)
    info = path.stat()
    assert path.read_text() == "local all all scram-sha-256\n"
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o600, user.uid, user.gid)
    assert [p.name for p in path.parent.iterdir()] == ["pg_hba.conf"]  # no temporary left
    mine = ServerUser(name=None, uid=user.uid, gid=user.gid)
    write_server_file(path, "again\n", mine)
    info = path.stat()
    assert (path.read_text(), info.st_uid) == ("again\n", os.geteuid())  # not given away


def test_a_server_file_is_never_open_to_others_even_before_its_chmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary file is created 0600: a reader that opened it before the `fchmod`
    would keep reading what is written after it."""
    seen: list[int] = []
    real = os.fchmod

    def fchmod(fd: int, mode: int) -> None:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real(fd, mode)

    monkeypatch.setattr(os, "fchmod", fchmod)
    old_umask = os.umask(0)
    try:
        write_server_file(tmp_path / "pg_hba.conf", "x\n", _pgserver())
    finally:
        os.umask(old_umask)
    assert seen == [0o600]


def test_give_to_makes_a_folder_the_servers_with_a_mode(tmp_path: Path) -> None:
    require_root()
    user = _pgserver()
    folder = tmp_path / "socket"
    folder.mkdir(mode=0o777)
    give_to(folder, user, mode=0o700)
    info = folder.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o700, user.uid, user.gid)
    other = tmp_path / "mine"
    other.mkdir(mode=0o777)
    give_to(other, ServerUser(name=None, uid=user.uid, gid=user.gid), mode=0o750)
    info = other.stat()
    assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o750, os.geteuid())


def _blob(entries: dict[tuple[int, int], int]) -> bytes:
    return access._ACL_VERSION.to_bytes(4, "little") + b"".join(
        access._ENTRY.pack(tag, perm, ident) for (tag, ident), perm in sorted(entries.items())
    )
