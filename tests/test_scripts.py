"""The quick start's scripts: `./scripts/start` starts only what the demo needs, and the
tests' PostgreSQL (`scripts/test-postgres`) lives in its own folder and moves off a port
another program holds, saying so once (finding 25.2)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from phi.postgres import DEFAULT_PORT, server_down, server_status
from tests.postgres.schemas import server_dir, server_url

ROOT = Path(__file__).resolve().parent.parent


def test_the_demo_starts_no_test_postgres() -> None:
    """`./scripts/start` runs `scripts/services.sh` (PostgreSQL and Redis for the network)
    and `phi sandbox run`; the pgvector server on 5442/5443 is the tests' business."""
    start = (ROOT / "scripts" / "start").read_text()
    services = (ROOT / "scripts" / "services.sh").read_text()
    assert "scripts/services.sh" in start and "phi sandbox run" in start
    for script in (start, services):
        assert "postgres up" not in script and "test-postgres" not in script.split("#")[0]
    assert "scripts/test-postgres" in (ROOT / "scripts" / "test").read_text()


def test_the_postgres_tests_run_on_their_own_server() -> None:
    """Not `phi postgres up`'s (port 5442, data in PHI_HOME), whose `public` schema the
    README's `phi memory migrate --to $url` fills: 5 PostgreSQL tests failed after it."""
    url = server_url()
    assert f":{DEFAULT_PORT}/" not in url, url
    if "PHI_TEST_POSTGRES_URL" not in os.environ:
        assert server_dir() == ROOT / ".cache" / "test-postgres"


@pytest.fixture
def data_home() -> Iterator[Path]:
    """A folder the `pgserver` user can reach (pytest's own are private to root)."""
    home = Path(tempfile.mkdtemp(prefix="phi-test-postgres-"))
    home.chmod(0o755)
    yield home
    server_down(home / "pg")
    shutil.rmtree(home)


def _free_pair() -> int:
    """A port with the next one free too, below the ephemeral range."""
    for port in range(15000 + os.getpid() % 500 * 8, 32000, 2):
        if all(_free(port + n) for n in range(2)):
            return port
    raise AssertionError("no two free ports")


def _free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_the_tests_postgres_moves_off_a_taken_port_and_is_reused(data_home: Path) -> None:
    port = _free_pair()
    env = {
        **os.environ,
        "PHI_TEST_POSTGRES_DIR": str(data_home / "pg"),
        "PHI_TEST_POSTGRES_PORT": str(port),
    }

    def script() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(ROOT / "scripts" / "test-postgres")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    with socket.socket() as other_program:
        other_program.bind(("127.0.0.1", port))
        other_program.listen()
        first = script()
    assert first.returncode == 0, first.stderr
    said = f"port {port} is taken by another program: the tests' PostgreSQL listens on {port + 1}"
    assert first.stderr.count(said) == 1, first.stderr
    url = first.stdout.strip().splitlines()[-1]
    assert re.fullmatch(rf"postgresql://\S+@127\.0\.0\.1:{port + 1}/\S+", url), url
    running = server_status(data_home / "pg")
    assert running.running and running.port == port + 1

    again = script()  # the port is free now: the running server is reused where it is
    assert again.returncode == 0, again.stderr
    assert "taken" not in again.stderr
    assert again.stdout.strip().splitlines()[-1] == url
    assert server_status(data_home / "pg").pid == running.pid
