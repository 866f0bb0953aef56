"""`phi postgres up | status | down | rotate-password` on a data folder of its own (a real
server), and finding 1 of issue 23: the server phi starts is closed to other OS users."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.postgres import (
    PostgresServerError,
    rotate_password,
    server_down,
    server_status,
    server_up,
    vector_problem,
)
from phi.postgres._access import server_user
from phi.postgres._auth import HBA
from phi.postgres._package import PostgresServer, pgexec
from phi.postgres._process import INSTALL, running, shared_buffers_mb, start
from tests.postgres.schemas import server_url
from tests.postgres.servers import PORTS, reserve_port, stop_every_server_under
from tests.security.nobody import as_nobody, psql_as_nobody

ROOT = Path(__file__).parent.parent.parent


@pytest.fixture
def data_home() -> Iterator[Path]:
    """A folder everyone may pass through, as a home folder usually is: what keeps another
    user out must be the server's own doing, not a closed folder above it (pytest keeps its
    temporary folders private to root, so not under `tmp_path`)."""
    home = Path(tempfile.mkdtemp(prefix="phi-pg-test-"))
    home.chmod(0o755)
    yield home
    stop_every_server_under(home)
    shutil.rmtree(home)


@pytest.fixture
def served(data_home: Path) -> Iterator[tuple[Path, int]]:
    """A server `phi postgres up` started on a data folder of its own; stopped afterwards."""
    data, port = data_home / "pg", reserve_port()
    server_up(data, port=port)
    try:
        yield data, port
    finally:
        server_down(data)


def _url(data: Path, port: int) -> str:
    return f"postgresql://phi@127.0.0.1:{port}/phi?passfile={data}-auth/phi.pgpass"


def _secret(data: Path, role: str) -> str:
    return (Path(f"{data}-auth") / f"{role}.pgpass").read_text().strip().split(":")[4]


def _login(port: int, role: str, password: str) -> psycopg.Connection:
    """`role` over TCP with exactly `password` (no password file consulted)."""
    return psycopg.connect(
        host="127.0.0.1",
        port=port,
        user=role,
        dbname="postgres",
        password=password,
        passfile="/nonexistent",
        connect_timeout=5,
    )


def test_up_is_idempotent_serves_pgvector_on_loopback_and_down_stops_it(data_home: Path) -> None:
    data, port = data_home / "pg", reserve_port()
    runner = CliRunner()
    try:
        result = runner.invoke(
            app, ["postgres", "up", "--data-dir", str(data), "--port", str(port)]
        )
        assert result.exit_code == 0, result.output
        url = result.output.strip().splitlines()[-1]
        assert url == _url(data, port)
        assert "older phi" not in result.output  # a new folder had nothing to close
        first = server_status(data, port=port)
        assert first.running and first.pid is not None and first.url == url
        again = server_up(data, port=port)
        assert (again.pid, again.closed, again.restarted) == (first.pid, None, None)
        with psycopg.connect(url) as conn:
            (version,) = conn.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            ).fetchone() or ("",)
            (buffers_mb,) = conn.execute(
                "SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'"
            ).fetchone() or (0,)
        assert version.startswith("0.8")
        assert buffers_mb == shared_buffers_mb() > 128  # not PostgreSQL's own 128 MB
        with pytest.raises(PostgresServerError, match=r"already runs on '127\.0\.0\.1' port"):
            server_up(data, port=port + 1 if port < 65535 else port - 1)
        # The same facts for scripts.
        args = ["--data-dir", str(data), "--port", str(port), "--json"]
        up_json = runner.invoke(app, ["postgres", "up", *args])
        assert up_json.exit_code == 0, up_json.output
        assert json.loads(up_json.stdout) == {
            "running": True,
            "pid": first.pid,
            "data_dir": str(data),
            "url": url,
            "notes": [],
        }
        status_json = runner.invoke(app, ["postgres", "status", *args])
        assert json.loads(status_json.stdout)["url"] == url
    finally:
        assert server_down(data)
    assert not server_status(data, port=port).running
    assert not server_down(data)
    stopped = runner.invoke(app, ["postgres", "status", "--data-dir", str(data)])
    assert stopped.exit_code == 1 and "not running" in stopped.output
    stopped = runner.invoke(app, ["postgres", "status", "--data-dir", str(data), "--json"])
    assert stopped.exit_code == 1 and json.loads(stopped.stdout)["running"] is False
    down_json = runner.invoke(app, ["postgres", "down", "--data-dir", str(data), "--json"])
    assert json.loads(down_json.stdout) == {"stopped": False}


def test_a_taken_port_is_refused_with_its_number(data_home: Path) -> None:
    port = urlsplit(server_url()).port  # the test server's port
    with pytest.raises(PostgresServerError, match=rf"port {port} on 127\.0\.0\.1 is taken"):
        server_up(data_home / "pg", port=port or 5442)


def test_up_restarts_a_server_whose_install_has_gone(data_home: Path) -> None:
    """A server started from an install that was then deleted (a removed virtual
    environment) runs on but cannot load pgvector in new sessions: `up` notices by
    loading it, and restarts the server from the current install."""
    data, port = data_home / "pg", reserve_port()
    url = _url(data, port)
    install = data_home / "old-install"
    shutil.copytree(INSTALL.parent, install)
    try:
        server_up(data, port=port)
        server_down(data)
        start(data.resolve(), port, user=server_user(), bin_path=install / "bin")
        assert vector_problem(url) is None  # loads the copy's vector.so while it is there
        before = server_status(data, port=port)
        shutil.rmtree(install)
        problem = vector_problem(url)
        assert problem is not None and "vector" in problem
        result = CliRunner().invoke(
            app, ["postgres", "up", "--data-dir", str(data), "--port", str(port)]
        )
        assert result.exit_code == 0, result.output
        said = " ".join(result.output.split())
        assert f"(pid {before.pid}, {install}/bin/postgres (deleted)) could not load" in said
        assert f"restarted it from {INSTALL}" in said
        assert result.output.strip().splitlines()[-1] == url
        after = server_status(data, port=port)
        assert after.running and after.pid != before.pid
        assert vector_problem(url) is None
        assert server_up(data, port=port).restarted is None  # nothing left to repair
    finally:
        server_down(data)


def test_another_os_user_is_refused_at_the_socket_and_on_tcp(served: tuple[Path, int]) -> None:
    """Finding 1: `nobody` connected as the `postgres` superuser (trust on 127.0.0.1, a
    0777 socket folder) and ran `COPY ... TO PROGRAM`. Now neither role lets it in without
    the password, nor with a wrong one, and it cannot reach the socket or read the files."""
    data, port = served
    for role in ("postgres", "phi"):
        tcp = f"host=127.0.0.1 port={port} user={role} dbname=postgres"
        refused = psql_as_nobody(tcp, "COPY (SELECT 1) TO PROGRAM 'id'")
        assert refused.returncode != 0 and "no password supplied" in refused.stderr
        wrong = psql_as_nobody(tcp, password="guess")
        assert wrong.returncode != 0
        assert f'password authentication failed for user "{role}"' in wrong.stderr
        local = psql_as_nobody(f"host={data} port={port} user={role} dbname=postgres")
        assert local.returncode != 0 and "Permission denied" in local.stderr
    for secret in ("phi.pgpass", "postgres.pgpass"):
        read = as_nobody(["cat", f"{data}-auth/{secret}"])
        assert read.returncode != 0 and "Permission denied" in read.stderr
    # Not only the folders: the server itself asks root for a password too.
    with pytest.raises(psycopg.OperationalError, match="no password supplied"):
        _login(port, "postgres", "")
    with psycopg.connect(_url(data, port)) as conn:  # the printed URL works as written
        assert conn.execute("SELECT current_user").fetchone() == ("phi",)


def test_the_server_runs_as_its_user_with_its_group_alone(served: tuple[Path, int]) -> None:
    """Started by root, PostgreSQL kept group root (`subprocess.run(user=...)` changes the
    user only): the server, and any program its superuser ran, read what group root may."""
    data, _ = served
    info = running(data.resolve())
    assert info is not None
    status = Path(f"/proc/{info.pid}/status").read_text().splitlines()
    ids = {line.split(":")[0]: line.split()[1:] for line in status if ":" in line}
    user = server_user()
    assert ids["Uid"] == [str(user.uid)] * 4
    assert ids["Gid"] == [str(user.gid)] * 4
    assert ids["Groups"] == ([] if user.name is not None else ids["Groups"])


def test_phi_works_as_a_role_that_cannot_run_programs(served: tuple[Path, int]) -> None:
    data, port = served
    with psycopg.connect(_url(data, port), autocommit=True) as conn:
        assert conn.execute(
            "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = 'phi'"
        ).fetchone() == (False, False, False)
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="external program"):
            conn.execute("COPY (SELECT 1) TO PROGRAM 'id'")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT pg_read_file('/etc/passwd')")
        # What the memory store does: its own schema, tables with vectors, HNSW.
        conn.execute("CREATE SCHEMA store_check")
        conn.execute("CREATE TABLE store_check.v (e vector(3))")
        conn.execute("CREATE INDEX ON store_check.v USING hnsw (e vector_cosine_ops)")
        conn.execute("INSERT INTO store_check.v VALUES ('[1,2,3]')")
        assert vector_problem(_url(data, port)) is None


def test_rotate_password_sets_new_ones_and_the_url_keeps_working(
    served: tuple[Path, int],
) -> None:
    data, port = served
    old = {role: _secret(data, role) for role in ("phi", "postgres")}
    result = CliRunner().invoke(
        app, ["postgres", "rotate-password", "--data-dir", str(data), "--port", str(port)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.strip().splitlines()[-1] == _url(data, port)
    for role, secret in old.items():
        assert _secret(data, role) != secret
        assert os.stat(f"{data}-auth/{role}.pgpass").st_mode & 0o777 == 0o600
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            _login(port, role, secret)
        _login(port, role, _secret(data, role)).close()
    with psycopg.connect(_url(data, port)) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    assert server_up(data, port=port).closed is None  # the files and the server agree


def test_rotate_password_of_a_stopped_server_says_to_start_it(data_home: Path) -> None:
    result = CliRunner().invoke(
        app, ["postgres", "rotate-password", "--data-dir", str(data_home / "pg")]
    )
    assert result.exit_code == 1
    assert "is not running; start it with `phi postgres up` first" in result.output
    with pytest.raises(PostgresServerError, match="not running"):
        rotate_password(data_home / "pg")


def _old_trust_folder(data: Path, port: int, *, leave_running: bool) -> None:
    """A data folder as phi left it before finding 1 (the package's `initdb --auth=trust`,
    TCP on 127.0.0.1), holding a table written through the old superuser URL."""
    data.mkdir(mode=0o700)
    server = PostgresServer(data, cleanup_mode=None)
    server.ensure_pgdata_inited()
    pgexec(
        "pg_ctl",
        (
            "-w",
            "-o",
            f"-h 127.0.0.1 -p {port} -k {data}",
            "-l",
            f"{data}/log",
            "-D",
            f"{data}",
            "start",
        ),
        bin_path=INSTALL,
        user=server.system_user,
        timeout=30,
    )
    old_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    with psycopg.connect(old_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE notes (body text)")
        conn.execute("INSERT INTO notes VALUES ('kept')")
    # The hole itself: another OS user is the superuser and may run programs.
    hole = psql_as_nobody(f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
    assert hole.returncode == 0, hole.stderr
    if not leave_running:
        server_down(data)


@pytest.mark.parametrize("was_running", [True, False], ids=["running", "stopped"])
def test_an_old_trust_data_folder_is_closed_on_next_up(data_home: Path, was_running: bool) -> None:
    data, port = data_home / "pg", reserve_port()
    try:
        _old_trust_folder(data, port, leave_running=was_running)
        result = CliRunner().invoke(
            app, ["postgres", "up", "--data-dir", str(data), "--port", str(port)]
        )
        assert result.exit_code == 0, result.output
        said = " ".join(result.output.split())
        assert "closed the logins an older phi left open to every local user" in said
        assert "What the old URL wrote stays in database 'postgres' (schemas public)" in said
        assert result.output.strip().splitlines()[-1] == _url(data, port)
        assert (data / "pg_hba.conf").read_text() == HBA
        refused = psql_as_nobody(f"host=127.0.0.1 port={port} user=postgres dbname=postgres")
        assert refused.returncode != 0 and "no password supplied" in refused.stderr
        with psycopg.connect(_url(data, port)) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("phi",)
        with _login(port, "postgres", _secret(data, "postgres")) as conn:
            assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]
        assert server_up(data, port=port).closed is None  # closed once, quiet after
    finally:
        server_down(data)


def test_a_superuser_password_changed_behind_phis_back_is_set_from_the_file(
    served: tuple[Path, int],
) -> None:
    data, port = served
    with _login(port, "postgres", _secret(data, "postgres")) as conn:
        conn.execute("ALTER ROLE postgres PASSWORD 'changed by hand'")
        conn.commit()
    status = server_up(data, port=port)
    assert status.closed is not None and "did not match" in status.closed
    _login(port, "postgres", _secret(data, "postgres")).close()
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        _login(port, "postgres", "changed by hand")
    assert (data / "pg_hba.conf").read_text() == HBA


def test_a_password_file_others_can_read_is_refused_in_one_line(
    served: tuple[Path, int],
) -> None:
    data, port = served
    passfile = Path(f"{data}-auth/phi.pgpass")
    passfile.chmod(0o644)
    result = CliRunner().invoke(
        app, ["postgres", "up", "--data-dir", str(data), "--port", str(port)]
    )
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"'{passfile}' holds a secret and other users can access it (mode 0644)" in said
    assert f"run `chmod 600 {passfile}`" in said
    assert "Traceback" not in result.output


def test_a_socket_folder_apart_from_a_deep_data_folder_is_closed_to_others(
    data_home: Path,
) -> None:
    """A data folder too deep for a socket path puts the socket in a folder of its own,
    which the package made 0777; now only the server's user (and root) may enter it."""
    data, port = data_home / ("d" * 100) / "pg", reserve_port()
    try:
        server_up(data, port=port)
        info = running(data.resolve())
        assert info is not None and info.socket_dir is not None
        assert info.socket_dir != data.resolve()
        mode = info.socket_dir.stat()
        assert (mode.st_mode & 0o777, mode.st_uid) == (0o700, server_user().uid)
        local = psql_as_nobody(f"host={info.socket_dir} port={port} user=postgres")
        assert local.returncode != 0 and "Permission denied" in local.stderr
    finally:
        server_down(data)


def test_a_data_folder_in_a_private_home_serves_and_others_stay_out(data_home: Path) -> None:
    """PHI_HOME is 0700: the server's OS user (`pgserver` under root) is let through it by
    an ACL entry of its own, where the package opened it (and `/root`) to everyone. A
    `chmod 700` in between (phi closes PHI_HOME on every command) does not stop `down`/`up`."""
    home = data_home / "home"
    home.mkdir(mode=0o700)
    data, port = home / "postgres", reserve_port()
    try:
        server_up(data, port=port)
        listed = as_nobody(["ls", str(home)])
        assert listed.returncode != 0 and "Permission denied" in listed.stderr
        home.chmod(0o700)
        assert server_down(data)
        home.chmod(0o700)
        again = server_up(data, port=port)
        assert again.running and again.closed is None
        with psycopg.connect(_url(data, port)) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
        assert stat.S_IMODE(home.stat().st_mode) & 0o007 == 0
    finally:
        server_down(data)


@pytest.mark.parametrize(
    ("memory_mb", "expected"),
    [(512, 128), (4096, 1024), (16384, 4096), (65536, 4096)],
)
def test_shared_buffers_are_a_quarter_of_memory(memory_mb: int, expected: int) -> None:
    assert shared_buffers_mb(memory_mb) == expected


def test_a_data_folder_that_cannot_be_made_is_one_line(data_home: Path) -> None:
    blocker = data_home / "a-file"
    blocker.write_text("not a folder")
    result = CliRunner().invoke(
        app, ["postgres", "up", "--data-dir", str(blocker / "pg"), "--port", str(reserve_port())]
    )
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"cannot use '{blocker}/pg' as the PostgreSQL data folder (Not a directory)" in said
    assert "Traceback" not in result.output


def test_a_reserved_port_is_kept_from_other_test_processes_and_other_programs() -> None:
    """PostgreSQL cannot bind port 0: the tests' servers get a port `reserve_port` holds for
    the test process, below the ephemeral ports the kernel hands out meanwhile."""
    ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = reserve_port()
    assert port in PORTS and PORTS.stop <= ephemeral
    only = range(port, port + 1)
    refused = f"no free port in {port}-{port}: all reserved or taken"
    asks = (
        f"from tests.postgres.servers import reserve_port; reserve_port(range({port}, {port + 1}))"
    )
    other = subprocess.run(
        [sys.executable, "-c", asks], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert other.returncode == 1 and refused in other.stderr, other.stderr
    with pytest.raises(RuntimeError, match=refused):
        reserve_port(only)  # nor twice to this one
    with socket.create_server(("127.0.0.1", 0)) as listening:
        taken = listening.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"no free port in {taken}-{taken}"):
            reserve_port(range(taken, taken + 1))  # another program listens there
