"""Start, stop and inspect the local network: one launcher process per state folder.

The launcher (`launcher.mjs`) runs detached in its own session so `phi sandbox up` can return
while the network keeps running; its pid, log and cast file live in the state folder. The
launcher writes the cast file only when the network and its hook are ready, so "cast file
present and hook healthy" is the readiness test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import anyio
import httpx

from phi.atproto.errors import SandboxNotRunning, SandboxStartFailed
from phi.atproto.sandbox._cast import SandboxInfo, cast_env
from phi.atproto.sandbox._install import Toolchain, ensure_installed
from phi.atproto.sandbox._ports import DEFAULT_BASE_PORT, MOVES, schema_for, taken
from phi.config import Settings
from phi.private import private_dir, private_opener, write_private

__all__ = ["Sandbox", "SandboxConfig", "SandboxStatus", "wait_for_indexing"]

_LAUNCHER_MARK = "launcher.mjs"

_LAUNCHERS: dict[int, subprocess.Popen[bytes]] = {}
"""Launchers this process started, by pid, kept for the life of the process so they are
reaped by `_stop_pid`, not warned about by `Popen.__del__` while still running: a network
outlives the `Sandbox` object that started it (`phi sandbox up` returns while it runs)."""


@dataclass(frozen=True, kw_only=True)
class SandboxConfig:
    """Where the sandbox installs, keeps its state and listens."""

    cache_dir: Path
    """Project-local install cache (Node 22, `@atproto/dev-env`)."""
    state_dir: Path
    """Pid file, launcher log and cast file of one running network."""
    base_port: int = DEFAULT_BASE_PORT
    """PLC on `base_port`, PDS on +1, AppView on +2, the indexing hook on +3."""
    postgres_url: str = "postgres://postgres@127.0.0.1:5432/postgres"
    """The AppView's database; the network uses its own schemas in it."""
    redis_host: str = "127.0.0.1:6379"
    """Redis `host:port` for the AppView."""
    schema: str | None = None
    """Suffix of the PostgreSQL schemas this network owns (dropped on every start). `None`:
    named after the base port (`schema_for`), and then the ports may move: when another
    program holds one of the four, `Sandbox.up` takes the next free block and says so, and
    the schema follows, so two networks never share (and drop) each other's schemas. A fixed
    schema keeps its ports: a moved network could not make it unique."""
    start_timeout: float = 180.0
    """Seconds to wait for the network to come up."""

    @classmethod
    def from_settings(cls, settings: Settings) -> SandboxConfig:
        """The sandbox `phi sandbox ...` runs, as configured by `PHI_SANDBOX_*`."""
        return cls(
            cache_dir=settings.resolved_sandbox_cache(),
            state_dir=settings.home / "sandbox",
            base_port=settings.sandbox_port,
            postgres_url=settings.sandbox_postgres_url,
            redis_host=settings.sandbox_redis_host,
        )

    @property
    def ports(self) -> dict[str, int]:
        """Each service's port."""
        b = self.base_port
        return {"plc": b, "pds": b + 1, "appview": b + 2, "hook": b + 3}

    @property
    def schema_name(self) -> str:
        """The schema suffix in use: `schema`, or the one named after the base port."""
        return self.schema if self.schema is not None else schema_for(self.base_port)


@dataclass(frozen=True, kw_only=True)
class SandboxStatus:
    """What `phi sandbox status` reports."""

    state: Literal["running", "stopped", "unhealthy"]
    """`unhealthy`: the process lives but its hook does not answer."""
    pid: int | None
    """The launcher's pid, when one is recorded and alive."""
    info: SandboxInfo | None
    """URLs and accounts, when running."""


PORTS_RELEASE_S: Final = 20.0
"""How long a network pinned to its ports waits for a stopped one to release them."""


def _alive(pid: int) -> bool:
    """Whether `pid` is a live launcher (not a zombie, not a recycled pid)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap our own exited child so it stops looking alive
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in {"Z", "X"} and _LAUNCHER_MARK.encode() in cmdline


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


class Sandbox:
    """A real local AT Protocol network (PLC, PDS, AppView) run by `@atproto/dev-env`.

    Example:
        ```python
        sandbox = Sandbox(SandboxConfig.from_settings(settings))
        info = await sandbox.up()  # installs on first use, then starts in seconds
        await sandbox.wait_for_indexing()
        await sandbox.down()
        ```
    """

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config

    @property
    def _pid_file(self) -> Path:
        return self.config.state_dir / "launcher.pid"

    @property
    def cast_file(self) -> Path:
        """The file with URLs, handles, passwords and app passwords of the running network."""
        return self.config.state_dir / "cast.json"

    @property
    def log_file(self) -> Path:
        """The launcher's log."""
        return self.config.state_dir / "launcher.log"

    def _recorded_pid(self) -> int | None:
        try:
            pid = int(self._pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid) else None

    async def _healthy(self, info: SandboxInfo) -> bool:
        try:
            async with httpx.AsyncClient(timeout=2.0) as http:
                return (await http.get(f"{info.hook_url}/health")).status_code == 200
        except httpx.HTTPError:
            return False

    async def status(self) -> SandboxStatus:
        """Whether the network runs, and its URLs and accounts when it does."""
        pid = self._recorded_pid()
        if pid is None:
            return SandboxStatus(state="stopped", pid=None, info=None)
        try:
            info = SandboxInfo.read(self.cast_file)
        except (OSError, ValueError):
            return SandboxStatus(state="unhealthy", pid=pid, info=None)
        if not await self._healthy(info):
            return SandboxStatus(state="unhealthy", pid=pid, info=info)
        return SandboxStatus(state="running", pid=pid, info=info)

    async def info(self) -> SandboxInfo:
        """The running network's cast file.

        Raises:
            SandboxNotRunning: Nothing runs from this state folder.
        """
        current = await self.status()
        if current.state != "running" or current.info is None:
            raise SandboxNotRunning(str(self.config.state_dir))
        return current.info

    async def install(self) -> Toolchain:
        """Install Node 22 and `@atproto/dev-env` into the cache; a no-op when done before."""
        return await ensure_installed(self.config.cache_dir)

    async def up(self, *, say: Callable[[str], None] | None = None) -> SandboxInfo:
        """Start the network, installing what is missing first; idempotent.

        Args:
            say: Told, once, when another program holds the configured ports and the
                network starts on the next free ones (see `SandboxConfig.schema`).

        Returns:
            URLs and accounts of the running network (also in `cast_file`; the URLs carry
            the ports it really listens on).

        Raises:
            SandboxInstallFailed: Node or dev-env could not be installed.
            SandboxStartFailed: The network did not come up (ports taken, no PostgreSQL...).
        """
        current = await self.status()
        if current.state == "running" and current.info is not None:
            return current.info
        if current.state == "unhealthy":
            await self.down()
        toolchain = await self.install()
        config = await self._free_ports(say)
        proc = await self._spawn(toolchain, config)
        try:
            return await self._wait_ready(proc)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._stop_pid(proc.pid, graceful=False)
            raise

    async def _first_taken(self, config: SandboxConfig) -> tuple[str, int] | None:
        for service, port in config.ports.items():
            if await taken(port):
                return service, port
        return None

    async def _free_ports(self, say: Callable[[str], None] | None) -> SandboxConfig:
        """The configuration to start with: this one, or (when its ports are taken and its
        schema may follow them) a copy on the next block of four free ports."""
        config = self.config
        busy = await self._first_taken(config)
        # A network pinned to its ports (a schema of its own: the tests') that was stopped just
        # before, by `down` or by an interrupted run, can hold them a few seconds after its
        # launcher has gone: wait for them before saying they are taken.
        deadline = time.monotonic() + (PORTS_RELEASE_S if config.schema is not None else 0)
        while busy is not None and time.monotonic() < deadline:
            await anyio.sleep(0.5)
            busy = await self._first_taken(config)
        if busy is None:
            return config
        service, port = busy
        if config.schema is None and config.base_port + 4 * MOVES + 3 <= 65535:
            for step in range(1, MOVES + 1):
                moved = dataclasses.replace(config, base_port=config.base_port + 4 * step)
                if await self._first_taken(moved) is None:
                    if say is not None:
                        first, last = moved.base_port, moved.base_port + 3
                        say(
                            f"port {port} ({service}) is taken by another program: the network "
                            f"runs on ports {first}-{last} instead (PDS {moved.ports['pds']})"
                        )
                    return moved
        raise SandboxStartFailed(
            f"port {port} ({service}) is already in use; stop what listens there "
            "(`phi sandbox down`) or choose other ports with PHI_SANDBOX_PORT",
            "",
        )

    async def _spawn(self, toolchain: Toolchain, config: SandboxConfig) -> subprocess.Popen[bytes]:
        state = self.config.state_dir
        tmp = state / "tmp"
        private_dir(state)
        self.cast_file.unlink(missing_ok=True)
        if tmp.exists():
            await anyio.to_thread.run_sync(_rmtree, tmp)
        private_dir(tmp)
        ports = config.ports
        env = dict(os.environ)
        env.update(
            PHI_SANDBOX_POSTGRES_URL=config.postgres_url,
            PHI_SANDBOX_SCHEMA=config.schema_name,
            PHI_SANDBOX_PLC_PORT=str(ports["plc"]),
            PHI_SANDBOX_PDS_PORT=str(ports["pds"]),
            PHI_SANDBOX_APPVIEW_PORT=str(ports["appview"]),
            PHI_SANDBOX_HOOK_PORT=str(ports["hook"]),
            PHI_SANDBOX_CAST_FILE=str(self.cast_file),
            PHI_SANDBOX_CAST=cast_env(),
            REDIS_HOST=config.redis_host,
            # The PDS keeps its SQLite files and blobs under the temp folder: keep them in
            # the state folder so every start begins clean and nothing leaks into /tmp.
            TMPDIR=str(tmp),
            NODE_ENV="development",
        )

        def start() -> subprocess.Popen[bytes]:
            with open(self.log_file, "wb", opener=private_opener) as log:
                return subprocess.Popen(
                    [str(toolchain.node), str(toolchain.launcher_dir / _LAUNCHER_MARK)],
                    cwd=toolchain.launcher_dir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    # What the launcher writes (the cast file with the accounts' passwords,
                    # the PDS's databases under TMPDIR) is its owner's alone, like ours.
                    umask=0o077,
                )

        proc = await anyio.to_thread.run_sync(start)
        _LAUNCHERS[proc.pid] = proc
        write_private(self._pid_file, str(proc.pid), sync=False)
        return proc

    async def _wait_ready(self, proc: subprocess.Popen[bytes]) -> SandboxInfo:
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SandboxStartFailed(
                    f"the launcher exited with code {proc.returncode}", _tail(self.log_file)
                )
            if self.cast_file.exists():
                info = SandboxInfo.read(self.cast_file)
                if await self._healthy(info):
                    return info
            await anyio.sleep(0.25)
        raise SandboxStartFailed(
            f"not ready after {self.config.start_timeout:.0f} s", _tail(self.log_file)
        )

    async def wait_for_indexing(self) -> None:
        """Wait until the AppView has indexed every write made so far.

        The AppView indexes asynchronously: a reply written milliseconds after its parent can
        be indexed first and produce no notification. Call this between dependent writes.

        Raises:
            SandboxNotRunning: Nothing runs from this state folder.
        """
        info = await self.info()
        await wait_for_indexing(info.hook_url)

    async def down(self) -> bool:
        """Stop the network. Returns whether one was running."""
        pid = self._recorded_pid()
        if pid is None:
            self._pid_file.unlink(missing_ok=True)
            self.cast_file.unlink(missing_ok=True)
            return False
        try:
            info = SandboxInfo.read(self.cast_file)
            async with httpx.AsyncClient(timeout=5.0) as http:
                await http.post(f"{info.hook_url}/shutdown")
        except (OSError, ValueError, httpx.HTTPError):
            pass  # not ready or not answering: the signals below stop it
        await self._stop_pid(pid, graceful=True)
        return True

    async def _stop_pid(self, pid: int, *, graceful: bool) -> None:
        steps: list[tuple[signal.Signals | None, float]] = [
            (signal.SIGTERM, 10.0),
            (signal.SIGKILL, 5.0),
        ]
        if graceful:
            steps.insert(0, (None, 20.0))  # the hook's /shutdown closes the network cleanly
        for sig, grace in steps:
            if sig is not None and _alive(pid):
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    break
            deadline = time.monotonic() + grace
            # Another process's exit has no event to wait on: poll.
            while _alive(pid) and time.monotonic() < deadline:  # noqa: ASYNC110
                await anyio.sleep(0.1)
            if not _alive(pid):
                break
        child = _LAUNCHERS.pop(pid, None)
        if child is not None:
            await anyio.to_thread.run_sync(child.wait)
        self._pid_file.unlink(missing_ok=True)
        self.cast_file.unlink(missing_ok=True)


async def wait_for_indexing(hook_url: str, *, within: float = 60.0) -> None:
    """Ask the launcher's loopback hook to run dev-env's `network.processAll()`.

    Args:
        hook_url: `SandboxInfo.hook_url`.
        within: Seconds to wait for the AppView to catch up.
    """
    async with httpx.AsyncClient(timeout=within) as http:
        response = await http.post(f"{hook_url}/process-all")
        response.raise_for_status()


def _rmtree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
