"""The local server's auth set-up against one real server for the module (`phi postgres
up` on a folder of its own): roles and passwords as `provision` leaves them, what a login
through the socket consults, the repairs `up` makes and the words it says them in.

Each test leaves the server as it found it: running, closed, passwords as in the files.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from phi.postgres import (
    PostgresServerError,
    ServerStatus,
    _login,
    rotate_password,
    server_down,
    server_status,
    server_up,
    vector_problem,
)
from phi.postgres._access import server_user
from phi.postgres._auth import HBA, RECOVERY_HBA, old_tables, provision, set_password
from phi.postgres._process import running, start
from phi.postgres.server import UnusableDataDir
from tests.postgres.servers import reserve_port, stop_for_good


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Path, int]]:
    home = Path(tempfile.mkdtemp(prefix="phi-pg-mutants-"))
    home.chmod(0o755)
    data, port = home / "pg", reserve_port()
    try:
        server_up(data, port=port)
        yield data, port
    finally:
        stop_for_good(data)
        shutil.rmtree(home)


def _secret(data: Path, role: str) -> str:
    return (Path(f"{data}-auth") / f"{role}.pgpass").read_text().strip().split(":")[4]


def _login_tcp(port: int, role: str, password: str, dbname: str = "postgres") -> psycopg.Connection:
    return psycopg.connect(
        host="127.0.0.1",
        port=port,
        user=role,
        dbname=dbname,
        password=password,
        passfile="/nonexistent",
        connect_timeout=5,
        autocommit=True,
    )


def _as_superuser(data: Path) -> psycopg.Connection:
    return _login.superuser(data, _secret(data, "postgres"))


ROLE_FLAGS = (
    "SELECT rolcanlogin, rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls"
    " FROM pg_roles WHERE rolname = 'phi'"
)


def test_provision_makes_phi_an_ordinary_role_owning_its_database_again(
    served: tuple[Path, int],
) -> None:
    data, port = served
    with _as_superuser(data) as conn:
        conn.execute("ALTER ROLE phi NOLOGIN SUPERUSER CREATEDB CREATEROLE REPLICATION BYPASSRLS")
        conn.execute("ALTER DATABASE phi OWNER TO postgres")
        provision(
            conn,
            superuser_secret=_secret(data, "postgres"),
            role_secret=_secret(data, "phi"),
        )
        assert conn.execute(ROLE_FLAGS).fetchone() == (True, False, False, False, False, False)
        owner = "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'phi'"
        assert conn.execute(owner).fetchone() == ("phi",)
    with _login_tcp(port, "phi", _secret(data, "phi"), "phi") as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("phi",)


def test_provision_creates_the_role_and_database_when_missing_and_sets_both_passwords(
    served: tuple[Path, int],
) -> None:
    data, port = served
    secrets = {"postgres": "new-superuser-secret", "phi": "new-role-secret"}
    try:
        with _as_superuser(data) as conn:
            conn.execute("DROP DATABASE phi WITH (FORCE)")
            conn.execute("DROP ROLE phi")
            provision(conn, superuser_secret=secrets["postgres"], role_secret=secrets["phi"])
            assert conn.execute(ROLE_FLAGS).fetchone() == (
                True, False, False, False, False, False,
            )  # fmt: skip
        for role, secret in secrets.items():
            with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
                _login_tcp(port, role, _secret(data, role))
            with _login_tcp(port, role, secret, "phi") as conn:
                owner = conn.execute(
                    "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'phi'"
                ).fetchone()
                assert (conn.execute("SELECT current_user").fetchone(), owner) == (
                    (role,),
                    ("phi",),
                )
    finally:
        with _login.superuser(data, secrets["postgres"]) as conn:
            provision(
                conn,
                superuser_secret=_secret(data, "postgres"),
                role_secret=_secret(data, "phi"),
            )
    # `up` makes pgvector in the new database again, and has nothing to repair.
    assert server_up(data, port=port).closed is None


def test_a_password_goes_to_the_server_as_a_scram_verifier_whatever_its_default(
    served: tuple[Path, int],
) -> None:
    data, port = served
    with _as_superuser(data) as conn:
        conn.execute("SET password_encryption = 'md5'")
        set_password(conn, "phi", _secret(data, "phi"))
        (stored,) = conn.execute(
            "SELECT rolpassword FROM pg_authid WHERE rolname = 'phi'"
        ).fetchone() or ("",)
    assert stored.startswith("SCRAM-SHA-256$") and _secret(data, "phi") not in stored
    _login_tcp(port, "phi", _secret(data, "phi"), "phi").close()
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _login_tcp(port, "phi", _secret(data, "postgres"), "phi")


def test_old_tables_names_each_schema_holding_tables_once_in_order(
    served: tuple[Path, int],
) -> None:
    data, _ = served
    with _as_superuser(data) as conn:
        try:
            for statement in (
                "CREATE SCHEMA zeta",
                "CREATE TABLE zeta.a (x int)",
                "CREATE TABLE zeta.b (x int)",
                "CREATE SCHEMA parted",
                "CREATE TABLE parted.p (x int) PARTITION BY RANGE (x)",
                "CREATE SCHEMA only_views",
                "CREATE VIEW only_views.v AS SELECT 1 AS x",
                "CREATE SEQUENCE only_views.s",
                "CREATE TABLE notes (body text)",
            ):
                conn.execute(statement)
            assert old_tables(conn) == ["parted", "public", "zeta"]
        finally:
            conn.execute("DROP SCHEMA zeta, parted, only_views CASCADE")
            conn.execute("DROP TABLE notes")
        assert old_tables(conn) == []


# -- _login: logging in through the socket, and closing the server ------------------------


def test_a_socket_login_consults_no_password_file_or_variable_of_the_environment(
    served: tuple[Path, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wait_closed` and `recover` log in without a password to learn whether the server
    still lets the superuser in: a password in the environment must not answer for them."""
    data, _ = served
    secret = _secret(data, "postgres")
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:*:postgres:{secret}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.setenv("PGPASSWORD", secret)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".pgpass").write_text(f"*:*:*:postgres:{secret}\n")
    (tmp_path / ".pgpass").chmod(0o600)
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        _login.connect(data, role="postgres", database="postgres", password=None)
    _login.wait_closed(data)  # returns: the login above was refused
    with _login.connect(data, role="postgres", database="phi", password=secret) as conn:
        assert conn.execute("SELECT current_user, current_database()").fetchone() == (
            "postgres",
            "phi",
        )
        # Through the socket, not TCP: the server sees no client address.
        assert conn.execute("SELECT inet_client_addr()").fetchone() == (None,)


def test_a_wrong_superuser_password_is_refused_as_such(served: tuple[Path, int]) -> None:
    data, _ = served
    with pytest.raises(_login.LoginRefused):
        _login.superuser(data, "not the password")
    with _login.superuser(data, _secret(data, "postgres"), "phi") as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("phi",)


def test_a_login_to_a_server_that_is_not_running_says_so(tmp_path: Path) -> None:
    with pytest.raises(PostgresServerError, match=rf"PostgreSQL in '{tmp_path}' is not running"):
        _login.superuser(tmp_path, "secret")


def test_up_finishes_closing_a_server_an_interrupted_up_left_half_closed(
    served: tuple[Path, int],
) -> None:
    """`up` killed between writing the recovery `pg_hba.conf` and phi's own: the next `up`
    finishes the work, whether the server kept running or not, and says so."""
    data, port = served
    hba = data / "pg_hba.conf"
    said = "finished closing the server: an interrupted `phi postgres up` had begun it"
    for stop_first in (False, True):
        hba.write_text(RECOVERY_HBA)
        with _as_superuser(data) as conn:
            conn.execute("SELECT pg_reload_conf()")
        if stop_first:
            server_down(data)
        status = server_up(data, port=port)
        assert (status.running, status.closed) == (True, said)
        assert hba.read_text() == HBA
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            _login.connect(data, role="postgres", database="postgres", password=None)
        assert server_up(data, port=port).closed is None


def test_the_note_on_old_data_names_five_schemas_and_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = Path("/srv/pg")
    found: list[str] = []
    monkeypatch.setattr(_login, "old_tables", lambda conn: found)
    assert _login.old_data_note(None, data, 5442) == ""  # type: ignore[arg-type]
    found[:] = ["a", "b", "c", "d", "e"]
    urls = (
        " with `phi memory migrate --from 'postgresql://postgres@127.0.0.1:5442/postgres"
        "?passfile=/srv/pg-auth/postgres.pgpass' --to 'postgresql://phi@127.0.0.1:5442/phi"
        "?passfile=/srv/pg-auth/phi.pgpass'`"
    )
    assert _login.old_data_note(None, data, 5442) == (  # type: ignore[arg-type]
        ". What the old URL wrote stays in database 'postgres' (schemas a, b, c, d, e);"
        " copy a store" + urls
    )
    found[:] = ["a", "b", "c", "d", "e", "f", "g"]
    assert _login.old_data_note(None, data, 5442) == (  # type: ignore[arg-type]
        ". What the old URL wrote stays in database 'postgres' (schemas a, b, c, d, e and 2"
        " more); copy a store" + urls
    )
    found[:] = ["a", "b", "c", "d", "e", "f"]  # one past five is counted too
    assert _login.old_data_note(None, data, 5442) == (  # type: ignore[arg-type]
        ". What the old URL wrote stays in database 'postgres' (schemas a, b, c, d, e and 1"
        " more); copy a store" + urls
    )


def test_phi_url_names_phis_role_database_and_password_file() -> None:
    assert _login.phi_url(Path("/srv/pg"), 6001) == (
        "postgresql://phi@127.0.0.1:6001/phi?passfile=/srv/pg-auth/phi.pgpass"
    )


# -- server: status, down, rotate, pgvector --------------------------------------------------


def test_the_status_of_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    data = tmp_path / "none" / ".." / "none"
    status = server_status(data, port=6002)
    assert status == ServerStatus(
        running=False,
        data_dir=tmp_path / "none",
        port=6002,
        pid=None,
        url=f"postgresql://phi@127.0.0.1:6002/phi?passfile={tmp_path}/none-auth/phi.pgpass",
    )
    assert not server_down(data)
    assert not (tmp_path / "none").exists()  # asking creates nothing
    (tmp_path / "none").mkdir()
    assert not server_down(data)  # a folder without a server
    assert not server_status(data).running


def test_the_status_of_a_running_server(served: tuple[Path, int]) -> None:
    data, port = served
    info = running(data.resolve())
    assert info is not None
    status = server_status(data, port=port + 1)  # the port it runs on wins
    assert (status.running, status.pid, status.port) == (True, info.pid, port)
    assert status.url == _login.phi_url(data.resolve(), port)


def test_rotating_with_a_superuser_password_changed_behind_phis_back_says_what_to_run(
    served: tuple[Path, int],
) -> None:
    data, port = served
    old = {role: _secret(data, role) for role in ("phi", "postgres")}
    with _as_superuser(data) as conn:
        conn.execute("ALTER ROLE postgres PASSWORD 'changed by hand'")
    try:
        with pytest.raises(PostgresServerError) as raised:
            rotate_password(data, port=port)
        assert str(raised.value) == (
            f"the superuser's password no longer matches '{data.resolve()}-auth';"
            " run `phi postgres up` (it sets the passwords from the files), then rotate"
        )
        assert {role: _secret(data, role) for role in old} == old  # nothing rotated
    finally:
        status = server_up(data, port=port)
    assert status.closed == (
        f"the superuser's password did not match '{data.resolve()}-auth'; set it from the file"
        " again"
    )


def test_rotating_a_server_whose_superuser_file_is_gone_says_to_start_it(
    served: tuple[Path, int],
) -> None:
    data, port = served
    passfile = Path(f"{data}-auth/postgres.pgpass")
    kept = passfile.read_text()
    passfile.unlink()
    try:
        with pytest.raises(PostgresServerError) as raised:
            rotate_password(data, port=port)
    finally:
        passfile.write_text(kept)
        passfile.chmod(0o600)
    assert str(raised.value) == (
        f"the PostgreSQL of '{data.resolve()}' is not running; start it with"
        " `phi postgres up` first"
    )


def test_rotating_changes_both_passwords_and_reports_the_status(
    served: tuple[Path, int],
) -> None:
    data, port = served
    old = {role: _secret(data, role) for role in ("phi", "postgres")}
    status = rotate_password(data, port=port)
    assert (status.running, status.url) == (True, _login.phi_url(data.resolve(), port))
    for role, secret in old.items():
        assert _secret(data, role) != secret
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            _login_tcp(port, role, secret)
        _login_tcp(port, role, _secret(data, role)).close()


def test_pgvector_problems_are_named_and_an_unreachable_server_is_an_error(
    served: tuple[Path, int],
) -> None:
    data, port = served
    with _as_superuser(data) as conn:
        conn.execute("CREATE DATABASE novector OWNER phi")
    try:
        url = f"postgresql://phi@127.0.0.1:{port}/novector?passfile={data}-auth/phi.pgpass"
        assert vector_problem(url) == 'permission denied to create extension "vector"'
        assert vector_problem(_login.phi_url(data, port)) is None
    finally:
        with _as_superuser(data) as conn:
            conn.execute("DROP DATABASE novector")
    closed = f"postgresql://phi@127.0.0.1:{_free_port()}/phi?connect_timeout=2"
    with pytest.raises(PostgresServerError) as raised:
        vector_problem(closed)
    assert str(raised.value).startswith(f"cannot reach PostgreSQL at {closed!r}: connection failed")


def test_a_data_folder_under_a_file_is_one_line_naming_the_reason(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(UnusableDataDir) as raised:
        server_up(blocker / "pg", port=_free_port())
    assert str(raised.value) == (
        f"cannot use '{blocker}/pg' as the PostgreSQL data folder (Not a directory);"
        " give another with --data-dir"
    )
    assert raised.value.data_dir == blocker / "pg"  # for a caller that offers another
    with pytest.raises(UnusableDataDir, match=r"is not a folder"):
        server_up(blocker, port=_free_port())


def test_recovery_waits_for_the_server_to_take_its_pg_hba_conf(
    served: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server re-reads `pg_hba.conf` some time after its SIGHUP: the superuser's
    login through the socket is tried until then. (Here the signal comes half a second
    late.) A server that never takes it is an error naming the folder."""
    data, port = served
    real_kill = os.kill

    def late_kill(pid: int, sig: int) -> None:
        threading.Timer(0.5, real_kill, (pid, sig)).start()

    monkeypatch.setattr(os, "kill", late_kill)
    started = time.monotonic()
    with _login.recover(data, server_user()) as conn:
        assert time.monotonic() - started >= 0.5
        assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
    monkeypatch.setattr(os, "kill", lambda pid, sig: None)  # a server that never reloads
    with _as_superuser(data) as conn:  # closed again, as `up` leaves it
        (data / "pg_hba.conf").write_text(HBA)
        conn.execute("SELECT pg_reload_conf()")
    _login.wait_closed(data)
    monkeypatch.setattr(_login, "START_TIMEOUT_S", 1.0)
    with pytest.raises(PostgresServerError) as raised:
        _login.recover(data, server_user())
    assert str(raised.value).startswith(
        f"PostgreSQL in {str(data)!r} did not take its new pg_hba.conf: connection failed"
    )
    monkeypatch.undo()
    status = server_up(data, port=port)
    assert status.closed == (
        "finished closing the server: an interrupted `phi postgres up` had begun it"
    )


def test_a_pg_hba_conf_that_is_not_text_is_replaced_by_phis(served: tuple[Path, int]) -> None:
    data, port = served
    hba = data / "pg_hba.conf"
    hba.write_bytes(b"\xff\xfe host all all 0.0.0.0/0 trust \x9c\n")
    status = server_up(data, port=port)
    assert status.closed is not None
    assert status.closed.startswith("closed the logins an older phi left open")
    assert hba.read_text() == HBA
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        _login.connect(data, role="postgres", database="postgres", password=None)


def test_a_stopped_server_never_starts_on_an_older_phis_trust(
    served: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older phi's `pg_hba.conf` (trust for every local user) must not serve a single
    login: a stopped server starts on the recovery file instead; phi's own file is kept."""
    data, port = served
    hba = data / "pg_hba.conf"
    started_on: list[str] = []

    def recording(*args: Any, **kwargs: Any) -> None:
        started_on.append(hba.read_text())
        start(*args, **kwargs)

    monkeypatch.setattr(_login, "start", recording)
    with _as_superuser(data) as conn:  # what the old URL wrote, in database postgres
        conn.execute("CREATE SCHEMA old_store; CREATE TABLE old_store.rows (x int)")
    server_down(data)
    hba.write_text("local all all trust\nhost all all 127.0.0.1/32 trust\n")
    try:
        status = server_up(data, port=port)
    finally:
        with _as_superuser(data) as conn:
            conn.execute("DROP SCHEMA old_store CASCADE")
    auth = f"{data.resolve()}-auth"
    assert status.closed == (
        "closed the logins an older phi left open to every local user (trust in"
        f" {str(data.resolve() / 'pg_hba.conf')!r}): every connection needs a password now,"
        " and phi works as role 'phi' (not a superuser) in database 'phi'. What the old URL"
        " wrote stays in database 'postgres' (schemas old_store); copy a store with `phi"
        f" memory migrate --from 'postgresql://postgres@127.0.0.1:{port}/postgres?passfile="
        f"{auth}/postgres.pgpass' --to 'postgresql://phi@127.0.0.1:{port}/phi?passfile="
        f"{auth}/phi.pgpass'`"
    )
    server_down(data)
    assert server_up(data, port=port).closed is None
    assert started_on == [RECOVERY_HBA, HBA]
    assert hba.read_text() == HBA


def test_a_socket_folder_apart_an_older_phi_left_open_is_closed_on_up() -> None:
    """A data folder too deep for a socket path has its socket in a folder apart, which an
    older phi left 0777: `up` on the running server closes it to the server's user."""
    home = Path(tempfile.mkdtemp(prefix="phi-pg-deep-"))
    home.chmod(0o755)
    data, port = home / ("d" * 100) / "pg", reserve_port()
    try:
        server_up(data, port=port)
        info = running(data.resolve())
        assert info is not None and info.socket_dir is not None
        assert info.socket_dir != data.resolve()
        info.socket_dir.chmod(0o777)
        assert server_up(data, port=port).closed is None
        assert info.socket_dir.stat().st_mode & 0o777 == 0o700
    finally:
        stop_for_good(data)
        shutil.rmtree(home)


def test_waiting_for_the_close_gives_up_while_the_superuser_still_gets_in(
    served: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`wait_closed` asks as the superuser, of database postgres, without a password: on the
    recovery file (which trusts just that) it waits its time out and says so."""
    data, port = served
    (data / "pg_hba.conf").write_text(RECOVERY_HBA)
    try:
        with _as_superuser(data) as conn:
            conn.execute("SELECT pg_reload_conf()")
        deadline = time.monotonic() + 30
        while True:  # a reload takes effect a moment after pg_reload_conf() returns
            try:
                _login.connect(data, role="postgres", database="postgres", password=None).close()
                break
            except psycopg.OperationalError:
                assert time.monotonic() < deadline, "the recovery file was never taken"
                time.sleep(0.1)
        monkeypatch.setattr(_login, "START_TIMEOUT_S", 0.5)
        with pytest.raises(PostgresServerError) as raised:
            _login.wait_closed(data)
        assert str(raised.value) == (
            f"PostgreSQL in {str(data)!r} still lets the superuser in without a password"
        )
    finally:
        monkeypatch.undo()
        server_up(data, port=port)
