"""Passwords, roles and `pg_hba.conf` of the local server: closed to everyone without one.

Two secrets, each a libpq password file (`*:*:*:ROLE:SECRET`, 0600) in a folder beside the
data folder (`$PHI_HOME/postgres-auth/` for the default data folder): `phi.pgpass` for the
role phi works as (it owns the database `phi` and nothing else: not a superuser, so no
`COPY ... TO PROGRAM`, no reading server files), and `postgres.pgpass` for the superuser,
which only `phi postgres` uses. The URL phi prints names the first with `passfile=`, so it
works as written for the user who ran `phi postgres up` and carries no password itself:
printing it, logging it or putting it in `PHI_MEMORY_URL` gives nothing away.

The files are the truth; the server follows them: every `up` sets both roles' passwords
from them, so a rotation interrupted between file and server is repaired by the next `up`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import quote

import psycopg
from psycopg import sql
from psycopg.rows import TupleRow

from phi.errors import UserError
from phi.private import check_secret_file, private_dir, write_private

__all__ = [
    "DATABASE",
    "HBA",
    "RECOVERY_HBA",
    "ROLE",
    "SUPERUSER",
    "Secrets",
    "UnreadableSecret",
    "new_secret",
    "old_tables",
    "provision",
    "read_secret",
    "role_url",
    "set_password",
]

ROLE: Final = "phi"
"""The role phi works as: owner of its database, not a superuser."""
DATABASE: Final = "phi"
SUPERUSER: Final = "postgres"
"""The superuser `initdb` makes; `phi postgres` alone logs in as it."""

HBA: Final = """\
# Written by phi (`phi postgres up` rewrites it): every connection needs a password.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
"""
RECOVERY_HBA: Final = """\
# Written by phi while `phi postgres up` sets the passwords (it is replaced within
# seconds): the superuser through the socket only, whose folder only the server's OS
# user and root can enter; no TCP login at all.
local   all       postgres            trust
"""


class UnreadableSecret(UserError):
    """A password file of the local server is not one phi wrote."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{str(path)!r} is not a password file phi wrote (one line `*:*:*:ROLE:SECRET`);"
            " remove it and run `phi postgres up` (it sets a new password)"
        )


@dataclass(frozen=True, kw_only=True)
class Secrets:
    """Where the local server's password files live."""

    folder: Path
    """Beside the data folder: `<data folder>-auth` (0700)."""

    @classmethod
    def of(cls, data_dir: Path) -> Secrets:
        return cls(folder=data_dir.with_name(f"{data_dir.name}-auth"))

    def passfile(self, role: str) -> Path:
        """The password file of `role` (`phi.pgpass`, `postgres.pgpass`)."""
        return self.folder / f"{role}.pgpass"

    @property
    def no_passfile(self) -> Path:
        """A password file that never exists, for logins that pass their password (or
        none) explicitly: libpq then reads neither `~/.pgpass` nor `PGPASSFILE`."""
        return self.folder / "none"


def role_url(
    port: int, passfile: Path, *, host: str, role: str = ROLE, database: str = DATABASE
) -> str:
    """A URL that logs `role` in with the password in `passfile` (libpq's `passfile`)."""
    return f"postgresql://{role}@{host}:{port}/{database}?passfile={quote(str(passfile), safe='/')}"


def read_secret(secrets_: Secrets, role: str) -> str | None:
    """The secret of `role`, or None when its file does not exist yet.

    Raises:
        InsecureFile: others can read or write the file.
        UnreadableSecret: the file does not hold one line for `role`.
    """
    path = secrets_.passfile(role)
    if not path.exists():
        return None
    check_secret_file(path)
    fields = path.read_text(errors="replace").strip().split(":")
    if len(fields) != 5 or fields[3] != role or not fields[4]:
        raise UnreadableSecret(path)
    return fields[4]


def new_secret(secrets_: Secrets, role: str) -> str:
    """Generate a secret for `role` and write its password file (0600, atomically)."""
    # URL-safe letters: nothing a password file would need to escape (`:` and `\`).
    secret = secrets.token_urlsafe(32)
    private_dir(secrets_.folder)
    write_private(secrets_.passfile(role), f"*:*:*:{role}:{secret}\n")
    return secret


def set_password(conn: psycopg.Connection[TupleRow], role: str, secret: str) -> None:
    """Give `role` the password `secret`, sent as its SCRAM verifier: the plain text never
    reaches the server (nor its log or `pg_stat_activity`)."""
    verifier = conn.pgconn.encrypt_password(secret.encode(), role.encode(), b"scram-sha-256")
    conn.execute(
        sql.SQL("ALTER ROLE {} PASSWORD {}").format(
            sql.Identifier(role), sql.Literal(verifier.decode())
        )
    )


def provision(
    conn: psycopg.Connection[TupleRow], *, superuser_secret: str, role_secret: str
) -> None:
    """As the superuser: both passwords set, phi's role (never a superuser) and its database.

    Idempotent; a role named `phi` made a superuser by hand is made an ordinary one again.
    """
    set_password(conn, SUPERUSER, superuser_secret)
    found = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
    if found is None:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
    conn.execute(
        sql.SQL(
            "ALTER ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
        ).format(sql.Identifier(ROLE))
    )
    set_password(conn, ROLE, role_secret)
    owner = conn.execute(
        "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (DATABASE,)
    ).fetchone()
    if owner is None:
        conn.execute(
            sql.SQL("CREATE DATABASE {} OWNER {}").format(
                sql.Identifier(DATABASE), sql.Identifier(ROLE)
            )
        )
    elif owner[0] != ROLE:
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(DATABASE), sql.Identifier(ROLE)
            )
        )


def old_tables(conn: psycopg.Connection[TupleRow]) -> list[str]:
    """The schemas of database `postgres` holding tables (written through the old, trusted
    superuser URL), for the message that says where that data stays."""
    rows = conn.execute(
        "SELECT DISTINCT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
        " ORDER BY 1"
    ).fetchall()
    return [str(name) for (name,) in rows]
