"""The coding-memory development benchmark: does the next session know what the last decided?

    uv run python bench/coding_memory/run.py [--seed N] [--routine N] [--json]

Builds seeded multi-session histories of five checkouts (two named `api` with different
remotes, one without a remote), replays them through the hook command registered in
`examples/claude-code/settings.json` (one process per event, event JSON on stdin, a fresh
`PHI_HOME` and SQLite store), and reports: the share of needed decisions present in the
context injected at the prompt that needs them, entries from another project, reversed
decisions shown as current, injected size, and hook latency per event with the load
average. `--routine` scales the routine work per session (the default 2 makes about 520
hook calls, 4 to 5 minutes at load 10 on two cores; 3 makes about 650).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make `bench.coding_memory` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.coding_memory.metrics import Judgement, injected_context, judge
from bench.coding_memory.replay import HookCall, Hooks, hook_env, make_checkouts, replay
from bench.coding_memory.report import markdown, summarise
from bench.coding_memory.scenario import History, build_history, check_markers

from phi.private import private_opener

REPO = Path(__file__).resolve().parents[2]
DEFAULT_SETTINGS = REPO / "examples" / "claude-code" / "settings.json"


def judge_calls(
    history: History, calls: list[HookCall], *, dump: Path | None = None
) -> list[Judgement]:
    """One judgement per measured step: the contexts of all its hook processes together
    (written with their judgements as JSON lines to `dump` when given)."""
    contexts: dict[int, list[str]] = {}
    for call in calls:
        if call.step.measure is not None and call.exit_code == 0:
            contexts.setdefault(id(call.step), []).append(injected_context(call.stdout))
    markers: dict[str, list[str]] = {p.key: list(p.markers) for p in history.projects}
    for session, project in history.sessions.items():
        markers[project] += [session, session[:8]]
    judgements = []
    lines: list[dict[str, object]] = []
    for step in history.steps:
        measure = step.measure
        if measure is None:
            continue
        context = "\n\n".join(c for c in contexts.get(id(step), []) if c)
        pairs = [
            (old, history.decisions[old].tokens, history.decisions[new].tokens)
            for old, new in measure.reversed_pairs
        ]
        needs = history.decisions[measure.needs].tokens if measure.needs else None
        context = context.replace(str(history.home), "~")
        judgement = judge(
            context,
            kind=measure.kind,
            project=step.project,
            needs=needs,
            needs_key=measure.needs,
            reversed_pairs=pairs,
            markers=markers,
        )
        judgements.append(judgement)
        lines.append(
            {
                "prompt": step.payload.get("prompt"),
                "context": context,
                **dataclasses.asdict(judgement),
            }
        )
    if dump:
        with open(dump, "w", encoding="utf-8", opener=private_opener) as handle:
            handle.writelines(json.dumps(line) + "\n" for line in lines)
    return judgements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--routine", type=int, default=2, help="routine tasks per session")
    parser.add_argument("--settings", type=Path, default=DEFAULT_SETTINGS, help="host hooks")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep", type=Path, help="replay under this folder and keep it")
    parser.add_argument("--dump", type=Path, help="write each judged context here (JSON lines)")
    args = parser.parse_args()
    if args.routine < 0:
        parser.error(f"--routine must be 0 or more, not {args.routine}")
    hooks = Hooks.from_settings(args.settings)
    with tempfile.TemporaryDirectory(prefix="phi-bench-", ignore_cleanup_errors=True) as scratch:
        base = args.keep.resolve() if args.keep else Path(scratch)
        history = build_history(base / "home", seed=args.seed, routine=args.routine)
        check_markers(history)
        make_checkouts(history)
        phi_home = base / "phi-home"
        load_start = os.getloadavg()
        started = time.monotonic()
        done = [0]

        def progress(call: HookCall) -> None:
            done[0] += 1
            if done[0] % 100 == 0:
                print(f"... {done[0]} hook calls", file=sys.stderr)

        calls = replay(
            history,
            hooks,
            env=hook_env(phi_home),
            spool_dir=phi_home / "capture",
            on_call=progress,
        )
        wall = time.monotonic() - started
        summary = summarise(
            judge_calls(history, calls, dump=args.dump),
            [(c.event, c.seconds, c.load1) for c in calls],
            failures=[
                (c.event, c.exit_code, (c.stderr.strip().splitlines() or [""])[0][:300])
                for c in calls
                if c.exit_code != 0
            ],
        )
    summary = {
        "seed": args.seed,
        "routine": args.routine,
        "steps": len(history.steps),
        "hook_calls": len(calls),
        "wall_s": round(wall, 1),
        "load_start": [round(v, 2) for v in load_start],
        "load_end": [round(v, 2) for v in os.getloadavg()],
        "settings": str(args.settings),
        "not_registered": dict(
            Counter(
                s.payload["hook_event_name"] for s in history.steps if not hooks.commands(s.payload)
            )
        ),
        **summary,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(
        f"coding memory: seed {args.seed}, {summary['steps']} events, {len(calls)} hook calls"
        f" in {wall:.0f} s; load {summary['load_start'][0]:.2f} -> {summary['load_end'][0]:.2f}\n"
    )
    print(markdown(summary))


if __name__ == "__main__":
    main()
