"""`phi` as a child process that binds port 0 and says which port it got.

A test that picked a free port and handed it to the child raced every other program on the
machine for it (any outgoing connection may take an ephemeral port in between); the child
binding port 0 cannot lose. These helpers start the child and read its address from its log.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

PHI = str(Path(sys.executable).parent / "phi")
"""The installed `phi` console script of this environment."""

URL = r"(http://127\.0\.0\.1:\d+)"
"""A loopback base URL with its port, as phi prints it (a pattern's group for `start_phi`)."""


def start_phi(
    args: list[str],
    log: Path,
    *,
    says: str,
    ready: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `phi ARGS`, its output to `log`; return it with the first group of `says` (a
    regex, e.g. `f"control API on {URL}"`) once its log matches, and holds `ready` too."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [PHI, *args], stdout=out, stderr=out, env=dict(env if env is not None else os.environ)
        )
    deadline = time.monotonic() + timeout
    while True:
        said = log.read_text(errors="replace")
        found = re.search(says, said)
        if found is not None and (ready is None or ready in said):
            return process, found.group(1)
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise AssertionError(f"phi {' '.join(args)} did not say {says!r}:\n{said}")
        time.sleep(0.1)


def stop(process: subprocess.Popen[bytes], *, timeout: float = 10) -> int:
    """Terminate `process` (killed if it does not stop in `timeout` seconds); its exit code."""
    process.terminate()
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
