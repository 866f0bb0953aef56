"""The local server's password files and URLs (`phi.postgres._auth`) without a server:
where the files live, what a URL names, which files are refused and in what words."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from phi.errors import UserError
from phi.postgres._auth import (
    Secrets,
    UnreadableSecret,
    new_secret,
    read_secret,
    role_url,
)
from phi.private import InsecureFile


def test_the_password_files_live_beside_the_data_folder() -> None:
    keys = Secrets.of(Path("/srv/phi/postgres"))
    assert keys.folder == Path("/srv/phi/postgres-auth")
    assert keys.passfile("phi") == Path("/srv/phi/postgres-auth/phi.pgpass")
    assert keys.passfile("postgres") == Path("/srv/phi/postgres-auth/postgres.pgpass")
    assert keys.no_passfile == Path("/srv/phi/postgres-auth/none")


def test_a_role_url_names_role_host_port_database_and_the_quoted_passfile() -> None:
    passfile = Path("/home/a user/pg-auth/phi.pgpass")
    assert role_url(5442, passfile, host="127.0.0.1") == (
        "postgresql://phi@127.0.0.1:5442/phi?passfile=/home/a%20user/pg-auth/phi.pgpass"
    )
    assert role_url(6000, Path("/p/x"), host="localhost", role="postgres", database="postgres") == (
        "postgresql://postgres@localhost:6000/postgres?passfile=/p/x"
    )


def test_a_new_secret_is_written_0600_in_a_0700_folder_and_read_back(tmp_path: Path) -> None:
    keys = Secrets.of(tmp_path / "pg")
    assert read_secret(keys, "phi") is None  # no file yet
    secret = new_secret(keys, "phi")
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", secret)
    path = keys.passfile("phi")
    assert path.read_text() == f"*:*:*:phi:{secret}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(keys.folder.stat().st_mode) == 0o700
    assert read_secret(keys, "phi") == secret
    assert new_secret(keys, "phi") != secret  # a new one each time, the file replaced
    assert read_secret(keys, "postgres") is None  # each role its own file


@pytest.mark.parametrize(
    "text",
    [
        "*:*:*:phi\n",  # no secret field
        "*:*:*:phi:s3cret:more\n",  # a sixth field
        "*:*:*:postgres:s3cret\n",  # another role's line
        "*:*:*:phi:\n",  # an empty secret
        "",
    ],
)
def test_a_password_file_phi_did_not_write_is_refused_in_one_line(
    tmp_path: Path, text: str
) -> None:
    keys = Secrets.of(tmp_path / "pg")
    new_secret(keys, "phi")
    path = keys.passfile("phi")
    path.write_text(text)
    with pytest.raises(UnreadableSecret) as raised:
        read_secret(keys, "phi")
    assert isinstance(raised.value, UserError) and raised.value.path == path
    assert str(raised.value) == (
        f"{str(path)!r} is not a password file phi wrote (one line `*:*:*:ROLE:SECRET`);"
        " remove it and run `phi postgres up` (it sets a new password)"
    )


def test_a_password_file_that_is_not_text_is_refused_in_one_line(tmp_path: Path) -> None:
    keys = Secrets.of(tmp_path / "pg")
    new_secret(keys, "phi")
    keys.passfile("phi").write_bytes(b"\xff\xfe*:*:\x00\x9c")
    with pytest.raises(UnreadableSecret):
        read_secret(keys, "phi")


def test_a_password_file_is_read_around_its_whitespace(tmp_path: Path) -> None:
    keys = Secrets.of(tmp_path / "pg")
    new_secret(keys, "postgres")
    keys.passfile("postgres").write_text("\n *:*:*:postgres:abc-DEF_1 \n\n")
    assert read_secret(keys, "postgres") == "abc-DEF_1"


def test_a_password_file_others_can_read_is_refused(tmp_path: Path) -> None:
    keys = Secrets.of(tmp_path / "pg")
    new_secret(keys, "phi")
    keys.passfile("phi").chmod(0o640)
    with pytest.raises(InsecureFile, match=r"other users can access it \(mode 0640\)"):
        read_secret(keys, "phi")
