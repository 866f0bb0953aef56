"""Replay a `History` through the hook command as Claude Code runs it.

The checkouts are real git repositories (with `origin` where the project has a remote), so
phi derives each project's identity as it would on a developer's machine. Each hook call is
one process: the command registered for the event in the host's settings file, run by
`bash -c` in the session's folder with the event JSON on stdin and `PHI_PYTHON` set to this
interpreter; only events and tools the settings register are called, as the host does.
Between sessions the replay waits until the capture queue is stored, as the minutes between
two real sessions would; that wait is not timed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.coding_memory.scenario import History, Step

__all__ = ["HookCall", "Hooks", "hook_env", "make_checkouts", "replay", "settle"]

_GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.invalid"]
SETTLE_TIMEOUT_S = 180.0
"""The longest the replay waits for the queue between sessions before going on."""


@dataclass(frozen=True, kw_only=True)
class HookCall:
    """One hook process the host ran."""

    step: Step
    event: str
    seconds: float
    """Wall time from spawn to exit: what the host waits for."""
    load1: float
    """The 1-minute load average just before the call."""
    exit_code: int
    stdout: str
    stderr: str


@dataclass(frozen=True, kw_only=True)
class Hooks:
    """The commands a host's settings file registers, by event."""

    by_event: dict[str, list[tuple[str, str, float]]]
    """event -> [(matcher, command, timeout seconds)]."""

    @classmethod
    def from_settings(cls, path: Path) -> Hooks:
        """Read Claude Code's `hooks` section from the settings file at `path`."""
        try:
            settings = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise SystemExit(f"cannot read hook settings {str(path)!r}: {exc}") from None
        by_event: dict[str, list[tuple[str, str, float]]] = {}
        for event, groups in settings.get("hooks", {}).items():
            for group in groups:
                for hook in group.get("hooks", []):
                    if hook.get("type") == "command":
                        by_event.setdefault(event, []).append(
                            (group.get("matcher", ""), hook["command"], hook.get("timeout", 60))
                        )
        if not by_event:
            raise SystemExit(f"no command hooks in {str(path)!r}")
        return cls(by_event=by_event)

    def commands(self, payload: dict[str, Any]) -> list[tuple[str, float]]:
        """The commands the host runs for `payload`, with their timeouts."""
        tool = payload.get("tool_name")
        found = []
        for matcher, command, timeout in self.by_event.get(payload["hook_event_name"], []):
            if tool is None or matcher in ("", "*") or re.fullmatch(matcher, tool):
                found.append((command, float(timeout)))
        return found


def make_checkouts(history: History) -> None:
    """Create each project's folder as a git repository with one commit and its remote."""
    for project in history.projects:
        root = history.home / project.folder
        for module in project.modules:
            (root / module).parent.mkdir(parents=True, exist_ok=True)
            (root / module).write_text(f"# {Path(module).name}\n", encoding="utf-8")
        if project.subdir:
            (root / project.subdir).mkdir(parents=True, exist_ok=True)
        git = ["git", "-C", str(root)]
        subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, *_GIT_ID, "commit", "-q", "-m", "start"], check=True)
        if project.remote:
            subprocess.run([*git, "remote", "add", "origin", project.remote], check=True)


def replay(
    history: History,
    hooks: Hooks,
    *,
    env: dict[str, str],
    spool_dir: Path,
    on_call: Callable[[HookCall], None] | None = None,
) -> list[HookCall]:
    """Run every step's hooks in order; returns one `HookCall` per process run."""
    calls: list[HookCall] = []
    previous: str | None = None
    for step in history.steps:
        if previous is not None and step.session != previous:
            settle(spool_dir)
        previous = step.session
        _append_transcript(step)
        for command, timeout in hooks.commands(step.payload):
            call = _run(step, command, timeout, env)
            calls.append(call)
            if on_call:
                on_call(call)
    settle(spool_dir)
    return calls


def settle(spool_dir: Path, *, timeout_s: float = SETTLE_TIMEOUT_S) -> bool:
    """Wait until nothing is queued and no drainer holds the queue; False on timeout."""
    from phi.capture.spool import Spool

    spool = Spool(directory=spool_dir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not spool.path.exists() or spool.pending() == 0:
            lock = spool_dir / "drain.lock"
            if not lock.exists() or _lock_free(lock):
                return True
        time.sleep(0.1)
    return False


def _lock_free(lock: Path) -> bool:
    with lock.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def _append_transcript(step: Step) -> None:
    if not step.transcript:
        return
    path = Path(step.payload["transcript_path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for line in step.transcript:
            handle.write(json.dumps(line) + "\n")


def _run(step: Step, command: str, timeout: float, env: dict[str, str]) -> HookCall:
    load1 = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(step.payload),
            text=True,
            cwd=step.payload["cwd"],
            env={**env, "CLAUDE_PROJECT_DIR": _project_dir(step)},
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        code, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = -1, "", f"timed out after {timeout:g} s: {exc}"
    return HookCall(
        step=step,
        event=step.payload["hook_event_name"],
        seconds=time.perf_counter() - started,
        load1=load1,
        exit_code=code,
        stdout=out,
        stderr=err,
    )


def _project_dir(step: Step) -> str:
    # Claude Code sets this to the folder it was started in: the session's cwd here.
    return str(step.payload["cwd"])


def hook_env(phi_home: Path) -> dict[str, str]:
    """The environment of every hook: this interpreter as `PHI_PYTHON`, a fresh `PHI_HOME`,
    and no inherited store URL that would send the replay to another database."""
    env = {k: v for k, v in os.environ.items() if k not in ("PHI_MEMORY_URL", "PHI_HOME")}
    return {**env, "PHI_PYTHON": sys.executable, "PHI_HOME": str(phi_home)}
