"""The coding-memory benchmark: its metrics on hand-made contexts, its generator's guarantees,
and a short replay through a stand-in hook (the real hook is what the benchmark measures)."""

from __future__ import annotations

import dataclasses
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from bench.coding_memory.catalog import DECISIONS, PROJECTS
from bench.coding_memory.metrics import (
    MARKS,
    entries,
    estimate_tokens,
    injected_context,
    judge,
    leaks,
    percentile,
    present,
    stale,
)
from bench.coding_memory.replay import Hooks, make_checkouts, replay
from bench.coding_memory.report import markdown, summarise
from bench.coding_memory.run import judge_calls
from bench.coding_memory.scenario import build_history, check_markers

MARKERS = {"billing": ["payjet", "0.27.2"], "inventory": ["warehouse", "0.26.0"]}


def test_injected_context_reads_the_hosts_shapes() -> None:
    wrapped = {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": " a\n"}
    }
    assert injected_context(json.dumps(wrapped)) == "a"
    assert injected_context("plain text\n") == "plain text"
    assert injected_context('{"continue": true}') == ""  # control JSON adds no context
    assert injected_context("[1, 2]") == "[1, 2]"
    assert injected_context("  \n") == ""


def test_entries_join_indented_lines_and_split_at_blank_ones() -> None:
    context = "header\n- one\n  more of one\n- two\n\n  after a blank line\n"
    assert entries(context) == ["header", "- one\n  more of one", "- two", "  after a blank line"]


def test_present_needs_every_token_in_one_entry() -> None:
    context = "- pinned httpx\n- to 0.27.2\n- httpx==0.27.2 (proxy auth)"
    assert present(context, ("HTTPX", "0.27.2"))
    assert not present("- pinned httpx\n- to 0.27.2", ("httpx", "0.27.2"))
    assert not present("", ("httpx",))


def test_leaks_are_entries_with_another_projects_marker() -> None:
    context = "- Payjet retry 7250\n- warehouse sync pinned httpx 0.26.0\n- neutral line"
    assert leaks(context, "billing", MARKERS) == ["- warehouse sync pinned httpx 0.26.0"]
    assert leaks(context, "inventory", MARKERS) == ["- Payjet retry 7250"]
    assert leaks("- neutral line", "billing", MARKERS) == []


def test_stale_is_the_old_decision_unmarked_and_without_its_replacement() -> None:
    old, new = ("httpx", "0.27.2"), ("httpx", "0.28.1")
    assert stale("- pinned httpx to 0.27.2", old, new) == ["- pinned httpx to 0.27.2"]
    assert stale("- pinned httpx to 0.27.2 (superseded)", old, new) == []
    assert stale("- bumped httpx from 0.27.2 to 0.28.1", old, new) == []
    assert stale("- pinned httpx to 0.28.1", old, new) == []
    # The mark must be a word of its own: "olderly" is not "older".
    assert stale("- httpx 0.27.2 olderly", old, new) == ["- httpx 0.27.2 olderly"]


def test_sizes_and_percentiles() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcde") == 2
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.95) == 5.0
    with pytest.raises(ValueError, match="no values"):
        percentile([], 0.5)


def test_judge_and_summary() -> None:
    reversed_pairs = [("billing.httpx", ("httpx", "0.27.2"), ("httpx", "0.28.1"))]
    hit = judge(
        "- httpx 0.28.1\n- httpx 0.27.2\n- warehouse note",
        kind="need",
        project="billing",
        needs=("httpx", "0.28.1"),
        needs_key="billing.httpx-bump",
        reversed_pairs=reversed_pairs,
        markers=MARKERS,
    )
    assert (hit.recalled, hit.leaked, hit.stale) == (
        True,
        ("- warehouse note",),
        (("billing.httpx", "- httpx 0.27.2"),),
    )
    miss = judge("", kind="need", project="billing", needs=("x",), markers=MARKERS)
    quiet = judge("", kind="quiet", project="billing", needs=None, markers=MARKERS)
    assert (miss.recalled, quiet.recalled, quiet.tokens) == (False, None, 0)
    summary = summarise(
        [hit, miss, quiet],
        [("Stop", 0.05, 1.0), ("Stop", 0.15, 3.0), ("Stop", 0.10, 2.0)],
        failures=[("Stop", 2, "boom")],
    )
    assert summary["recall"] == {
        "needed": 2,
        "recalled": 1,
        "share": 0.5,
        "missed": [{"project": "billing", "needs": None}],
    }
    assert (summary["leaks"]["entries"], summary["leaks"]["contexts"]) == (1, 1)
    assert (summary["stale"]["entries"], summary["quiet"]) == (1, {"prompts": 1, "silent": 1})
    assert summary["latency_ms"]["Stop"] == {
        "n": 3,
        "p50": 100,
        "p95": 150,
        "max": 150,
        "load1_median": 2.0,
    }
    assert summary["failures"]["exit_2"] == 1
    table = markdown(summary)
    assert "| decisions recalled | 1/2 (50.0%) | ≥ 90% |" in table
    assert "| Stop | 3 | 100 | 150 | 150 | 2.00 | p50 ≤ 100 |" in table


def test_history_is_seeded_and_keeps_its_promises(tmp_path: Path) -> None:
    history = build_history(tmp_path, seed=7, routine=2)
    assert history == build_history(tmp_path, seed=7, routine=2)
    assert history.steps != build_history(tmp_path, seed=8, routine=2).steps
    check_markers(history)
    api_roots = {tmp_path / p.folder for p in PROJECTS if Path(p.folder).name == "api"}
    assert len(api_roots) == 2
    decided: set[str] = set()
    for step in history.steps:
        # Any word saying "superseded" in a context must come from phi, not from the events.
        assert not MARKS.search(json.dumps([step.payload, step.transcript])), step.payload
        prompt = step.payload.get("prompt")
        if step.payload["hook_event_name"] == "PostToolUse" and step.payload["tool_name"] == "Edit":
            decided |= {
                d.key for d in DECISIONS if step.payload["tool_input"]["new_string"] == d.after
            }
        measure = step.measure
        if measure and measure.needs:
            # Needed only after it was made, and asked for without its tokens.
            assert measure.needs in decided
            tokens = history.decisions[measure.needs].tokens
            assert not all(t.lower() in str(prompt).lower() for t in tokens)
            replaced = {old for old, _ in measure.reversed_pairs}
            assert measure.needs not in replaced
    assert decided == {d.key for d in DECISIONS}


def test_check_markers_finds_a_planted_mention(tmp_path: Path) -> None:
    history = build_history(tmp_path, seed=0, routine=0)
    first = history.steps[0]
    other = next(p for p in PROJECTS if p.key != first.project)
    planted = dataclasses.replace(first, payload={**first.payload, "note": other.markers[0]})
    with pytest.raises(ValueError, match=other.key):
        check_markers(dataclasses.replace(history, steps=(planted, *history.steps[1:])))


def test_hooks_follow_the_settings_matchers(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    group = {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}
    settings.write_text(json.dumps({"hooks": {"PostToolUse": [group]}}))
    hooks = Hooks.from_settings(settings)
    assert hooks.commands({"hook_event_name": "PostToolUse", "tool_name": "Edit"}) == [("x", 5.0)]
    assert hooks.commands({"hook_event_name": "PostToolUse", "tool_name": "Read"}) == []
    assert hooks.commands({"hook_event_name": "Stop"}) == []


def test_replay_through_a_stand_in_hook(tmp_path: Path) -> None:
    """The whole pipeline on real git checkouts: a hook that always injects inventory's pin
    is credited where that pin is needed and charged with a leak everywhere else."""
    hook = tmp_path / "hook.py"
    hook.write_text(
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        "assert event['cwd'] == os.getcwd() == os.environ['CLAUDE_PROJECT_DIR']\n"
        "if event['hook_event_name'] == 'UserPromptSubmit':\n"
        "    text = 'pinned httpx to 0.26.0 for the pool leak'\n"
        "    print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',"
        " 'additionalContext': text}}))\n"
    )
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(hook))}"
    group = {"hooks": [{"type": "command", "command": command, "timeout": 30}]}
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [group], "Stop": [group]}}))
    history = build_history(tmp_path / "home", seed=3, routine=0)
    make_checkouts(history)
    for project in PROJECTS:
        origin = subprocess.run(
            ["git", "-C", str(history.home / project.folder), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert origin.stdout.strip() == (project.remote or "")
    prompts = [
        s for s in history.steps if s.payload["hook_event_name"] in ("UserPromptSubmit", "Stop")
    ]
    needs = [s for s in prompts if s.measure and s.measure.needs]
    chosen = {id(s) for s in prompts[:12] + needs}
    short = dataclasses.replace(history, steps=tuple(s for s in history.steps if id(s) in chosen))
    calls = replay(short, Hooks.from_settings(settings), env={}, spool_dir=tmp_path / "spool")
    assert [c.exit_code for c in calls] == [0] * len(chosen)
    judged = judge_calls(short, calls)
    for judgement in judged:
        from_inventory = judgement.project == "inventory-api"
        assert bool(judgement.leaked) is not from_inventory
        if judgement.needs is not None:
            assert judgement.recalled is (judgement.needs == "inventory.httpx")
    assert any(j.recalled for j in judged)
    assert any(j.leaked for j in judged)
