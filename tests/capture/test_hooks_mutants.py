"""What each hook event stores, exactly, and what it is linked to (in process, real store).

`apply_event` is what the drainer calls for every queued event: these tests read back the
rows it wrote (their text, kind, metadata) and the `causal` edges between them, so a wrong
row text, a lost link or a failed tool recorded as a success shows.
"""

from __future__ import annotations

import json
import locale
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phi.capture.events import HookName
from phi.capture.hooks import MAX_KEPT_CHARS, HookOutcome, parse_event
from phi.errors import InvalidInput
from phi.memory import Memory, Row
from tests.capture._hook_events import NS, send

pytestmark = pytest.mark.anyio


async def texts(memory: Memory) -> list[str]:
    return [r.content async for r in memory.export(namespace=NS)]


async def causes(memory: Memory, row: Row) -> list[str]:
    linked = await memory.neighbors(row.row_id, types=["causal"])
    return [n.edge.src for n in linked if n.edge.dst == row.row_id]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            '{"hook_event_name": "Stop", "session_id": " \\u200b"}',
            "hook event refused: session_id: Value error, blank session id",
        ),
        ("[1]", "hook event refused: payload: Input should be an object"),
        (
            '{"hook_event_name": "Stop", "session_id": "s", "tool_input": "x"}',
            "hook event refused: tool_input: Input should be an object",
        ),
        (
            '{"hook_event_name": "Stop", "session_id": 1}',
            "hook event refused: session_id: Input should be a valid string",
        ),
    ],
)
def test_an_event_the_store_cannot_take_is_refused_in_one_line(payload: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_event(payload)
    assert str(caught.value) == message


def test_fields_a_host_adds_are_kept() -> None:
    event = parse_event('{"hook_event_name": "Stop", "session_id": "s", "new_field": 1}')
    assert event.model_extra == {"new_field": 1}


async def test_a_prompt_is_a_user_turn(memory: Memory) -> None:
    done = await send(memory, "UserPromptSubmit", prompt="rename the flag")
    (row,) = done.rows
    assert done == HookOutcome(event="UserPromptSubmit", rows=(row,))
    assert row.content == "user: rename the flag"
    assert row.kind == "interaction"
    assert row.thread == "s1"
    assert row.meta["capture"] == "turn"
    assert row.meta["turns"] == [{"speaker": "user", "text": "rename the flag", "by_phi": False}]


async def test_events_that_carry_nothing_store_nothing(memory: Memory) -> None:
    nothing: list[tuple[HookName, dict[str, Any]]] = [
        ("UserPromptSubmit", {"prompt": " \n "}),
        ("UserPromptSubmit", {}),
        ("PreToolUse", {"tool_input": {"command": "ls"}}),
        ("PostToolUse", {"tool_response": "out"}),
        ("Notification", {"message": "waiting"}),
        ("SessionStart", {"source": "startup"}),
        ("Stop", {}),
        ("Stop", {"transcript_path": "/nonexistent/transcript.jsonl"}),
    ]
    for name, fields in nothing:
        assert await send(memory, name, **fields) == HookOutcome(event=name)
    await send(memory, "UserPromptSubmit", prompt="only this")
    assert await texts(memory) == ["user: only this"]


async def test_a_long_prompt_is_kept_whole_in_chunks(memory: Memory) -> None:
    """A whole build log pasted as a prompt is kept, cut only into chunks."""
    assert MAX_KEPT_CHARS == 200_000
    over = "a" * 2000 + "b" + "c" * 2000
    done = await send(memory, "UserPromptSubmit", prompt=over, session="s2")
    assert [r.meta["turns"][0]["text"] for r in done.rows] == [
        "a" * 1200,
        "a" * 800 + "b" + "c" * 399,
        "c" * 1200,
        "c" * 401,
    ]


@pytest.mark.parametrize(
    ("tool", "tool_input", "text"),
    [
        (
            "Bash",
            {"command": "uv run pytest -q", "description": "Run the tests"},
            "decision: run Bash (Run the tests): uv run pytest -q",
        ),
        ("Bash", {"command": "ls", "description": 5}, "decision: run Bash: ls"),
        (
            "Edit",
            {"file_path": "/src/a.py", "new_string": "x = 1"},
            "decision: Edit /src/a.py: x = 1",
        ),
        (
            "Write",
            {"file_path": "/src/b.py", "content": "y = 2"},
            "decision: Write /src/b.py: y = 2",
        ),
        ("Edit", {"file_path": "/src/c.py", "new_string": "  \n"}, "decision: Edit /src/c.py"),
        ("Edit", {"file_path": "/src/d.py", "new_string": 7}, "decision: Edit /src/d.py"),
        (
            "Edit",
            {"file_path": "/src/e.py", "new_string": "h" * 150 + "m" + "t" * 150},
            "decision: Edit /src/e.py: "
            + "h" * 150
            + "\n[... 1 characters left out ...]\n"
            + "t" * 150,
        ),
        (
            "Edit",
            {"file_path": "/src/f.py", "new_string": "h" * 150 + "t" * 150},
            "decision: Edit /src/f.py: " + "h" * 150 + "t" * 150,
        ),
        (
            "WebFetch",
            {"url": "https://example.org", "prompt": "résumé", "command": 3},
            'decision: call WebFetch with {"command": 3, "prompt": "résumé",'
            ' "url": "https://example.org"}',
        ),
        ("Task", None, "decision: call Task with {}"),
    ],
)
async def test_a_tool_call_is_a_decision_in_words(
    memory: Memory, tool: str, tool_input: dict[str, Any] | None, text: str
) -> None:
    done = await send(memory, "PreToolUse", tool_name=tool, tool_input=tool_input)
    (row,) = done.rows
    assert done.event == "PreToolUse"
    assert row.content == text
    assert (row.kind, row.tags) == ("note", ("decision",))
    assert row.meta["tool"] == tool
    assert "tool_use_id" not in row.meta
    assert done.caused_by is None  # no prompt in the session yet


async def test_a_decision_is_linked_to_its_sessions_latest_prompt(memory: Memory) -> None:
    first = (await send(memory, "UserPromptSubmit", prompt="run the tests")).rows[0]
    later = (await send(memory, "UserPromptSubmit", prompt="then lint")).rows[0]
    await send(memory, "UserPromptSubmit", prompt="another session", session="s2")
    await send(memory, "PreToolUse", tool_name="Read", tool_input={"file_path": "/x"})
    done = await send(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "ruff"}, tool_use_id="t1"
    )
    (decision,) = done.rows
    assert done.caused_by == later.row_id != first.row_id
    assert await causes(memory, decision) == [later.row_id]
    assert decision.meta["tool_use_id"] == "t1"


async def test_a_result_is_linked_to_the_decision_with_its_tool_use_id(memory: Memory) -> None:
    """Parallel tool calls interleave: a result goes to its own call, not the latest one."""
    one = await send(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "a"}, tool_use_id="t1"
    )
    two = await send(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "b"}, tool_use_id="t2"
    )
    done = await send(
        memory, "PostToolUse", tool_name="Bash", tool_use_id="t1", tool_response={"stdout": "A"}
    )
    assert done.caused_by == one.rows[0].row_id
    assert await causes(memory, done.rows[0]) == [one.rows[0].row_id]
    assert done.rows[0].meta["tool_use_id"] == "t1"
    # No tool_use_id, or one no decision has: the session's latest decision.
    for use in (None, "t9"):
        done = await send(
            memory, "PostToolUse", tool_name="Bash", tool_use_id=use, tool_response="B"
        )
        assert done.caused_by == two.rows[0].row_id
    other = await send(memory, "PostToolUse", tool_name="Bash", session="s2", tool_response="C")
    assert other.caused_by is None
    assert await causes(memory, other.rows[0]) == []


@pytest.mark.parametrize(
    ("name", "fields", "text"),
    [
        (
            "PostToolUse",
            {"tool_response": {"stdout": "3 passed", "exit_code": 0}},
            "tool result of Bash: 3 passed",
        ),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "ok", "stderr": "warn", "output": "o"}},
            "tool result of Bash: ok\nwarn\no",
        ),
        (
            "PostToolUse",
            {"tool_response": {"content": "c", "stdout": ""}},
            "tool result of Bash: c",
        ),
        (
            "PostToolUse",
            {"tool_response": {"b": "é", "a": 1}},
            'tool result of Bash: {"a": 1, "b": "é"}',
        ),
        ("PostToolUse", {"tool_response": ["x", 2]}, 'tool result of Bash: ["x", 2]'),
        ("PostToolUse", {"tool_response": "  \n"}, "tool result of Bash: (no output)"),
        ("PostToolUse", {}, "tool result of Bash: (no output)"),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "1 failed", "exit_code": 1}},
            "error in Bash: 1 failed",
        ),
        ("PostToolUse", {"tool_response": {"stdout": "x", "returnCode": 2}}, "error in Bash: x"),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "x", "exit_code": "1"}},
            "tool result of Bash: x",
        ),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "x", "returnCode": 0, "exit_code": None}},
            "tool result of Bash: x",
        ),
        ("PostToolUse", {"tool_response": {"stdout": "x", "is_error": True}}, "error in Bash: x"),
        ("PostToolUse", {"tool_response": {"stdout": "x", "error": "denied"}}, "error in Bash: x"),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "x", "interrupted": True}},
            "error in Bash: x",
        ),
        (
            "PostToolUse",
            {"tool_response": {"stdout": "x", "is_error": False, "interrupted": False}},
            "tool result of Bash: x",
        ),
        ("PostToolUse", {"tool_response": "out", "error": "killed"}, "error in Bash: killed"),
        ("PostToolUseFailure", {"tool_response": "it broke"}, "error in Bash: it broke"),
    ],
)
async def test_a_tool_result_or_error_in_words(
    memory: Memory, name: str, fields: dict[str, Any], text: str
) -> None:
    done = await send(memory, name, tool_name="Bash", tool_input={"command": "x"}, **fields)
    (row,) = done.rows
    assert done.event == name
    assert row.content == text
    assert row.tags == (text.split(" ")[0] if text.startswith("error") else "tool_result",)
    assert row.meta["tool"] == "Bash"
    assert "path" not in row.meta
    assert "tool_use_id" not in row.meta


async def test_a_file_edit_is_a_file_change_unless_it_failed(memory: Memory) -> None:
    edit = {"file_path": "/src/a.py", "old_string": "a", "new_string": "é"}
    done = await send(memory, "PostToolUse", tool_name="Edit", tool_input=edit, tool_response="ok")
    (row,) = done.rows
    assert row.content == 'file change /src/a.py: {"new_string": "é", "old_string": "a"}'
    assert (row.tags, row.meta["path"]) == (("file_change",), "/src/a.py")
    done = await send(
        memory, "PostToolUseFailure", tool_name="Write", tool_input=edit, error="read-only"
    )
    assert done.rows[0].content == "error in Write: read-only"
    assert done.rows[0].meta["path"] == "/src/a.py"
    # A file a tool read: one row of what the session looked at, not its content.
    done = await send(
        memory, "PostToolUse", tool_name="Read", tool_input={"file_path": "/r"}, tool_response="r"
    )
    assert done.rows[0].content == "files looked at in this session: /r"
    done = await send(
        memory, "PostToolUse", tool_name="Edit", tool_input={"file_path": 3}, tool_response="?"
    )
    assert done.rows[0].content == "tool result of Edit: ?"
    assert "path" not in done.rows[0].meta
    done = await send(memory, "PostToolUse", tool_name="Bash", tool_response="no input")
    assert done.rows[0].content == "tool result of Bash: no input"


def transcript(tmp_path: Path, *lines: object) -> str:
    path = tmp_path / "transcript.jsonl"
    path.write_bytes(
        b"\n".join(line if isinstance(line, bytes) else json.dumps(line).encode() for line in lines)
    )
    return str(path)


def said(role: str, content: object) -> dict[str, object]:
    return {"message": {"role": role, "content": content}}


async def test_stop_stores_every_assistant_text_of_the_transcript(
    memory: Memory, tmp_path: Path
) -> None:
    path = transcript(
        tmp_path,
        said("assistant", "an earlier answer"),
        said("assistant", [{"type": "text", "text": "an answer in parts"}]),
        b"{not json",
        said("user", "thanks"),
        said("assistant", "the last answer"),
        said("user", "and?"),
        b'{"message": {"role": "assistant", "content": "cut',  # a host mid-write
        said("assistant", [{"type": "tool_use", "name": "Bash"}]),
        said("assistant", "   "),
        said("assistant", None),
        {"message": "not an object"},
        ["not", "an", "entry"],
        b'{"message": {"role": "assistant", "content": "cut \xff',  # mid-write
    )
    done = await send(memory, "Stop", transcript_path=path)
    assert done == HookOutcome(event="Stop", rows=done.rows)
    assert [r.content for r in done.rows] == [
        "assistant: an earlier answer",
        "assistant: an answer in parts",
        "assistant: the last answer",
    ]
    assert done.rows[-1].meta["turns"] == [
        {"speaker": "assistant", "text": "the last answer", "by_phi": True}
    ]
    parts = transcript(
        tmp_path,
        said(
            "assistant",
            [
                {"type": "text", "text": "Fixed: "},
                {"type": "text", "text": "  "},
                {"type": "tool_use", "text": "not said"},
                {"type": "text", "text": "all pass"},
                {"type": "text", "text": 5},
                "bare",
            ],
        ),
        said("assistant", "   "),
    )
    done = await send(memory, "SubagentStop", transcript_path=parts)
    assert [r.content for r in done.rows] == ["assistant: Fixed: \nall pass"]


async def test_a_transcript_under_home_is_found(
    memory: Memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    transcript(tmp_path, said("assistant", "from home"))
    done = await send(memory, "Stop", transcript_path="~/transcript.jsonl")
    assert [r.content for r in done.rows] == ["assistant: from home"]
    # A folder, or a transcript with no assistant text: nothing to store.
    assert (await send(memory, "Stop", transcript_path=str(tmp_path))).rows == ()
    empty = transcript(tmp_path, said("user", "hello"))
    assert (await send(memory, "Stop", transcript_path=empty)).rows == ()


async def test_each_row_names_the_queued_event(memory: Memory, tmp_path: Path) -> None:
    """The spool's id for an event goes into its rows, so storing it twice makes one row."""
    answer = transcript(tmp_path, said("assistant", "done"))
    events: list[tuple[str, dict[str, Any]]] = [
        ("UserPromptSubmit", {"prompt": "go"}),
        ("PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "make"}}),
        ("PostToolUse", {"tool_name": "Bash", "tool_response": "built"}),
        ("Stop", {"transcript_path": answer}),
    ]
    for name, fields in events:
        once = await send(memory, name, event_id=f"id-{name}", **fields)
        twice = await send(memory, name, event_id=f"id-{name}", **fields)
        if name == "Stop":  # a transcript entry's rows are named by the entry
            assert [r.meta["event"][:5] for r in once.rows] == ["said-"]
            assert twice.rows == ()  # kept already
            continue
        assert [r.meta["event"] for r in once.rows] == [f"id-{name}"]
        assert twice.rows == once.rows
    assert len(await texts(memory)) == 4


async def test_one_session_id_in_two_namespaces_stays_apart(memory: Memory) -> None:
    """Causes are looked for in the event's own namespace only (a link across two is refused)."""
    mine = await send(memory, "UserPromptSubmit", prompt="mine")
    decided = await send(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "a"}, tool_use_id="t1"
    )
    await send(memory, "UserPromptSubmit", prompt="theirs", namespace="other")
    theirs = await send(
        memory,
        "PreToolUse",
        namespace="other",
        tool_name="Bash",
        tool_input={"command": "b"},
        tool_use_id="t1",
    )
    assert decided.caused_by == mine.rows[0].row_id
    again = await send(
        memory, "PreToolUse", tool_name="Bash", tool_input={"command": "c"}, tool_use_id="t2"
    )
    assert again.caused_by == mine.rows[0].row_id
    for use in ("t1", "t9"):
        done = await send(
            memory, "PostToolUse", tool_name="Bash", tool_use_id=use, tool_response=f"r {use}"
        )
        expected = decided if use == "t1" else again
        assert done.caused_by == expected.rows[0].row_id != theirs.rows[0].row_id


@pytest.fixture
def c_locale() -> Iterator[None]:
    """A process whose locale is plain C (a drainer started from cron or a bare service)."""
    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        yield
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


@pytest.mark.usefixtures("c_locale")
async def test_a_transcript_is_read_as_utf8_whatever_the_locale(
    memory: Memory, tmp_path: Path
) -> None:
    # Claude Code writes its transcript as UTF-8, not ASCII escapes.
    line = json.dumps(said("assistant", "Café déjà vu ✓"), ensure_ascii=False).encode()
    path = transcript(tmp_path, line)
    done = await send(memory, "Stop", transcript_path=path)
    assert [r.content for r in done.rows] == ["assistant: Café déjà vu ✓"]
