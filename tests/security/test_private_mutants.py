"""Issue 24 for `phi.private`: the primitives behind "PHI_HOME 0700, every file 0600"
(issue 23, finding 2), each tested in-process so that a one-line break of them fails here.

Every test runs under `umask 000` (nothing hidden by the umask: each mode is one phi chose)
or under `umask 277` (the umask takes more than phi's mode: phi must still set it exactly).
A file of another user is made by `chown` to `nobody`, which takes root (CI runs as root): a
test that cannot do it fails rather than passes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phi.errors import UserError
from phi.private import (
    InsecureFile,
    check_secret_file,
    make_private,
    private_dir,
    private_file,
    private_mkdirs,
    private_opener,
    write_private,
)

from .nobody import require_root

NOBODY = 65534


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    old = os.umask(0o000)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def of_nobody(path: Path, file_mode: int) -> Path:
    """`path` handed to another user with `file_mode`, as a shared folder's files are."""
    require_root()
    path.chmod(file_mode)
    os.chown(path, NOBODY, NOBODY)
    return path


@pytest.fixture
def created_modes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The mode of each file `os.open` creates, read the instant it exists: what another
    user racing phi could see before any later chmod."""
    seen: list[int] = []
    real_open = os.open

    def watching(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: int) -> int:
        fd = real_open(path, flags, *args, **kwargs)
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    monkeypatch.setattr(os, "open", watching)
    return seen


# -- InsecureFile and check_secret_file -----------------------------------------------------


def test_the_refusal_names_the_file_its_mode_and_the_fix_in_one_line() -> None:
    refused = InsecureFile(Path("/srv/phi/tokens"), 0o644)
    assert isinstance(refused, UserError)
    assert (refused.path, refused.mode) == (Path("/srv/phi/tokens"), 0o644)
    assert str(refused) == (
        "'/srv/phi/tokens' holds a secret and other users can access it (mode 0644); "
        "run `chmod 600 /srv/phi/tokens` and try again"
    )


@pytest.mark.parametrize("refused", [0o640, 0o604, 0o602, 0o620, 0o610, 0o601, 0o777, 0o060])
def test_a_secret_file_any_other_bit_opens_is_refused(tmp_path: Path, refused: int) -> None:
    secret = tmp_path / "token"
    secret.write_text("t")
    secret.chmod(refused)
    with pytest.raises(InsecureFile) as raised:
        check_secret_file(secret)
    assert (raised.value.path, raised.value.mode) == (secret, refused)
    assert f"(mode {refused:04o}); run `chmod 600 {secret}`" in str(raised.value)


@pytest.mark.parametrize("allowed", [0o600, 0o400, 0o700, 0o200, 0o000])
def test_a_secret_file_only_its_owner_can_use_is_accepted(tmp_path: Path, allowed: int) -> None:
    secret = tmp_path / "token"
    secret.write_text("t")
    secret.chmod(allowed)
    assert check_secret_file(secret) == secret


def test_a_missing_secret_file_is_the_callers_oserror(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        check_secret_file(tmp_path / "absent")


# -- folders ----------------------------------------------------------------------------------


def test_private_mkdirs_makes_each_missing_folder_0700_and_returns_it(tmp_path: Path) -> None:
    os.umask(0o277)  # mkdir's own mode would give 0500: phi must set 0700 itself
    deep = tmp_path / "a" / "b" / "c"
    assert private_mkdirs(deep) == deep
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", deep)] == [0o700] * 3


def test_private_mkdirs_leaves_existing_folders_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "users").mkdir(mode=0o777)
    (tmp_path / "users").chmod(0o777)
    private_mkdirs(tmp_path / "users" / "new")
    assert (mode(tmp_path / "users"), mode(tmp_path / "users" / "new")) == (0o777, 0o700)
    assert private_mkdirs(tmp_path / "users") == tmp_path / "users"
    assert mode(tmp_path / "users") == 0o777


def test_private_mkdirs_refuses_a_file_where_a_folder_belongs(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotADirectoryError):
        private_mkdirs(tmp_path / "plain" / "sub")
    with pytest.raises(NotADirectoryError, match=r"^'.*/plain' is not a folder$"):
        private_mkdirs(tmp_path / "plain")


def test_a_dangling_link_where_the_folder_belongs_is_one_clear_error(tmp_path: Path) -> None:
    """The link "exists" to `mkdir` but not to `exists()`: the same shape as another process
    creating the folder between the check and the `mkdir`, which must not crash phi."""
    link = tmp_path / "home"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(NotADirectoryError, match=rf"^'{link}' is not a folder$"):
        private_mkdirs(link)


def test_private_dir_closes_an_existing_folder_of_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o755)
    assert private_dir(home) == home
    assert mode(home) == 0o700
    os.umask(0o277)
    fresh = tmp_path / "x" / "fresh"
    assert private_dir(fresh) == fresh
    assert (mode(tmp_path / "x"), mode(fresh)) == (0o700, 0o700)


def test_folders_and_files_of_another_user_are_left_as_they_are(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    of_nobody(shared, 0o755)
    private_dir(shared)
    theirs = tmp_path / "theirs.db"
    theirs.write_text("x")
    Path(f"{theirs}-wal").write_text("")
    of_nobody(theirs, 0o644)
    of_nobody(Path(f"{theirs}-wal"), 0o644)
    make_private(theirs)
    private_file(theirs)
    with open(theirs, "a", opener=private_opener) as handle:
        handle.write("y")
    assert [mode(p) for p in (shared, theirs, Path(f"{theirs}-wal"))] == [0o755, 0o644, 0o644]
    assert theirs.read_text() == "xy"


# -- files ------------------------------------------------------------------------------------


def test_make_private_closes_the_file_and_its_sqlite_siblings(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    siblings = [Path(f"{db}{suffix}") for suffix in ("-wal", "-shm", "-journal")]
    for path in (db, *siblings):
        path.write_text("kept")
        path.chmod(0o666)
    other = tmp_path / "memory.db.bak"
    other.write_text("")
    other.chmod(0o644)
    assert make_private(db) == db
    assert [mode(p) for p in (db, *siblings, other)] == [0o600] * 4 + [0o644]
    assert [p.read_text() for p in (db, *siblings)] == ["kept"] * 4


def test_make_private_leaves_a_folder_given_for_a_file_enterable(tmp_path: Path) -> None:
    folder = tmp_path / "store.db"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    make_private(folder)
    make_private(tmp_path / "absent.db")  # nothing there: nothing to do, no error
    assert mode(folder) == 0o755


def test_private_file_creates_an_empty_file_never_open_to_others(
    tmp_path: Path, created_modes: list[int]
) -> None:
    os.umask(0o277)
    made = private_file(tmp_path / "new" / "memory.db")
    assert made == tmp_path / "new" / "memory.db"
    assert (made.read_bytes(), mode(made), mode(made.parent)) == (b"", 0o600, 0o700)
    os.umask(0o000)
    private_file(tmp_path / "second.db")
    assert created_modes == [0o400, 0o600]  # the umask may take bits; it never adds them


def test_private_file_keeps_an_existing_file_and_closes_it_with_its_siblings(
    tmp_path: Path,
) -> None:
    old = tmp_path / "old.db"
    old.write_bytes(b"rows")
    old.chmod(0o644)
    Path(f"{old}-shm").write_bytes(b"")
    Path(f"{old}-shm").chmod(0o644)
    assert private_file(old) == old
    assert (old.read_bytes(), mode(old), mode(Path(f"{old}-shm"))) == (b"rows", 0o600, 0o600)


def test_private_opener_creates_0600_and_tightens_an_old_file_on_its_next_write(
    tmp_path: Path, created_modes: list[int]
) -> None:
    log = tmp_path / "drain.log"
    with open(log, "a", opener=private_opener) as handle:
        handle.write("one\n")
    assert created_modes == [0o600]
    log.chmod(0o644)
    with open(log, "a", opener=private_opener) as handle:
        handle.write("two\n")
    assert (log.read_text(), mode(log)) == ("one\ntwo\n", 0o600)
    with open(log, opener=private_opener) as handle:  # the caller's flags: read only
        assert handle.read() == "one\ntwo\n"


def test_private_opener_closes_the_descriptor_when_it_cannot_finish(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(fd: int, mode: int) -> None:
        raise PermissionError("read-only file system")

    monkeypatch.setattr(os, "fchmod", refuse)
    log = tmp_path / "x.log"
    log.write_text("")
    log.chmod(0o644)
    before = _open_descriptors()
    with pytest.raises(PermissionError):
        private_opener(log, os.O_WRONLY)
    assert _open_descriptors() == before


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_write_private_writes_text_or_bytes_0600_atomically(
    tmp_path: Path, created_modes: list[int]
) -> None:
    target = tmp_path / "home" / "control.token"
    assert write_private(target, "tök\n") == target
    assert (target.read_bytes(), mode(target), mode(target.parent)) == (
        "tök\n".encode(),
        0o600,
        0o700,
    )
    target.chmod(0o644)
    write_private(target, b"\x00raw")
    assert (target.read_bytes(), mode(target)) == (b"\x00raw", 0o600)
    assert created_modes == [0o600, 0o600]
    assert sorted(p.name for p in target.parent.iterdir()) == ["control.token"]


def test_write_private_syncs_unless_told_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[int] = []
    real_fsync: Callable[[int], None] = os.fsync

    def recording(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording)
    write_private(tmp_path / "a", "durable")
    assert len(synced) == 1
    write_private(tmp_path / "b", "cheap to lose", sync=False)
    assert len(synced) == 1
    assert (tmp_path / "b").read_text() == "cheap to lose"


def test_an_existing_folder_a_private_file_is_written_into_is_left_as_it_is(
    tmp_path: Path,
) -> None:
    # write_private into /tmp (a report's --output) closed /tmp to every other user of the
    # machine when phi ran as root, who owns it: PostgreSQL's backends lost /dev/shm.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    write_private(shared / "report.json", "{}")
    assert (mode(shared), mode(shared / "report.json")) == (0o755, 0o600)
    write_private(shared / "new" / "deeper" / "x", "y")
    assert (mode(shared), mode(shared / "new"), mode(shared / "new" / "deeper")) == (
        0o755,
        0o700,
        0o700,
    )


def test_a_shared_sticky_folder_is_never_closed(tmp_path: Path) -> None:
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    sticky.chmod(0o1777)
    private_dir(sticky)
    assert stat.S_IMODE(sticky.stat().st_mode) == 0o1777
    plain = tmp_path / "home"
    plain.mkdir()
    plain.chmod(0o755)
    assert mode(private_dir(plain)) == 0o700  # a folder of phi's own is still closed
