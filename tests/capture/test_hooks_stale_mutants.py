"""Every line of `phi.capture.hooks` observed exactly, in process (real SQLite, real MiniLM).

The mutation run of `hooks.py` credits only tests that reach a function in their own
process: these read back what each path wrote (row texts, kinds, metadata, statuses) so a
flipped condition, a changed constant or a dropped argument shows. The heart is supersede:
which rows a reversed decision or change takes with it (`meta.stale_with`), and which it
must leave alone (an error, a file change, a call that sets something else, the reversing
session's own words, a result of another session or of a call not reversed).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from phi.capture import hooks
from phi.capture.hooks import HookEvent, HookOutcome, parse_event
from phi.capture.supersede import Claims, claims_of
from phi.memory import Memory, NewRow, Row
from tests.capture._hook_events import NS, send

pytestmark = pytest.mark.anyio

PIN = {"command": "uv add 'httpx==0.27.2'"}
BUMP = {"command": "uv add 'httpx==0.28.1'"}
PIN_WHY = "dep:py:httpx set to '==0.28.1' (was '==0.27.2')"
CLIENT = "/repo/src/client.py"


def event(name: str = "PreToolUse", **fields: Any) -> HookEvent:
    return parse_event(json.dumps({"hook_event_name": name, "session_id": "s1", **fields}))


async def one(memory: Memory, name: str, **fields: Any) -> Row:
    """The one row an event stores."""
    (row,) = (await send(memory, name, **fields)).rows
    return row


async def status(memory: Memory, row: Row) -> str:
    return (await memory.get(row.row_id)).status


async def push_back(memory: Memory) -> None:
    """Eleven newer rows (stored unembedded: quick), so what came before is past
    `recent`'s default limit of 10 and a lookback that lost its own limit shows."""
    rows = [NewRow(content=f"unrelated note {i}", namespace=NS) for i in range(11)]
    assert len(await memory.remember_many(rows, defer_embedding=True)) == 11


def transcript(path: Path, *entries: tuple[str, str] | tuple[str, str, str]) -> str:
    """A transcript of assistant entries, each `(uuid, text[, timestamp])`."""
    lines = []
    for uuid, text, *at in entries:
        line: dict[str, object] = {
            "uuid": uuid,
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }
        if at:
            line["timestamp"] = at[0]
        lines.append(json.dumps(line) + "\n")
    path.write_text("".join(lines))
    return str(path)


def said(rows: tuple[Row, ...]) -> list[str]:
    return [r.content for r in rows]


# -- _kept, _digest, _meta, _Reversed: pure ----------------------------------------------------


def test_kept_cuts_only_past_its_limit_keeping_head_and_tail() -> None:
    assert hooks._kept("x" * 50, 50) == "x" * 50  # at the limit: whole
    assert hooks._kept("a\x00b\x00", 4) == "a\ufffdb\ufffd"  # a NUL is not kept, its place is
    text = "h" * 60 + "m" * 11 + "t" * 60  # 131 characters, 31 over
    marker = "\n[... 31 characters left out ...]\n"
    assert len(marker) == 34
    assert hooks._kept(text, 100) == "h" * 33 + marker + "t" * 33
    # One over: cut, with an odd room left for the two halves.
    one_over = "\n[... 1 characters left out ...]\n"  # 33: (50 - 33) // 2 = 8 each side
    assert hooks._kept("ab" * 25 + "c", 50) == "abababab" + one_over + "babababc"
    # The default limit is MAX_KEPT_CHARS.
    assert hooks._kept("y" * 200_000) == "y" * 200_000
    cut = hooks._kept("y" * 199_999 + "\x00z")
    assert len(cut) < 200_000
    assert cut.startswith("y" * 99_000)
    assert cut.endswith("\ufffdz")
    assert "\n[... 1 characters left out ...]\n" in cut


def test_digest_is_24_hex_of_sha256_even_for_a_lone_surrogate() -> None:
    assert hooks._digest("Done.") == "ed251864987c367e9641fbdc"
    assert hooks._digest("a\ud800") == "25819b9b43d499092eb2be7b"


def test_meta_holds_only_what_there_is() -> None:
    claims = claims_of("Bash", PIN)
    both = hooks._Reversed(rows={"r1": "why"}, stale_with={"r2": "restates r1"})
    assert hooks._meta(event(tool_use_id="t1"), claims, both) == {
        "tool_use_id": "t1",
        "claims": claims.as_meta(),
        "reverses": {"r1": "why"},
        "stale_with": {"r2": "restates r1"},
    }
    assert both.supersedes() == ("r1", "r2")
    assert hooks._meta(event(tool_use_id=""), Claims(), None) == {}
    # Terms alone are no claim: nothing a later call could reverse.
    assert hooks._meta(event(), Claims(terms=frozenset({"wabc"})), None) == {}
    none = hooks._Reversed(rows={}, stale_with={})
    assert hooks._meta(event(), claims, none) == {"claims": claims.as_meta()}
    stale = hooks._Reversed(rows={}, stale_with={"r2": "x"})
    assert hooks._meta(event(), Claims(), stale) == {"stale_with": {"r2": "x"}}
    rows = hooks._Reversed(rows={"r1": "w"}, stale_with={})
    assert hooks._meta(event(), Claims(), rows) == {"reverses": {"r1": "w"}}


@pytest.mark.parametrize(
    ("tool", "args", "text"),
    [
        ("Bash", {"command": "ls", "description": "List"}, "run Bash (List): ls"),
        ("Bash", {"command": "ls"}, "run Bash: ls"),
        ("Write", {"command": 5, "file_path": "/a", "content": "c"}, "Write /a: c"),
        (
            "NotebookEdit",
            {"notebook_path": "/n.ipynb", "new_source": "p(1)"},
            "NotebookEdit /n.ipynb: p(1)",
        ),
        (
            "NotebookEdit",
            {"file_path": "/a", "notebook_path": "/n", "new_source": "s"},
            "NotebookEdit /a: s",
        ),
        (
            "Edit",
            {"file_path": "/a", "new_string": "n", "content": "c", "new_source": "s"},
            "Edit /a: n",
        ),
        ("Write", {"file_path": "/a", "content": "c", "new_source": "s"}, "Write /a: c"),
        ("Edit", {"file_path": "/a", "new_string": None, "content": "c"}, "Edit /a"),
        (
            "MultiEdit",
            {
                "file_path": "/a",
                "new_string": "not this",
                "edits": [
                    {"new_string": "one"},
                    "junk",
                    {"new_string": 3},
                    {},
                    {"new_string": "two"},
                ],
            },
            "MultiEdit /a: one\ntwo",
        ),
        (
            "MultiEdit",
            {"file_path": "/a", "new_string": "n", "edits": [{"new_string": 3}]},
            "MultiEdit /a",
        ),
        ("Edit", {"file_path": "/a", "new_string": "n", "edits": "x"}, "Edit /a: n"),
        ("Edit", {"file_path": "/a", "new_string": " \n"}, "Edit /a"),
        (
            "Edit",
            {"file_path": 3, "z": "é", "a": 1},
            'call Edit with {"a": 1, "file_path": 3, "z": "é"}',
        ),
        (None, None, "call tool with {}"),
    ],
)
def test_decision_text_per_tool(tool: str | None, args: dict[str, Any] | None, text: str) -> None:
    assert hooks._decision_text(event(tool_name=tool, tool_input=args)) == text


# -- apply_event's routes ----------------------------------------------------------------------


async def test_each_event_goes_its_own_way(memory: Memory) -> None:
    prompt = await send(memory, "UserPromptSubmit", prompt="go on", event_id="e1")
    assert prompt.event == "UserPromptSubmit"
    assert [(r.content, r.meta["event"]) for r in prompt.rows] == [("user: go on", "e1")]
    assert (
        await send(memory, "PreToolUse", tool_name="Read", tool_input={"file_path": "/r"})
    ).rows == ()
    assert (await send(memory, "PreToolUse", tool_name="", tool_input={"command": "ls"})).rows == ()
    looked = await send(
        memory, "PostToolUse", tool_name="Read", tool_input={"file_path": "/r"}, event_id="e2"
    )
    assert looked.event == "PostToolUse"
    assert [(r.content, r.thread, r.meta["event"]) for r in looked.rows] == [
        ("files looked at in this session: /r", "s1", "e2")
    ]
    searched = await send(
        memory, "PostToolUse", tool_name="Grep", tool_input={"pattern": "TODO", "path": "/src"}
    )
    assert said(searched.rows) == ['files looked at in this session: /r, grep "TODO" in /src']
    # A look that failed is an error like any other, not something looked at.
    failed = await send(
        memory, "PostToolUseFailure", tool_name="Read", tool_input={"file_path": "/x"}, error="no"
    )
    assert failed.event == "PostToolUseFailure"
    assert said(failed.rows) == ["error in Read: no"]
    refused = await send(
        memory, "PostToolUse", tool_name="Grep", tool_response={"is_error": True, "content": "bad"}
    )
    assert said(refused.rows) == ["error in Grep: bad"]
    assert (await send(memory, "PostToolUse", tool_name="", tool_response="x")).rows == ()
    for fields in ({"source": "startup"}, {"tool_name": "Bash", "tool_response": "x"}):
        assert await send(memory, "SessionStart", **fields) == HookOutcome(event="SessionStart")


async def test_a_decision_is_caused_by_the_users_prompt_not_the_assistants_words(
    memory: Memory, tmp_path: Path
) -> None:
    prompt = await one(memory, "UserPromptSubmit", prompt="pin httpx")
    await send(memory, "UserPromptSubmit", session="s2", prompt="elsewhere")
    await send(memory, "Stop", transcript_path=transcript(tmp_path / "t.jsonl", ("u1", "On it.")))
    done = await send(memory, "PreToolUse", tool_name="Bash", tool_input=PIN, tool_use_id="t1")
    (decision,) = done.rows
    assert done.event == "PreToolUse"
    assert done.caused_by == prompt.row_id
    assert decision.content == "decision: run Bash: uv add 'httpx==0.27.2'"
    assert decision.meta["capture"] == "decision"
    assert decision.meta["tool"] == "Bash"
    assert decision.meta["claims"] == claims_of("Bash", PIN).as_meta()
    assert decision.meta["event"] != "None"
    assert (decision.supersedes, "reverses" in decision.meta) == (None, False)


async def test_the_first_call_in_a_new_namespace_reverses_nothing(memory: Memory) -> None:
    decided = await one(memory, "PreToolUse", namespace="fresh", tool_name="Bash", tool_input=PIN)
    assert decided.meta["claims"] == claims_of("Bash", PIN).as_meta()
    assert {"reverses", "stale_with"} & set(decided.meta) == set()
    edit = {"file_path": CLIENT, "old_string": "", "new_string": "TIMEOUT_SECONDS = 30"}
    changed = await one(memory, "PostToolUse", namespace="newer", tool_name="Edit", tool_input=edit)
    assert changed.meta["claims"] == claims_of("Edit", edit).as_meta()
    assert {"reverses", "stale_with"} & set(changed.meta) == set()


# -- supersede: a reversed command and what goes stale with it -----------------------------------


async def test_a_reversed_command_takes_its_result_and_its_restatements_only(
    memory: Memory,
) -> None:
    # Oldest first. An earlier session's question that restates the pin, before the pin.
    asked = await one(
        memory, "UserPromptSubmit", session="s0", prompt="We are on httpx 0.27.2, I think?"
    )
    pin = await one(memory, "PreToolUse", tool_name="Bash", tool_input=PIN, tool_use_id="t1")
    result = await one(
        memory, "PostToolUse", tool_name="Bash", tool_use_id="t1", tool_response="Resolved 12"
    )
    # The same tool_use_id in another session is not a result of the pin.
    elsewhere = await one(
        memory,
        "PostToolUse",
        session="s9",
        tool_name="Bash",
        tool_use_id="t1",
        tool_response="Resolved 3",
    )
    tests = await one(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "pytest"}, tool_use_id="t2"
    )
    passed = await one(
        memory, "PostToolUse", tool_name="Bash", tool_use_id="t2", tool_response="3 passed"
    )
    commit = await one(
        memory,
        "PreToolUse",
        session="s2",
        tool_name="Bash",
        tool_input={"command": "git commit -am 'Pin httpx to 0.27.2'"},
        tool_use_id="t3",
    )
    # A call that sets something else says the old value but is a claim of its own.
    config = await one(
        memory,
        "PreToolUse",
        session="s2",
        tool_name="Bash",
        tool_input={"command": "git config user.name 'httpx 0.27.2 fan'"},
        tool_use_id="t4",
    )
    listed = await one(
        memory,
        "PostToolUse",
        session="s2",
        tool_name="Bash",
        tool_use_id="t5",
        tool_response={"stdout": "anyio 4.4.0\nhttpx 0.27.2"},
    )
    # An error is history (what motivated a change), a file change is a claim of its own.
    error = await one(
        memory,
        "PostToolUseFailure",
        session="s2",
        tool_name="Bash",
        tool_use_id="t6",
        error="httpx 0.27.2 failed to build",
    )
    readme = await one(
        memory,
        "PostToolUse",
        session="s2",
        tool_name="Edit",
        tool_input={"file_path": "/repo/README.md", "old_string": "", "new_string": "httpx 0.27.2"},
    )
    unrelated = await one(memory, "UserPromptSubmit", session="s2", prompt="do the tests pass?")
    # The reversing session's own words are about making the change: they stay.
    mine = await one(memory, "UserPromptSubmit", session="s3", prompt="Move httpx off 0.27.2")
    await push_back(memory)
    bump = await one(
        memory, "PreToolUse", session="s3", tool_name="Bash", tool_input=BUMP, tool_use_id="t7"
    )

    assert bump.supersedes == pin.row_id
    assert bump.meta["reverses"] == {pin.row_id: PIN_WHY}
    assert bump.meta["stale_with"] == {
        result.row_id: f"result of {pin.row_id}",
        commit.row_id: f"restates {pin.row_id}",
        listed.row_id: f"restates {pin.row_id}",
        asked.row_id: f"restates {pin.row_id}",
    }
    assert bump.meta["claims"] == claims_of("Bash", BUMP).as_meta()
    assert bump.meta["tool_use_id"] == "t7"
    for row in (pin, result, commit, listed, asked):
        assert await status(memory, row) == "superseded", row.content
    for row in (elsewhere, tests, passed, config, error, readme, unrelated, mine, bump):
        assert await status(memory, row) == "active", row.content
    edges = await memory.neighbors(bump.row_id, types=["supersedes"])
    taken = (pin, result, commit, listed, asked)
    assert {n.row.row_id for n in edges} == {r.row_id for r in taken}


async def test_a_reversed_call_without_a_tool_use_id_takes_no_result_by_chance(
    memory: Memory,
) -> None:
    pin = await one(memory, "PreToolUse", tool_name="Bash", tool_input=PIN)
    same = await one(memory, "PreToolUse", tool_name="Bash", tool_input=PIN)
    output = await one(memory, "PostToolUse", tool_name="Bash", tool_response="Resolved 12")
    failed = await one(memory, "PostToolUseFailure", tool_name="Bash", error="network down")
    plain = await one(memory, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    bump = await one(memory, "PreToolUse", session="s2", tool_name="Bash", tool_input=BUMP)
    assert bump.meta["reverses"] == {same.row_id: PIN_WHY, pin.row_id: PIN_WHY}
    assert bump.supersedes == same.row_id  # the newest reversed row first
    assert "stale_with" not in bump.meta
    for row in (output, failed, plain):
        assert await status(memory, row) == "active", row.content
    # The same value again reverses nothing, and says nothing stale.
    again = await one(memory, "PreToolUse", session="s3", tool_name="Bash", tool_input=BUMP)
    assert {"reverses", "stale_with"} & set(again.meta) == set()
    assert again.supersedes is None


async def test_a_reversed_call_and_its_error_go_with_the_newest_reversed_named(
    memory: Memory,
) -> None:
    pin = await one(memory, "PreToolUse", tool_name="Bash", tool_input=PIN, tool_use_id="t1")
    error = await one(
        memory, "PostToolUseFailure", tool_name="Bash", tool_use_id="t1", error="timed out"
    )
    again = await one(memory, "PreToolUse", tool_name="Bash", tool_input=PIN, tool_use_id="t2")
    summary = await one(memory, "UserPromptSubmit", session="s2", prompt="httpx 0.27.2 it is")
    bump = await one(memory, "PreToolUse", session="s3", tool_name="Bash", tool_input=BUMP)
    assert bump.meta["stale_with"] == {
        error.row_id: f"result of {pin.row_id}",
        summary.row_id: f"restates {again.row_id}",  # the first reversed row that it restates
    }
    for row in (pin, error, again, summary):
        assert await status(memory, row) == "superseded", row.content


async def test_a_decision_reverses_decisions_only_and_a_change_changes_only(
    memory: Memory,
) -> None:
    edit = {
        "file_path": "/repo/pyproject.toml",
        "old_string": "",
        "new_string": '  "httpx==0.27.2",',
    }
    change = await one(memory, "PostToolUse", tool_name="Edit", tool_input=edit, tool_use_id="t1")
    bump = await one(
        memory, "PreToolUse", session="s2", tool_name="Bash", tool_input=BUMP, tool_use_id="t2"
    )
    assert {"reverses", "stale_with"} & set(bump.meta) == set()
    assert await status(memory, change) == "active"
    # A file change reverses the earlier file change (the decision above is another kind).
    moved = {
        "file_path": "/repo/pyproject.toml",
        "old_string": "",
        "new_string": '  "httpx==0.29",',
    }
    changed = await one(
        memory, "PostToolUse", session="s3", tool_name="Edit", tool_input=moved, tool_use_id="t3"
    )
    assert changed.meta["reverses"] == {
        change.row_id: "dep:py:httpx set to '==0.29' (was '==0.27.2')"
    }
    assert await status(memory, bump) == "active"


# -- supersede through file changes (`_result`) --------------------------------------------------


def timeout(old: int, new: int) -> dict[str, str]:
    return {
        "file_path": CLIENT,
        "old_string": f"    return http.get(url, timeout={old})",
        "new_string": f"    return http.get(url, timeout={new})",
    }


async def test_a_reversed_file_change_takes_what_restates_it(
    memory: Memory, tmp_path: Path
) -> None:
    first = await one(
        memory, "PostToolUse", tool_name="Edit", tool_input=timeout(0, 30), tool_use_id="t1"
    )
    # Another output of the same call id: not a result of a decision, and no restatement.
    other = await one(
        memory, "PostToolUse", tool_name="Bash", tool_use_id="t1", tool_response="done"
    )
    words = transcript(tmp_path / "s2.jsonl", ("a1", "The client's http.get uses timeout 30."))
    (told,) = (await send(memory, "Stop", session="s2", transcript_path=words)).rows
    mine = await one(
        memory, "UserPromptSubmit", session="s3", prompt="timeout 30 is too short for http.get"
    )
    done = await send(
        memory,
        "PostToolUse",
        session="s3",
        tool_name="Edit",
        tool_input=timeout(30, 90),
        tool_use_id="t2",
        tool_response="ok",
    )
    (second,) = done.rows
    assert done.event == "PostToolUse"
    assert second.content == (
        "file change /repo/src/client.py: {"
        '"new_string": "    return http.get(url, timeout=90)", '
        '"old_string": "    return http.get(url, timeout=30)"}'
    )
    assert (second.meta["capture"], second.meta["path"], second.meta["tool"]) == (
        "file_change",
        CLIENT,
        "Edit",
    )
    assert second.meta["tool_use_id"] == "t2"
    assert second.meta["claims"] == claims_of("Edit", timeout(30, 90)).as_meta()
    assert second.meta["reverses"] == {
        first.row_id: "the same region of /repo/src/client.py edited again"
    }
    assert second.meta["stale_with"] == {told.row_id: f"restates {first.row_id}"}
    assert second.supersedes == first.row_id
    assert (await status(memory, first), await status(memory, told)) == ("superseded",) * 2
    for row in (other, mine, second):
        assert await status(memory, row) == "active", row.content


async def test_a_notebook_cell_change_is_a_file_change_of_the_notebook(memory: Memory) -> None:
    cell = {"notebook_path": "/nb/a.ipynb", "cell_id": "c1", "new_source": "print(2)"}
    first = await one(memory, "PostToolUse", tool_name="NotebookEdit", tool_input=cell)
    assert first.content == 'file change /nb/a.ipynb: {"cell_id": "c1", "new_source": "print(2)"}'
    assert (first.meta["capture"], first.meta["path"]) == ("file_change", "/nb/a.ipynb")
    assert first.meta["claims"] == claims_of("NotebookEdit", cell).as_meta()
    again = await one(
        memory, "PostToolUse", tool_name="NotebookEdit", tool_input={**cell, "new_source": "p(3)"}
    )
    assert list(again.meta["reverses"]) == [first.row_id]
    failed = await one(
        memory, "PostToolUseFailure", tool_name="NotebookEdit", tool_input=cell, error="locked"
    )
    assert failed.content == "error in NotebookEdit: locked"
    assert (failed.meta["capture"], failed.meta["path"]) == ("error", "/nb/a.ipynb")
    assert {"claims", "reverses"} & set(failed.meta) == set()
    assert await status(memory, again) == "active"


async def test_a_result_says_what_the_tool_said_or_that_it_said_nothing(memory: Memory) -> None:
    ok = await one(memory, "PostToolUse", tool_name="Bash", tool_response="  fine \n")
    assert (ok.content, ok.meta["capture"], ok.meta["tool"]) == (
        "tool result of Bash: fine",
        "tool_result",
        "Bash",
    )
    empty = await one(memory, "PostToolUse", tool_name="Bash", tool_response=" ")
    assert empty.content == "tool result of Bash: (no output)"
    failed = await one(memory, "PostToolUse", tool_name="Bash", tool_response="x", error="boom")
    assert (failed.content, failed.meta["capture"]) == ("error in Bash: boom", "error")
    nul = await one(memory, "PostToolUse", tool_name="Bash", tool_response="a\x00b")
    assert nul.content == "tool result of Bash: a\ufffdb"
    write = {"file_path": "/w.txt", "content": "words"}
    written = await one(memory, "PostToolUse", tool_name="Write", tool_input=write)
    assert written.content == "file change /w.txt: words"


# -- the transcript (`_transcript`, `_kept_entries`) ---------------------------------------------


async def test_each_transcript_entry_is_one_assistant_turn_named_by_session_and_entry(
    memory: Memory, tmp_path: Path
) -> None:
    path = transcript(
        tmp_path / "t.jsonl",
        ("u0", "first\x00word", "2025-03-04T05:06:07Z"),
        ("u1", "second"),
    )
    done = await send(memory, "Stop", transcript_path=path)
    assert done.event == "Stop"
    first, second = done.rows
    assert said(done.rows) == ["assistant: first\ufffdword", "assistant: second"]
    assert first.meta["said"] == "u0"
    assert first.meta["event"] == "said-e5deff77c0421dbf837e4a6f"  # sha256("s1\0u0")[:24]
    assert first.meta["capture"] == "turn"
    assert first.meta["turns"] == [
        {"speaker": "assistant", "text": "first\ufffdword", "by_phi": True}
    ]
    assert first.created_at == datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert (first.kind, first.thread) == ("interaction", "s1")
    assert second.meta["said"] == "u1"


async def test_a_subagent_is_read_from_its_own_transcript(memory: Memory, tmp_path: Path) -> None:
    main = transcript(tmp_path / "main.jsonl", ("m1", "from the main agent"))
    agent = transcript(tmp_path / "agent.jsonl", ("a1", "from the subagent"))
    done = await send(memory, "SubagentStop", transcript_path=main, agent_transcript_path=agent)
    assert done.event == "SubagentStop"
    assert said(done.rows) == ["assistant: from the subagent"]
    # Only a SubagentStop reads the subagent's; a path that is not text is no path.
    done = await send(
        memory, "Stop", session="s2", transcript_path=main, agent_transcript_path=agent
    )
    assert said(done.rows) == ["assistant: from the main agent"]
    done = await send(
        memory, "SubagentStop", session="s3", transcript_path=main, agent_transcript_path=5
    )
    assert said(done.rows) == ["assistant: from the main agent"]


async def test_the_last_message_stands_in_only_for_a_stop_without_a_transcript(
    memory: Memory, tmp_path: Path
) -> None:
    done = await send(memory, "Stop", last_assistant_message="Done.")
    (row,) = done.rows
    assert row.content == "assistant: Done."
    assert row.meta["said"] == "last-ed251864987c367e9641fbdc"  # sha256("Done.")[:24]
    path = transcript(tmp_path / "t.jsonl", ("u1", "from the transcript"))
    done = await send(
        memory, "Stop", session="s2", transcript_path=path, last_assistant_message="x"
    )
    assert said(done.rows) == ["assistant: from the transcript"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps({"message": {"role": "user", "content": "hi"}}) + "\n")
    done = await send(
        memory, "Stop", session="s3", transcript_path=str(empty), last_assistant_message="Bye."
    )
    assert said(done.rows) == ["assistant: Bye."]
    for name, last in (("Stop", " \n"), ("Stop", 5), ("SubagentStop", "y"), ("PreCompact", "y")):
        assert (await send(memory, name, session="s4", last_assistant_message=last)).rows == ()


async def test_only_entries_after_the_last_kept_one_are_kept(
    memory: Memory, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    first = (await send(memory, "Stop", transcript_path=transcript(path, ("u1", "one")))).rows
    assert said(first) == ["assistant: one"]
    await push_back(memory)
    later = transcript(path, ("u0", "zero"), ("u1", "one"), ("u2", "two"), ("u3", "three"))
    done = await send(memory, "PreCompact", transcript_path=later)
    assert said(done.rows) == ["assistant: two", "assistant: three"]
    assert (await send(memory, "SessionEnd", transcript_path=later)).rows == ()
    # Another session's entries of the same ids are not this session's.
    done = await send(memory, "Stop", session="s2", transcript_path=later)
    assert said(done.rows) == [f"assistant: {n}" for n in ("zero", "one", "two", "three")]
    assert [r.meta["said"] for r in done.rows] == ["u0", "u1", "u2", "u3"]


async def test_another_namespace_is_another_memory(memory: Memory, tmp_path: Path) -> None:
    """What one project pinned or kept is not reversed, or taken as kept, by another."""
    theirs = await one(memory, "PreToolUse", namespace="other", tool_name="Bash", tool_input=PIN)
    edited = await one(
        memory, "PostToolUse", namespace="other", tool_name="Edit", tool_input=timeout(0, 30)
    )
    path = transcript(tmp_path / "t.jsonl", ("u0", "kept over there"))
    assert len((await send(memory, "Stop", namespace="other", transcript_path=path)).rows) == 1
    await send(memory, "UserPromptSubmit", prompt="here")
    bump = await one(memory, "PreToolUse", session="s2", tool_name="Bash", tool_input=BUMP)
    assert {"reverses", "stale_with"} & set(bump.meta) == set()
    change = await one(memory, "PostToolUse", tool_name="Edit", tool_input=timeout(30, 90))
    assert {"reverses", "stale_with"} & set(change.meta) == set()
    assert (await status(memory, theirs), await status(memory, edited)) == ("active",) * 2
    done = await send(memory, "Stop", transcript_path=path)
    assert said(done.rows) == ["assistant: kept over there"]
