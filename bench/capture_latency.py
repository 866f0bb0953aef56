"""How long a coding-agent host waits on `python -m phi.capture`, per hook event.

    uv run --frozen python bench/capture_latency.py [--sessions 5] [--wait]

Replays the recorded Claude Code session in `tests/capture/fixtures/session-1.jsonl`
`--sessions` times (a fresh session id each time) through the hook command exactly as the
host runs it (a new process, the event on stdin), into a fresh store, and times each call
from spawn to exit: what the host waits for. By default events are queued and stored by a
background drainer; `--wait` stores each one before returning (MiniLM load and embedding
included). Each round ends with a session start, which waits for the queue and preloads:
it is reported on its own line. Prints p50 / p95 / max per event kind and overall.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

FIXTURES = Path(__file__).parent.parent / "tests" / "capture" / "fixtures"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--wait", action="store_true", help="store before returning")
    args = parser.parse_args()
    lines = (FIXTURES / "session-1.jsonl").read_text().replace("$FIXTURES", str(FIXTURES))
    events = [json.loads(line) for line in lines.splitlines() if line.strip()]
    timings: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PHI_HOME": tmp}
        command = [sys.executable, "-m", "phi.capture", "--db", f"{tmp}/memory.db"]
        if args.wait:
            command.append("--wait")
        for round_no in range(args.sessions):
            for event in [*events, {**events[0], "session_id": "next"}]:
                event = {**event, "session_id": f"{event['session_id']}-{round_no}"}
                name = event["hook_event_name"]
                started = time.perf_counter()
                subprocess.run(
                    command,
                    input=json.dumps(event),
                    text=True,
                    env=env,
                    capture_output=True,
                    check=True,
                )
                elapsed = time.perf_counter() - started
                key = "SessionStart (drain + preload)" if name == "SessionStart" else name
                timings[key].append(elapsed)
                if name != "SessionStart":
                    timings["all but SessionStart"].append(elapsed)
    mode = "--wait (store inline)" if args.wait else "default (background drain)"
    print(f"capture latency, {mode}, {args.sessions} sessions, seconds per event")
    print(f"{'event':34} {'n':>4} {'p50':>7} {'p95':>7} {'max':>7}")
    for key, values in sorted(timings.items()):
        print(
            f"{key:34} {len(values):4d} {statistics.median(values):7.3f}"
            f" {percentile(values, 0.95):7.3f} {max(values):7.3f}"
        )


if __name__ == "__main__":
    main()
