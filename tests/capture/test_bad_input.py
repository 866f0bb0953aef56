"""Bad hook input gets one line on stderr and exit 1, never a traceback (finding 11).

Exit 1, not 2: Claude Code reads a hook's exit 2 as "block this": it would stop the tool
call, erase the prompt or keep the agent from stopping. The queue is left as it was.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from phi.capture import MAX_EVENT_BYTES

QUEUED = b'{"namespace": "agent-sessions", "payload": "{}", "event": "e1"}\n'
"""An event already waiting in the queue: bad input must leave it as it was."""


def stop(session: str, extra: str = "") -> bytes:
    return f'{{"hook_event_name": "Stop", "session_id": {session}{extra}}}'.encode()


CASES = {
    "nested-array": (b"[" * 100_000, "nested over 200 levels"),
    "nested-in-event": (stop('"s"', ', "tool_input": ' + "[" * 100_000), "nested over 200"),
    "nested-just-over": (stop('"s"', ', "tool_input": ' + "[" * 300 + "]" * 300), "nested over"),
    "not-utf-8": (b'{"hook_event_name": "Stop", "session_id": "s\xff"}', "not UTF-8"),
    "lone-surrogate": (stop('"s"', ', "prompt": "\\ud800"'), "lone surrogate"),
    "long-number": (stop('"s"', ', "n": ' + "7" * 5000), "number of over 4300 digits"),
    "empty": (b"", "hook event is empty"),
    "blanks": (b" \n\t ", "hook event is empty"),
    "blank-session": (stop('"   "'), "blank session_id"),
    "zero-width-session": (stop('"\\u200b"'), "blank session_id"),
    "ideographic-space-session": (stop('"\\u3000\\t"'), "blank session_id"),
    "session-not-a-string": (stop('["s"]'), "session_id must be a string"),
    "huge": (b" " * (MAX_EVENT_BYTES + 1) + stop('"s"'), "over the limit of"),
}


def run(command: list[str], stdin: bytes, home: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        env={**os.environ, "PHI_HOME": str(home), "LC_ALL": "C.UTF-8"},
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("case", CASES)
def test_bad_hook_input_gets_one_line_and_exit_1(case: str, tmp_path: Path) -> None:
    stdin, says = CASES[case]
    home = tmp_path / "home"
    queue = home / "capture" / "spool.jsonl"
    queue.parent.mkdir(parents=True)
    queue.write_bytes(QUEUED)
    done = run([sys.executable, "-m", "phi.capture", "--db", str(tmp_path / "m.db")], stdin, home)
    err = done.stderr.decode()
    assert (done.returncode, done.stdout) == (1, b""), err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("phi capture: ")
    assert says in err
    assert queue.read_bytes() == QUEUED
    assert not (tmp_path / "m.db").exists()


def test_the_phi_cli_refuses_bad_input_the_same_way(tmp_path: Path) -> None:
    phi = str(Path(sys.executable).parent / "phi")
    done = run([phi, "capture", "--db", str(tmp_path / "m.db")], b"[" * 100_000, tmp_path)
    assert (done.returncode, done.stderr.decode()) == (
        1,
        "phi capture: hook event is nested over 200 levels deep\n",
    )
    done = run([phi, "capture", "--db", str(tmp_path / "m.db")], CASES["not-utf-8"][0], tmp_path)
    assert done.returncode == 1
    assert "not UTF-8" in done.stderr.decode()
    assert not (tmp_path / "capture").exists()
