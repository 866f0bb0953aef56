"""Issue 23's acceptance test: a second OS user (`nobody`) reads nothing phi keeps.

phi fills a PHI_HOME the way its commands do (a memory, a captured session, the runs
journal, the control token, the local PostgreSQL with its password files), under a folder
everyone may pass through, as a home folder is. Then `nobody` tries to read every file and
list every folder in it, and tries the PostgreSQL server by TCP and by its socket: each is
refused. Files and folders must also carry no bits for others themselves, so a PHI_HOME
that is closed does not hide a file that is open.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from phi.runtime.control import control_token
from phi.runtime.journal import RunJournal, RunRecord
from tests.postgres.servers import reserve_port, stop_for_good
from tests.security.nobody import SYSTEM_PYTHON, as_nobody, psql_as_nobody, require_root

PHI = str(Path(sys.executable).parent / "phi")

PROBE = """
import json, os, sys
said = {}
for path in json.load(sys.stdin):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            with open(path, "rb") as f:
                f.read(1)
        said[path] = "read"
    except PermissionError:
        said[path] = "refused"
    except OSError as exc:
        said[path] = f"{type(exc).__name__}: {exc}"
json.dump(said, sys.stdout)
"""
"""Run by `nobody` with the system Python: what it could open, of each path given."""
PYTHON_PROBE = [str(SYSTEM_PYTHON), "-I", "-c", PROBE]


@pytest.fixture
def home() -> Iterator[Path]:
    """A PHI_HOME inside a folder open to everyone (0755, as `/home/alice` or `/root` may
    be): nothing above PHI_HOME keeps `nobody` out."""
    require_root()
    parent = Path(tempfile.mkdtemp(prefix="phi-other-user-"))
    parent.chmod(0o755)
    yield parent / ".phi"
    stop_for_good(parent / ".phi" / "postgres")
    shutil.rmtree(parent)


def _phi(home: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run(
        [PHI, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "PHI_HOME": str(home)},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"phi {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


def _populate(home: Path, port: int) -> str:
    """Everything phi keeps, written by phi; returns the PostgreSQL URL `up` printed."""
    url = _phi(home, "postgres", "up", "--port", str(port)).strip().splitlines()[-1]
    _phi(home, "memory", "add", "alice's phone number is 555-0100", "-n", "alice")
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "prompt": "my secret"}
    _phi(home, "capture", stdin=json.dumps(prompt))
    start = {"hook_event_name": "SessionStart", "session_id": "s2", "cwd": "."}
    _phi(home, "capture", stdin=json.dumps(start))  # drains the queue before it answers
    anyio.run(
        RunJournal.at_home(home).add,
        RunRecord(
            run_id="r1",
            entry="notifications",
            started_at=datetime.now(UTC),
            seconds=1.0,
            outcome="ok",
            output="replied to alice",
            prompt_hash="0" * 64,
            system_prompt="you are phi",
        ),
    )
    control_token(home, None)
    return url


def test_nobody_reads_nothing_phi_keeps(home: Path) -> None:
    port = reserve_port()
    url = _populate(home, port)
    paths = [home]
    for folder, dirs, files in os.walk(home):
        paths += [Path(folder) / name for name in dirs + files]
    kept = {p.relative_to(home).as_posix() for p in paths}
    for expected in ("memory.db", "runs.db", "control.token", "postgres-auth/phi.pgpass"):
        assert expected in kept, sorted(kept)
    assert any(p.startswith("capture/") for p in kept), sorted(kept)
    assert "postgres/PG_VERSION" in kept

    probe = subprocess.run(
        ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *PYTHON_PROBE],
        input=json.dumps([str(p) for p in paths]),
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
        timeout=120,
        check=True,
        cwd="/",
    )
    said = json.loads(probe.stdout)
    not_refused = {path: what for path, what in said.items() if what != "refused"}
    assert not_refused == {}

    # The files themselves, not only the folder around them: nothing for group or others
    # (a folder's group bits may be the mask of the ACL that lets `pgserver` pass).
    open_to_others = {}
    for path in paths:
        mode = stat.S_IMODE(path.lstat().st_mode)
        allowed = 0o010 if path.is_dir() else 0o000
        if mode & 0o077 & ~allowed or mode & 0o007:
            open_to_others[str(path.relative_to(home))] = f"{mode:04o}"
    assert open_to_others == {}

    # The server: no role without its password, by TCP or through the socket folder.
    for role in ("postgres", "phi"):
        tcp = psql_as_nobody(f"host=127.0.0.1 port={port} user={role} dbname=postgres")
        assert tcp.returncode != 0 and "no password supplied" in tcp.stderr
        local = psql_as_nobody(f"host={home / 'postgres'} port={port} user={role}")
        assert local.returncode != 0 and "Permission denied" in local.stderr
    printed = psql_as_nobody(url)  # the URL names a password file nobody cannot read
    assert printed.returncode != 0 and "no password supplied" in printed.stderr
    assert as_nobody(["cat", str(home / "postgres-auth" / "phi.pgpass")]).returncode != 0
