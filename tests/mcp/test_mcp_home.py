"""`phi mcp` under an MCP client: a filtered environment, the store named by `--home`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PHI = str(Path(sys.executable).parent / "phi")


def test_phi_mcp_finds_its_store_by_home_without_the_callers_environment(tmp_path: Path) -> None:
    home = tmp_path / "team-home"
    bare = tmp_path / "bare-user"
    bare.mkdir()
    # What an MCP client passes: no PHI_HOME, a HOME of its own; stdin closes at once, so the
    # stdio server ends after its start line.
    result = subprocess.run(
        [PHI, "mcp", "--home", str(home)],
        env={"PATH": "/usr/bin:/bin", "HOME": str(bare)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert f"phi mcp serves the memory at {home / 'memory.db'}" in result.stderr, result.stderr
    assert (home / "memory.db").exists()
    assert not (bare / ".phi").exists()


def test_phi_mcp_never_prints_a_database_password(tmp_path: Path) -> None:
    result = subprocess.run(
        [PHI, "mcp", "--db", "postgresql://phi:hunter2-secret@127.0.0.1:1/phi"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "hunter2-secret" not in result.stderr + result.stdout
