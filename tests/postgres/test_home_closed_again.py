"""The server `phi postgres up` starts under root outlives phi closing PHI_HOME again.

Finding W18 of the second newcomer walkthrough: run as root, the server is the `pgserver`
user, let through PHI_HOME (0700) by an ACL entry of its own. Every later phi command reads
the settings and closes PHI_HOME to 0700, and a plain `chmod 700` sets the ACL's mask to
nothing, which locks that entry out too. The running server then failed at its next
checkpoint (`could not open file ".../global/pg_control": Permission denied`, PANIC) and
could not restart itself: the README's PostgreSQL section, followed by any other `phi`
command, lost its server within five minutes.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from phi.postgres import server_down, server_status, server_up
from phi.private import private_dir
from tests.postgres.servers import reserve_port, stop_every_server_under
from tests.security.nobody import as_nobody

ACL = "system.posix_acl_access"


@pytest.fixture
def data_home() -> Iterator[Path]:
    """A folder everyone may pass through (pytest's own temporary folders are root's alone)."""
    home = Path(tempfile.mkdtemp(prefix="phi-pg-home-"))
    home.chmod(0o755)
    yield home
    stop_every_server_under(home)
    shutil.rmtree(home)


def test_the_server_survives_a_checkpoint_after_phi_closes_its_home(data_home: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the server runs as another user only under root: run as root (CI does)")
    home = data_home / "home"
    home.mkdir(mode=0o700)
    data, port = home / "postgres", reserve_port()
    superuser = (
        f"postgresql://postgres@127.0.0.1:{port}/postgres?passfile={data}-auth/postgres.pgpass"
    )
    try:
        server_up(data, port=port)
        private_dir(home)  # what every phi command does when it reads the settings
        with psycopg.connect(superuser, autocommit=True) as conn:
            conn.execute("CHECKPOINT")  # opens global/pg_control by its whole path
        with psycopg.connect(superuser) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert server_status(data).running
        # Still closed to everyone else: no listing, no passage.
        assert as_nobody(["ls", str(home)]).returncode != 0
        assert as_nobody(["stat", str(data)]).returncode != 0
        assert stat.S_IMODE(home.stat().st_mode) & 0o067 == 0
    finally:
        server_down(data)


def test_a_folder_without_an_acl_is_still_closed_to_0700(tmp_path: Path) -> None:
    folder = tmp_path / "home"
    folder.mkdir()
    folder.chmod(0o710)
    with pytest.raises(OSError, match="No data available"):  # no ACL on it
        os.getxattr(folder, ACL)
    private_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_folder_with_an_acl_keeps_search_for_the_user_it_names_and_nothing_more(
    data_home: Path,
) -> None:
    """The same, without a server: an ACL entry for `nobody` (search) on a folder whose mask
    was widened (0750): closed again, the mask keeps search alone (0710)."""
    from phi.postgres._access import _allow_search

    folder = data_home / "home"
    folder.mkdir(mode=0o700)
    (folder / "inside").write_text("x")
    _allow_search(folder, folder.stat().st_mode, pwd_uid("nobody"))
    folder.chmod(0o750)  # a wider mask (0750 is not 0700: private_dir acts)
    private_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o710
    assert as_nobody(["stat", str(folder / "inside")]).returncode == 0  # passage kept
    assert as_nobody(["ls", str(folder)]).returncode != 0  # listing gone
    folder.chmod(0o700)  # masked by hand: private_dir gives nothing back by itself
    private_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def pwd_uid(name: str) -> int:
    import pwd

    return pwd.getpwnam(name).pw_uid
