"""Logging in as the superuser through the server's socket, and closing the server.

`close` leaves a server asking every connection for a password. A folder whose
`pg_hba.conf` is not phi's (an older phi trusted everyone, TCP included) or whose superuser
password no longer matches its file is repaired the same way: `pg_hba.conf` first lets the
superuser in through the socket alone (its folder only the server's OS user and root can
enter), the passwords are set from the files, then phi's `pg_hba.conf` is written and
reloaded, and `close` returns only once a login without a password is refused.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psycopg
from psycopg.rows import TupleRow

from phi.postgres._access import ServerUser, give_to, write_server_file
from phi.postgres._auth import (
    DATABASE,
    HBA,
    RECOVERY_HBA,
    ROLE,
    SUPERUSER,
    Secrets,
    old_tables,
    provision,
    role_url,
)
from phi.postgres._process import HOST, START_TIMEOUT_S, PostgresServerError, running, start

__all__ = ["LoginRefused", "close", "connect", "phi_url", "superuser"]


def phi_url(data_dir: Path, port: int) -> str:
    """The URL `phi postgres up` prints: role `phi`, database `phi`, the password file."""
    return role_url(port, Secrets.of(data_dir).passfile(ROLE), host=HOST)


def close(
    data_dir: Path, port: int, user: ServerUser, superuser_secret: str, role_secret: str
) -> str | None:
    """Start the server if needed and leave it asking every connection for a password;
    say what had to be closed or repaired, if anything."""
    hba = data_dir / "pg_hba.conf"
    found = hba.read_text(errors="replace")
    info = running(data_dir)
    if info is None:
        if found != HBA:
            # An older phi's trust for everyone must not serve a single TCP login.
            write_server_file(hba, RECOVERY_HBA, user)
        start(data_dir, port, user=user)
    elif info.socket_dir is not None and info.socket_dir != data_dir:
        give_to(info.socket_dir, user, mode=0o700)  # an older phi left it 0777
    said: str | None = None
    if found == HBA:
        try:
            conn = superuser(data_dir, superuser_secret)
        except LoginRefused:
            said = (
                f"the superuser's password did not match {str(Secrets.of(data_dir).folder)!r}"
                "; set it from the file again"
            )
            conn = recover(data_dir, user)
    elif found == RECOVERY_HBA:
        conn = recover(data_dir, user)
        said = "finished closing the server: an interrupted `phi postgres up` had begun it"
    else:
        conn = recover(data_dir, user)
        said = (
            f"closed the logins an older phi left open to every local user (trust in"
            f" {str(hba)!r}): every connection needs a password now, and phi works as role"
            f" {ROLE!r} (not a superuser) in database {DATABASE!r}"
        )
    with conn:
        provision(conn, superuser_secret=superuser_secret, role_secret=role_secret)
        if found not in (HBA, RECOVERY_HBA):
            assert said is not None
            said += old_data_note(conn, data_dir, port)
        if hba.read_text(errors="replace") != HBA:
            write_server_file(hba, HBA, user)
            conn.execute("SELECT pg_reload_conf()")
    wait_closed(data_dir)
    return said


def old_data_note(conn: psycopg.Connection[TupleRow], data_dir: Path, port: int) -> str:
    """Where the tables an older phi wrote as the superuser stay, and the command that
    copies a store from there (nothing is moved: the data stays where it was written)."""
    schemas = old_tables(conn)
    if not schemas:
        return ""
    shown = ", ".join(schemas[:5]) + (f" and {len(schemas) - 5} more" if len(schemas) > 5 else "")
    superuser_url = role_url(
        port,
        Secrets.of(data_dir).passfile(SUPERUSER),
        host=HOST,
        role=SUPERUSER,
        database="postgres",
    )
    return (
        f". What the old URL wrote stays in database 'postgres' (schemas {shown}); copy a store"
        f" with `phi memory migrate --from '{superuser_url}' --to '{phi_url(data_dir, port)}'`"
    )


class LoginRefused(Exception):
    """The server refused a password (it does not match the file)."""


def connect(
    data_dir: Path, *, role: str, database: str, password: str | None
) -> psycopg.Connection[TupleRow]:
    """A connection through the server's socket (the folder only its OS user and root
    enter); no password file or `PGPASSWORD` of the environment is consulted."""
    info = running(data_dir)
    if info is None or info.port is None:
        raise PostgresServerError(f"PostgreSQL in {str(data_dir)!r} is not running")
    host = str(info.socket_dir) if info.socket_dir is not None else HOST
    return psycopg.connect(
        host=host,
        port=info.port,
        user=role,
        dbname=database,
        password=password or "",
        passfile=str(Secrets.of(data_dir).no_passfile),
        connect_timeout=10,
        autocommit=True,
    )


def superuser(
    data_dir: Path, secret: str, database: str = "postgres"
) -> psycopg.Connection[TupleRow]:
    """The superuser with its password, through the socket.

    Raises:
        LoginRefused: the server has another password than the file.
        PostgresServerError: the server cannot be reached.
    """
    try:
        return connect(data_dir, role=SUPERUSER, database=database, password=secret)
    except psycopg.OperationalError as exc:
        if "password authentication failed" in str(exc):
            raise LoginRefused from exc
        raise PostgresServerError(f"cannot reach PostgreSQL in {str(data_dir)!r}: {exc}") from exc


def recover(data_dir: Path, user: ServerUser) -> psycopg.Connection[TupleRow]:
    """Let the superuser in through the private socket alone, for the moment it takes to
    set the passwords (the server re-reads `pg_hba.conf` on SIGHUP)."""
    hba = data_dir / "pg_hba.conf"
    if hba.read_text(errors="replace") != RECOVERY_HBA:
        write_server_file(hba, RECOVERY_HBA, user)
    info = running(data_dir)
    assert info is not None
    os.kill(info.pid, signal.SIGHUP)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            return connect(data_dir, role=SUPERUSER, database="postgres", password=None)
        except psycopg.OperationalError as exc:
            if time.monotonic() > deadline:
                raise PostgresServerError(
                    f"PostgreSQL in {str(data_dir)!r} did not take its new pg_hba.conf: {exc}"
                ) from exc
            time.sleep(0.1)


def wait_closed(data_dir: Path) -> None:
    """Return once the server refuses the superuser without a password (a reload of
    `pg_hba.conf` takes effect a moment after `pg_reload_conf()` returns)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            connect(data_dir, role=SUPERUSER, database="postgres", password=None).close()
        except psycopg.OperationalError as exc:
            if "password" in str(exc):
                return
            raise PostgresServerError(
                f"cannot reach PostgreSQL in {str(data_dir)!r}: {exc}"
            ) from exc
        time.sleep(0.1)
    raise PostgresServerError(
        f"PostgreSQL in {str(data_dir)!r} still lets the superuser in without a password"
    )
