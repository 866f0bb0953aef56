"""Acting as a second OS user (`nobody`) in tests: phi's files and its PostgreSQL must
refuse it. The test process runs as root (CI does) and drops to `nobody` in a child with
`setpriv`, as another user on the machine would be."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

import pytest

from phi.postgres._process import INSTALL

__all__ = ["PSQL", "as_nobody", "psql_as_nobody", "require_root"]

PSQL: Final = INSTALL / "psql"
"""The bundled client (readable by everyone: the install is opened for `pgserver`)."""

SYSTEM_PYTHON: Final = Path("/usr/bin/python3")
"""A Python `nobody` may run (the project's virtual environment may be closed to it)."""


def require_root() -> None:
    """Dropping to another user takes root; a test that cannot is an error, not a pass."""
    if os.geteuid() != 0:
        pytest.fail("this test acts as `nobody` through setpriv: run it as root (CI does)")


def as_nobody(
    argv: list[str], *, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` as `nobody` with a bare environment (no HOME, no password variables)."""
    require_root()
    return subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", **(env or {})},
        timeout=60,
        check=False,
        cwd="/",
    )


def psql_as_nobody(
    conninfo: str, query: str = "SELECT 1", *, password: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`nobody` runs `query` at `conninfo` with the bundled `psql`, which never prompts."""
    env = {"PGCONNECT_TIMEOUT": "5"}
    if password is not None:
        env["PGPASSWORD"] = password
    return as_nobody([str(PSQL), "-w", "-X", "-A", "-t", "-c", query, conninfo], env=env)
