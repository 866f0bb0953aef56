"""`phi postgres up | status | down` on a data folder of its own (a real server)."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from typer.testing import CliRunner

from phi.cli import app
from phi.postgres import (
    PostgresServerError,
    server_down,
    server_status,
    server_up,
    vector_problem,
)
from phi.postgres.server import (
    POSTGRES_VERSIONS,
    TARGET_POSTGRES_VERSION,
    _start,
    shared_buffers_mb,
)
from tests.postgres.schemas import server_url


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def data_home() -> Iterator[Path]:
    """A folder the `pgserver` user can reach: pytest keeps its own temporary folders
    private to root (and resets them at every session start), so not under `tmp_path`."""
    home = Path(tempfile.mkdtemp(prefix="phi-pg-test-"))
    home.chmod(0o755)
    yield home
    shutil.rmtree(home)


def test_up_is_idempotent_serves_pgvector_on_loopback_and_down_stops_it(data_home: Path) -> None:
    data, port = data_home / "pg", _free_port()
    runner = CliRunner()
    try:
        result = runner.invoke(
            app, ["postgres", "up", "--data-dir", str(data), "--port", str(port)]
        )
        assert result.exit_code == 0, result.output
        url = result.output.strip().splitlines()[-1]
        assert url == f"postgresql://postgres@127.0.0.1:{port}/postgres"
        first = server_status(data, port=port)
        assert first.running and first.pid is not None
        assert server_up(data, port=port).pid == first.pid  # a second `up` starts nothing
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
    finally:
        assert server_down(data)
    assert not server_status(data, port=port).running
    assert not server_down(data)
    stopped = runner.invoke(app, ["postgres", "status", "--data-dir", str(data)])
    assert stopped.exit_code == 1 and "not running" in stopped.output


def test_a_taken_port_is_refused_with_its_number(data_home: Path) -> None:
    port = int(server_url().rsplit(":", 1)[1].split("/")[0])  # the test server's port
    with pytest.raises(PostgresServerError, match=rf"port {port} on 127\.0\.0\.1 is taken"):
        server_up(data_home / "pg", port=port)


def test_up_restarts_a_server_whose_install_has_gone(data_home: Path) -> None:
    """A server started from an install that was then deleted (a removed virtual
    environment) runs on but cannot load pgvector in new sessions: `up` notices by
    loading it, and restarts the server from the current install."""
    data, port = data_home / "pg", _free_port()
    url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    install = data_home / "old-install"
    shutil.copytree(POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION].parent, install)
    data.mkdir(mode=0o700)
    try:
        _start(data.resolve(), port, bin_path=install / "bin")
        assert vector_problem(url) is None  # creates the extension while its file is there
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
        assert f"restarted it from {POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]}" in said
        assert result.output.strip().splitlines()[-1] == url
        after = server_status(data, port=port)
        assert after.running and after.pid != before.pid
        assert vector_problem(url) is None
        assert server_up(data, port=port).restarted is None  # nothing left to repair
    finally:
        server_down(data)


@pytest.mark.parametrize(
    ("memory_mb", "expected"),
    [(512, 128), (4096, 1024), (16384, 4096), (65536, 4096)],
)
def test_shared_buffers_are_a_quarter_of_memory(memory_mb: int, expected: int) -> None:
    assert shared_buffers_mb(memory_mb) == expected
