"""Fixtures shared by every test, including the local AT Protocol network.

The network is one sandbox per test session. It installs itself into the project cache on
first use (Node 22, dev-env), exactly as `phi sandbox up` does, so a fresh clone's CI brings
it up unaided. If it cannot start, the fixture errors: these tests never skip.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from phi.atproto import PhiClient
from phi.atproto.sandbox import Sandbox, SandboxConfig, SandboxInfo
from phi.config import Settings
from phi.memory import Memory, MiniLMEmbedder

if os.environ.get("MUTANT_UNDER_TEST") and Path.cwd().name == "mutants":
    # Under `scripts/mutate` (mutmut runs the tests inside its `mutants/` copy): a `phi` the
    # tests start as a subprocess must import the mutated copy too, so that a mutant is
    # killed by what a user of the command would see.
    os.environ["PYTHONPATH"] = str(Path.cwd() / "src")


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """Each test gets the logging it found: `phi run`'s `configure_logging` replaces the root
    handlers and levels, and a test that calls it would otherwise blind later tests that read
    log records (caplog) or the redaction filter's output."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, [f for f in root.filters])
    disabled_below = logging.root.manager.disable
    loggers = {
        name: (lg.level, lg.propagate, lg.handlers[:], lg.disabled, lg.filters[:])
        for name, lg in logging.Logger.manager.loggerDict.items()
        if isinstance(lg, logging.Logger)
    }
    yield
    root.handlers[:], root.level, root.filters[:] = saved[0], saved[1], saved[2]
    logging.disable(disabled_below)
    for name, (level, propagate, handlers, disabled, filters) in loggers.items():
        lg = logging.getLogger(name)
        lg.level, lg.propagate, lg.disabled = level, propagate, disabled
        lg.handlers[:], lg.filters[:] = handlers, filters


@pytest.fixture(autouse=True)
def phi_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point all of phi's local state at a temporary folder. A capture hook a test runs as a
    subprocess may start a resident process (`phi.capture.resident`): it stops 5 s after
    its last request instead of the default ten minutes, so none outlives its test long."""
    home = tmp_path / "phi-home"
    home.mkdir()
    monkeypatch.setenv("PHI_HOME", str(home))
    monkeypatch.setenv("PHI_CAPTURE_RESIDENT_IDLE_S", "5")
    return home


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real embedder, loaded once for the whole run."""
    return MiniLMEmbedder()


@pytest.fixture
async def memory(tmp_path: Path, minilm: MiniLMEmbedder) -> AsyncIterator[Memory]:
    """A fresh SQLite store with the real embedder."""
    async with Memory.open(tmp_path / "memory.db", embedder=minilm) as opened:
        yield opened


TEST_PORT = int(os.environ.get("PHI_TEST_SANDBOX_PORT", "2692"))
"""Away from the default sandbox ports, so a developer's `phi sandbox up` can keep running;
`PHI_TEST_SANDBOX_PORT` moves it, so two test runs on one machine get separate networks
(ports, state folder and database schema all follow it)."""

FIRST_INSTALL_TIMEOUT = 900
"""Seconds for a test that brings the sandbox up: on a fresh clone that includes installing
Node 22 and compiling dev-env's native module (about 4 minutes on 2 cores)."""


STARTS_A_NETWORK = frozenset(
    {
        "tests/agent/test_cli.py",
        "tests/atproto/test_sandbox_cli.py",
        "tests/atproto/test_sandbox_ports.py",
        "tests/security/test_private_files.py",
        "tests/test_cli.py",
        "tests/test_readme.py",
        "tests/test_sandbox_demo.py",
        "tests/test_scripts.py",
    }
)
"""Test files that start a local network, or install or stop one, of their own."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give the tests that use the network room for the first install (pytest-timeout).
    Under `scripts/test`'s workers (pytest-xdist, `--dist loadgroup`) every test that uses
    the session's network, or starts or installs a network of its own, runs on one worker:
    one network comes up per run, and no two installs of Node or dev-env race."""
    for item in items:
        uses_network = "sandbox" in getattr(item, "fixturenames", ())
        if uses_network:
            item.add_marker(pytest.mark.timeout(FIRST_INSTALL_TIMEOUT))
        if uses_network or item.path.relative_to(config.rootpath).as_posix() in STARTS_A_NETWORK:
            item.add_marker(pytest.mark.xdist_group("network"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under `--dist loadgroup` a grouped test's id ends in `@<group>` (pytest-xdist adds it
    on the worker). pytest 9.2 silently stopped that (pytest-xdist#1386): two workers would
    each start the network on one set of ports. Stop the run, saying why, instead."""
    if node.config.getoption("dist") != "loadgroup":
        return
    lost = [i for i in ids if i.split("::")[0] in STARTS_A_NETWORK and "@" not in i]
    if lost:
        raise pytest.UsageError(
            f"pytest-xdist did not group {len(lost)} tests that share the network (first:"
            f" {lost[0]}); run without workers (-n 0) or with a pytest that it supports"
        )


def _schema(port: int) -> str:
    """The database schema of the test network on `port` (dev-env allows letters and _ only)."""
    if port == 2692:
        return "phi_test"
    return "phi_test_" + "".join(chr(ord("a") + int(d)) for d in str(port))


@pytest.fixture(scope="session")
def sandbox_home() -> Path:
    """A PHI_HOME whose `sandbox/` folder is the test network's state (stale runs get reaped)."""
    cache = Settings(_env_file=None).resolved_sandbox_cache()
    return cache / f"test-home-{TEST_PORT}"


@pytest.fixture(scope="session")
def sandbox(sandbox_home: Path) -> Iterator[Sandbox]:
    """A running local network for the whole session."""
    config = SandboxConfig(
        cache_dir=Settings(_env_file=None).resolved_sandbox_cache(),
        state_dir=sandbox_home / "sandbox",
        base_port=TEST_PORT,
        schema=_schema(TEST_PORT),
    )
    network = Sandbox(config)
    anyio.run(network.down)  # a network left over by an interrupted run
    anyio.run(network.up)
    try:
        yield network
    finally:
        anyio.run(network.down)


@pytest.fixture(scope="session")
def cast(sandbox: Sandbox) -> SandboxInfo:
    """URLs and accounts of the running network."""
    return anyio.run(sandbox.info)


@pytest.fixture
async def phi(cast: SandboxInfo) -> AsyncIterator[PhiClient]:
    """phi, logged in with its app password."""
    async with PhiClient(cast.client_config("phi")) as client:
        yield client


@pytest.fixture
async def alice(cast: SandboxInfo) -> AsyncIterator[PhiClient]:
    """alice, logged in with her app password."""
    async with PhiClient(cast.client_config("alice")) as client:
        yield client


@pytest.fixture
async def bob(cast: SandboxInfo) -> AsyncIterator[PhiClient]:
    """bob, logged in with his app password."""
    async with PhiClient(cast.client_config("bob")) as client:
        yield client


@pytest.fixture
async def operator(cast: SandboxInfo) -> AsyncIterator[PhiClient]:
    """phi's owner, logged in with their app password."""
    async with PhiClient(cast.client_config("operator")) as client:
        yield client
