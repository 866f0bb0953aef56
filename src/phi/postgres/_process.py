"""The local server's processes: `initdb`, `pg_ctl start` and `stop`, as the server's user.

The package's own `get_server` initialises a data folder with trust authentication and,
run as root, opens every folder above it to all users; so the folder is initialised here
(`initdb` with SCRAM-SHA-256 and the superuser's generated password) and the server started
with `pg_ctl`, listening on 127.0.0.1 at a fixed port and on a socket (0700) in a folder
only the server's OS user can enter (root, who runs phi there, enters any folder).
Blocking calls: this runs at the CLI edge and in test setup.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Final, TypedDict

from phi.errors import PhiError
from phi.postgres._access import ServerUser, give_to, grant_passage, write_server_file
from phi.postgres._auth import SUPERUSER
from phi.postgres._package import (
    POSTGRES_VERSIONS,
    TARGET_POSTGRES_VERSION,
    PostgresServer,
    PostmasterInfo,
    ensure_folder_permissions,
    ensure_prefix_permissions,
    find_suitable_socket_dir,
    pgexec,
)

__all__ = [
    "HOST",
    "INSTALL",
    "LOCK",
    "START_TIMEOUT_S",
    "PostgresServerError",
    "executable",
    "initdb",
    "port_in_use",
    "running",
    "shared_buffers_mb",
    "start",
    "stop",
]

INSTALL: Final = POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION]
"""The `bin` folder of the PostgreSQL this install of the package runs."""
LOCK: Final = PostgresServer._lock
"""The package's inter-process lock: two `up` at once initialise and start a server once."""
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


def running(data_dir: Path) -> PostmasterInfo | None:
    """The server of `data_dir` from its `postmaster.pid`, if its process still runs."""
    info = PostmasterInfo.read_from_pgdata(data_dir)
    return info if info is not None and info.is_running() else None


def port_in_use(port: int) -> bool:
    """Whether something already accepts connections on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex((HOST, port)) == 0


def initdb(data_dir: Path, user: ServerUser, superuser_secret: str) -> None:
    """A new cluster whose every login needs a password from the first start on: the
    superuser's comes from a file only the server's user can read, removed at once."""
    _open_install(INSTALL, user)
    give_to(data_dir, user, mode=0o700)
    with tempfile.TemporaryDirectory(prefix="phi-initdb-") as folder:
        pwfile = Path(folder) / "pw"
        give_to(pwfile.parent, user, mode=0o700)
        grant_passage(pwfile, user)
        write_server_file(pwfile, f"{superuser_secret}\n", user)
        command = [
            str(INSTALL / "initdb"),
            "--auth=scram-sha-256",
            "--encoding=utf8",
            f"--username={SUPERUSER}",
            f"--pwfile={pwfile}",
            f"--pgdata={data_dir}",
        ]
        try:
            subprocess.run(
                command,
                **_as(user),
                check=True,
                capture_output=True,
                text=True,
                timeout=120,
                cwd=folder,
            )
        except subprocess.CalledProcessError as exc:
            raise PostgresServerError(
                f"initdb could not create a cluster in {str(data_dir)!r}: {exc.stderr.strip()}"
            ) from exc
        except (subprocess.SubprocessError, OSError) as exc:
            raise PostgresServerError(f"initdb failed in {str(data_dir)!r}: {exc}") from exc


class _RunAs(TypedDict, total=False):
    user: int
    group: int
    extra_groups: list[int]


def _as(user: ServerUser) -> _RunAs:
    """`subprocess.run` arguments that run a PostgreSQL program as the server's user, with
    its own group alone: `user=` by itself keeps root's group and supplementary groups,
    and the server would read every file open to group root."""
    if user.name is None:
        return {}
    return {"user": user.uid, "group": user.gid, "extra_groups": []}


def _open_install(bin_path: Path, user: ServerUser) -> None:
    """Let the server's user read and run the PostgreSQL install (as the package does)."""
    if user.name is None:
        return
    ensure_prefix_permissions(bin_path)
    ensure_folder_permissions(bin_path, 0o055)
    ensure_folder_permissions(bin_path.parent / "lib", 0o044)


def start(data_dir: Path, port: int, *, user: ServerUser, bin_path: Path | None = None) -> None:
    """Start the server of an initialised `data_dir` as `user` and wait until it is ready
    (`bin_path`: another install's programs, for the test of a vanished install)."""
    if port_in_use(port):
        raise PostgresServerError(
            f"port {port} on {HOST} is taken by another program; choose another with --port"
        )
    bin_path = bin_path or INSTALL
    _open_install(bin_path, user)
    grant_passage(data_dir, user)
    socket_dir = find_suitable_socket_dir(data_dir, PostgresServer.runtime_path)
    if socket_dir != data_dir:
        # A data folder too deep for a socket path: the socket goes to a folder of its own,
        # which only the server's user (and root) may enter, as the data folder itself.
        give_to(socket_dir, user, mode=0o700)
        grant_passage(socket_dir, user)
    try:
        pgexec(
            "pg_ctl",
            (
                "-w",
                "-o",
                f"-h {HOST} -p {port} -k {socket_dir} -c unix_socket_permissions=0700"
                f" -c shared_buffers={shared_buffers_mb()}MB",
                "-l",
                str(data_dir / "log"),
                "-D",
                str(data_dir),
                "start",
            ),
            bin_path=bin_path,
            **_as(user),
            timeout=START_TIMEOUT_S,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        log = data_dir / "log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
        raise PostgresServerError(f"PostgreSQL did not start ({exc}); its log:\n{tail}") from exc
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        info = running(data_dir)
        if info is not None and info.status == "ready":
            return
        time.sleep(0.2)
    raise PostgresServerError(f"PostgreSQL in {str(data_dir)!r} did not become ready")


def stop(data_dir: Path, user: ServerUser) -> None:
    """Stop the server of `data_dir` (fast: open sessions are ended)."""
    # `pg_ctl stop` signals the pid in the data folder: this install's `pg_ctl` stops a
    # server of the same major version started from another install too.
    grant_passage(data_dir, user)
    try:
        pgexec(
            "pg_ctl",
            ("-w", "-D", str(data_dir), "-m", "fast", "stop"),
            bin_path=INSTALL,
            **_as(user),
            timeout=START_TIMEOUT_S,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        raise PostgresServerError(f"PostgreSQL in {data_dir} did not stop: {exc}") from exc


def executable(pid: int | None) -> str:
    """The program a server process runs, as the system shows it ("(deleted)" when its
    file has gone), for the message that explains a restart."""
    try:
        return str(Path(f"/proc/{pid}/exe").readlink())
    except OSError:
        return "its program unknown"
