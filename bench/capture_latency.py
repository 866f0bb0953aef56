"""How long a coding-agent host waits on phi's capture hook, per hook event.

    uv run --frozen python bench/capture_latency.py [--runs 30] [--settings PATH]
        [--bytecode-cache]

Runs each hook exactly as the shipped settings run it (`examples/claude-code/settings.json`:
the event's own `command`, through `sh -c`, with `PHI_PYTHON` set to this interpreter and
the event on stdin) in a fresh `PHI_HOME`, from inside a scratch git repository, and times
each call from spawn to exit: what the host waits for. The store is first given a few
earlier sessions of the project, so a prompt has memories to rank; the first session start
is timed on its own (the resident process is not up: it loads the store and the model);
then each event kind is run `--runs` times, interleaved, with the resident process warm.

Prints p50 / p95 / max per event kind, with the machine's load (1-minute `os.getloadavg`)
when that kind's runs began and ended, and whether each kind meets its target; and, as the
floor under every hook, a bare interpreter (`sh -c '"$PHI_PYTHON" -c pass'`) timed the same
way, interleaved with the hooks.

Python's bytecode cache is used as the environment says: with `PYTHONDONTWRITEBYTECODE`
set, every hook compiles what it imports from source. `--bytecode-cache` measures an
ordinary install instead (the variable unset, the cache in a scratch folder through
`PYTHONPYCACHEPREFIX`, so the source tree is left alone). The header says which.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parent.parent
SETTINGS = ROOT / "examples" / "claude-code" / "settings.json"
TARGETS_MS = {  # kind -> (p50, p95) in milliseconds; None: no target
    "UserPromptSubmit": (300, 800),
    "SessionStart": (1000, None),
    "PreToolUse": (100, None),
    "PostToolUse": (100, None),
    "Stop": (100, None),
}
BARE = "python -c pass"
"""The reference row: the interpreter alone, started as the hooks are."""
EARLIER = [
    "The HTTP client times out against the payments API since the httpx 0.28 upgrade.",
    "Pin httpx to 0.27.2: 0.28 dropped the proxies argument PaymentsClient passes.",
    "Rename the CLI flag --verbose to --debug everywhere.",
    "Session tokens expire after 30 minutes; make the expiry configurable.",
    "Move the retry policy into one place: three attempts with exponential backoff.",
]
PROMPTS = [
    "the payments requests hang again after the library upgrade: what did we do?",
    "how many retry attempts do we make, and where is that set?",
    "add a dark mode toggle to the settings page",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def commands(settings: Path) -> dict[str, str]:
    hooks = json.loads(settings.read_text())["hooks"]
    return {name: groups[0]["hooks"][0]["command"] for name, groups in hooks.items()}


def event(kind: str, session: str, cwd: Path, n: int) -> dict[str, Any]:
    base: dict[str, Any] = {"hook_event_name": kind, "session_id": session, "cwd": str(cwd)}
    tool = {"tool_name": "Bash", "tool_use_id": f"toolu_{session}_{n}"}
    call = {"command": f"pytest -q tests/test_{n % 7}.py", "description": "run the tests"}
    if kind == "UserPromptSubmit":
        return {**base, "prompt": PROMPTS[n % len(PROMPTS)]}
    if kind == "PreToolUse":
        return {**base, **tool, "tool_input": call}
    if kind == "PostToolUse":
        response = {"stdout": f"{n} passed in 0.4s", "exit_code": 0}
        return {**base, **tool, "tool_input": call, "tool_response": response}
    if kind == "Stop":
        return {**base, "stop_hook_active": False, "last_assistant_message": f"Done ({n})."}
    return {**base, "source": "startup"}


def timed(command: str, payload: dict[str, Any], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload),
        text=True,
        env=env,
        cwd=cwd,
        capture_output=True,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{payload['hook_event_name']} exited {done.returncode}: {done.stderr}")
    return took


def residents(spool: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().decode().split("\0")
            except OSError:
                continue
            if "--resident" in argv and str(spool) in argv:
                found.append(int(entry.name))
    return found


def wait_until_stored(spool: Path, within: float = 120.0) -> None:
    queue, offset = spool / "spool.jsonl", spool / "spool.offset"
    deadline = time.monotonic() + within
    while queue.exists() and queue.stat().st_size and time.monotonic() < deadline:
        if offset.exists() and offset.read_text().strip() == str(queue.stat().st_size):
            return
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="runs per event kind")
    parser.add_argument("--settings", type=Path, default=SETTINGS)
    parser.add_argument(
        "--bytecode-cache", action="store_true", help="cache bytecode, as an ordinary install"
    )
    args = parser.parse_args()
    shipped = commands(args.settings)
    shipped[BARE] = '"${PHI_PYTHON:-python3}" -c pass'
    kinds = [k for k in TARGETS_MS if k in shipped] + [BARE]
    timings: dict[str, list[float]] = defaultdict(list)
    loads: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="phi-latency-") as tmp:
        home, repo = Path(tmp) / "home", Path(tmp) / "api"
        (repo / ".git").mkdir(parents=True)
        (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@example.org:a/api\n')
        env = {**os.environ, "PHI_HOME": str(home), "PHI_PYTHON": sys.executable}
        env.pop("PHI_CAPTURE_PROJECT", None)
        if args.bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        cached = "PYTHONDONTWRITEBYTECODE" not in env
        spool = home / "capture"
        try:
            cold = timed(shipped["SessionStart"], event("SessionStart", "s0", repo, 0), env, repo)
            cold_load = os.getloadavg()[0]
            for n, text in enumerate(EARLIER):
                prompt = {**event("UserPromptSubmit", f"earlier-{n}", repo, n), "prompt": text}
                timed(shipped["UserPromptSubmit"], prompt, env, repo)
            wait_until_stored(spool)
            for n in range(args.runs):
                for kind in kinds:
                    if n == 0 or n == args.runs - 1:
                        loads[kind].append(os.getloadavg()[0])
                    payload = event(kind, f"run-{n // 10}", repo, n)
                    timings[kind].append(timed(shipped[kind], payload, env, repo))
        finally:
            for pid in residents(spool):
                os.kill(pid, 15)
    print(f"hook command: {shipped.get('PreToolUse', '-')}")
    print(
        f"python {sys.version.split()[0]}, bytecode cache "
        + ("on" if cached else "off (PYTHONDONTWRITEBYTECODE is set: each hook compiles)")
    )
    print(
        f"cold SessionStart (resident process starting): {cold * 1000:.0f} ms, load {cold_load:.2f}"
    )
    print(f"{'event':<18} {'runs':>4} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}  load   target")
    for kind in kinds:
        values = [t * 1000 for t in timings[kind]]
        p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
        load = "-".join(f"{v:.2f}" for v in loads[kind])
        verdict = "(reference)"
        if kind in TARGETS_MS:
            want50, want95 = TARGETS_MS[kind]
            met = p50 <= want50 and (want95 is None or p95 <= want95)
            target = f"p50<={want50}" + (f" p95<={want95}" if want95 else "")
            verdict = f"{target} {'met' if met else 'MISSED'}"
        print(
            f"{kind:<18} {len(values):>4} {p50:>7.0f} {p95:>7.0f} {max(values):>7.0f}"
            f"  {load}  {verdict}"
        )


if __name__ == "__main__":
    main()
