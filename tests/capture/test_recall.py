"""Recall on every prompt: a later session's paraphrased question gets the earlier decision,
from its own project only, and nothing when nothing is relevant.

Events go through `run_hook` as `python -m phi.capture` runs it (`recall` on, namespace from
the event's folder); the last event of each step is run with `wait`, so it stores the queue
and answers in this process, with the real MiniLM embedder. The resident process, which
answers in the same way without `wait`, has its own tests (`test_resident.py`).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from phi.capture import HookOptions, _run, run_hook
from phi.capture.hooks import apply_event, parse_event
from phi.capture.project import PROJECT_ENV
from phi.capture.recall import (
    CANDIDATES,
    MIN_SCORE,
    SMOOTH_TYPES,
    STRONG_SCORE,
    prompt_context,
)
from phi.memory import Memory

FIRST, SECOND, THIRD, ELSEWHERE = "aaaa1111-s1", "bbbb2222-s2", "cccc3333-s3", "dddd4444-s4"


def repository(root: Path, url: str) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {url}\n')
    return root


def prompt(session: str, cwd: Path, text: str) -> dict[str, Any]:
    return {
        "hook_event_name": "UserPromptSubmit",
        "session_id": session,
        "cwd": str(cwd),
        "prompt": text,
    }


def bash(
    session: str, cwd: Path, use: str, command: str, why: str, out: str
) -> list[dict[str, Any]]:
    base = {"session_id": session, "cwd": str(cwd), "tool_name": "Bash", "tool_use_id": use}
    call = {"command": command, "description": why}
    return [
        {**base, "hook_event_name": "PreToolUse", "tool_input": call},
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_input": call,
            "tool_response": {"stdout": out, "exit_code": 0},
        },
    ]


def hook(event: dict[str, Any], options: HookOptions) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_hook(io.BytesIO(json.dumps(event).encode()), options, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def replay(events: list[dict[str, Any]], options: HookOptions) -> tuple[int, str, str]:
    """Queue every event as the host fires them; the last one stores the queue."""
    for event in events[:-1]:
        assert hook(event, options) == (0, "", "")
    return hook(events[-1], replace(options, wait=True))


def context(out: str, event: str) -> str:
    answer = json.loads(out)
    assert list(answer) == ["hookSpecificOutput"]
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    text: str = answer["hookSpecificOutput"]["additionalContext"]
    return text


@pytest.fixture
def api(tmp_path: Path) -> Path:
    return repository(tmp_path / "one" / "api", "git@github.com:acme/api.git")


@pytest.fixture
def web(tmp_path: Path) -> Path:
    # The same folder name, another repository: another project.
    return repository(tmp_path / "two" / "api", "https://github.com/acme/web.git")


@pytest.fixture
def options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HookOptions:
    monkeypatch.delenv(PROJECT_ENV, raising=False)
    # Without `wait` an event asks or nudges the resident process; here the last event of each
    # step stores the queue instead, so no process is started.
    monkeypatch.setattr(_run, "nudge", lambda resident: None)
    monkeypatch.setattr(_run, "ask", lambda resident, request, **_: None)
    return HookOptions(
        spool_dir=tmp_path / "capture", db=str(tmp_path / "memory.db"), namespace=None, recall=True
    )


PIN = "Pin httpx to 0.27.2: 0.28 dropped the proxies argument PaymentsClient passes"
LOOKALIKE = "Pin httpx to 0.25.0: the legacy CDN proxy of the web front end needs it"


@pytest.fixture
def remembered(api: Path, web: Path, options: HookOptions) -> HookOptions:
    first = [
        {"hook_event_name": "SessionStart", "session_id": FIRST, "cwd": str(api)},
        prompt(
            FIRST,
            api / "src",
            "The HTTP client keeps timing out against the payments API since we upgraded"
            " httpx to 0.28. Find out why and fix it.",
        ),
        *bash(
            FIRST, api, "t1", "uv add 'httpx==0.27.2'", PIN, " - httpx==0.28.1\n + httpx==0.27.2"
        ),
        prompt(FIRST, api, "Also rename the CLI flag --verbose to --debug everywhere."),
    ]
    other = [
        prompt(ELSEWHERE, web, "The web build fails behind the CDN proxy after the upgrade."),
        *bash(ELSEWHERE, web, "t9", "npm pin httpx 0.25.0", LOOKALIKE, "pinned"),
    ]
    assert replay([*first, *other], options)[0] == 0
    return options


def test_a_later_paraphrased_prompt_gets_the_decision_with_when_and_which_session(
    api: Path, remembered: HookOptions
) -> None:
    question = "payments requests hang again after the library upgrade - what did we do last time?"
    code, out, err = hook(prompt(SECOND, api, question), replace(remembered, wait=True))
    assert (code, err) == (0, "")
    text = context(out, "UserPromptSubmit")
    assert f"decision: run Bash ({PIN})" in text
    lines = [line for line in text.splitlines() if line.startswith("- [")]
    assert lines and all(
        re.match(r"- \[\d{4}-\d\d-\d\d \d\d:\d\d UTC, session aaaa1111\] ", line) for line in lines
    )
    # Fenced as a record, not instructions; the other project's look-alike never appears.
    assert text.startswith("phi remembers this from earlier sessions of this project")
    assert '<external-memory source="phi" namespace="code:github.com:acme:api">' in text
    assert "0.25.0" not in text and "CDN" not in text
    # The prompt itself, stored by now, is of this session: not told back.
    assert question not in text
    # Below the threshold: a prompt of the same session, lifted by the strong match beside
    # it to about 0.3 but about something else.
    assert "--verbose" not in text


def test_another_projects_memory_never_appears(web: Path, remembered: HookOptions) -> None:
    question = "why did we pin httpx, and to which version?"
    code, out, err = hook(prompt(SECOND, web, question), replace(remembered, wait=True))
    assert (code, err) == (0, "")
    text = context(out, "UserPromptSubmit")
    assert LOOKALIKE in text
    assert "0.27.2" not in text and "payments" not in text.lower()


def test_nothing_is_printed_for_an_unrelated_prompt(api: Path, remembered: HookOptions) -> None:
    unrelated = "write a haiku about autumn leaves for the team newsletter"
    assert hook(prompt(SECOND, api, unrelated), replace(remembered, wait=True)) == (0, "", "")


def test_the_newest_decision_comes_first_and_a_reversed_one_is_not_told(
    api: Path, remembered: HookOptions
) -> None:
    unpin = "Unpin httpx and upgrade to 0.28.1: PaymentsClient now passes mounts, not proxies"
    older = "For retries we settled on exponential backoff with five attempts"
    newer = "Change of plan for retries: a single attempt, the queue retries for us"
    later = [
        prompt(THIRD, api, "PaymentsClient moved to mounts; can we drop the httpx pin now?"),
        *bash(THIRD, api, "t5", "uv add 'httpx==0.28.1'", unpin, " + httpx==0.28.1"),
        prompt(THIRD, api, older),
        prompt(THIRD, api, "Now add a changelog entry for the release."),
        prompt("ffff6666-s6", api, newer),
    ]
    assert replay(later, remembered)[0] == 0
    ask = replace(remembered, wait=True)
    _, out, _ = hook(
        prompt("eeee5555-s5", api, "which httpx version should the payments client use?"), ask
    )
    text = context(out, "UserPromptSubmit")
    # The pin was reversed by a later install of another version: superseded, not told.
    assert unpin in text and PIN not in text
    _, out, _ = hook(prompt("eeee5555-s5", api, "how many attempts do retries make?"), ask)
    text = context(out, "UserPromptSubmit")
    assert text.index(newer) < text.index(older)
    # Every line in the order the sessions happened, newest first.
    order = ["ffff6666", "cccc3333", "aaaa1111"]
    sessions = [re.findall(r"session (\w+)\]", line)[0] for line in memories(text)]
    assert len(set(sessions)) >= 2
    assert sessions == sorted(sessions, key=order.index)
    assert "session ffff6666] user: Change of plan" in text


def test_the_memories_keep_to_the_budget(api: Path, remembered: HookOptions) -> None:
    question = "payments requests hang after the httpx upgrade: what did we decide?"
    roomy = replace(remembered, wait=True)
    _, out, _ = hook(prompt(SECOND, api, question), roomy)
    told = memories(context(out, "UserPromptSubmit"))
    assert len(told) >= 3
    _, out, _ = hook(prompt(SECOND, api, question), replace(roomy, budget_tokens=150))
    small = context(out, "UserPromptSubmit")
    assert len(small) / 4 <= 150
    assert 1 <= len(memories(small)) < len(told)
    assert set(memories(small)) < set(told)


def memories(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- [")]


def test_a_session_starts_with_the_projects_latest_task(
    api: Path, web: Path, remembered: HookOptions
) -> None:
    start = {"hook_event_name": "SessionStart", "session_id": SECOND, "cwd": str(api)}
    code, out, err = hook(start, replace(remembered, wait=True))
    assert (code, err) == (0, "")
    text = context(out, "SessionStart")
    assert text.startswith("Project memory: code:github.com:acme:api.")
    assert "The latest task here (session aaaa1111, " in text.splitlines()[0]
    assert "rename the CLI flag --verbose to --debug everywhere." in text.splitlines()[0]
    assert PIN in text
    assert "CDN" not in text
    # A project nobody worked on yet: nothing to say.
    fresh = repository(api.parent.parent / "fresh", "git@github.com:acme/fresh.git")
    start = {**start, "cwd": str(fresh)}
    assert hook(start, replace(remembered, wait=True)) == (0, "", "")


WEAK_AND_STRONG = [
    "payments requests hang again after the library upgrade - what did we do last time?",
    "what does the logging configuration look like",
    "the tests time out on CI",
    "upgrade all dependencies to their latest versions",
    "make the CLI output quieter",
    "is verbose output on by default",
    "write a haiku about autumn leaves",
]


@pytest.mark.anyio
async def test_what_is_told_is_what_scores_the_threshold(memory: Memory) -> None:
    """The threshold means what recall's scores mean: every row of another session scoring
    `MIN_SCORE` or more (a row borrowing only along `causal` edges, `SMOOTH_TYPES`) is told
    (the budget is roomy here), newest first, and no row scoring less, though weak hits (0.2
    and more) exist for these prompts; and only when one of them shares a word with the
    prompt or scores `STRONG_SCORE`."""
    first = [
        prompt(FIRST, Path("/src/api"), "The HTTP client times out against the payments API."),
        *bash(FIRST, Path("/src/api"), "t1", "uv add 'httpx==0.27.2'", PIN, "+ httpx==0.27.2"),
        prompt(FIRST, Path("/src/api"), "Also rename the CLI flag --verbose to --debug."),
    ]
    for n, event in enumerate(first):
        await apply_event(
            memory, parse_event(json.dumps(event)), namespace="code:t", event_id=f"e{n}"
        )
    recipe = replace(memory.recipe, smooth_types=SMOOTH_TYPES)
    weak = several = 0
    for question in WEAK_AND_STRONG:
        found = await memory.search(question, namespace="code:t", limit=CANDIDATES, recipe=recipe)
        text = await prompt_context(
            memory, question, namespace="code:t", session=SECOND, budget_tokens=5000
        )
        told = [line.split("] ", 1)[1] for line in memories(text or "")]
        passed = [h for h in found if h.score >= MIN_SCORE]
        if not any(h.matched_by in ("text", "both") or h.score >= STRONG_SCORE for h in passed):
            passed = []
        rows = sorted((h.row for h in passed), key=lambda r: (r.created_at, r.row_id), reverse=True)
        assert told == [" ".join(r.content.split()) for r in rows], question
        several += len(told) > 1
        weak += sum(0.2 <= h.score < MIN_SCORE for h in found)
    assert weak >= 2 and several >= 1
    # With time as the only link, a row next to a match borrows from it: "the logging
    # configuration" scored the unrelated prompt beside the match 0.4 and had it told.
    question = "what does the logging configuration look like"
    beside = await memory.search(question, namespace="code:t", limit=CANDIDATES)
    assert any(h.score >= MIN_SCORE for h in beside)
    assert (
        await prompt_context(
            memory, question, namespace="code:t", session=SECOND, budget_tokens=5000
        )
        is None
    )
